"""Fixtures of the web page's browser suite: a private mosquitto, a real hearthd on the simulated board with a peer
hub, and Debian's Chromium under WebDriver. Screenshots go to $HEARTH_WEB_OUT (scripts/test-web: out/web/)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import webrig  # noqa: E402

webrig.exit_on_sigterm()


@pytest.fixture(scope="session")
def rig():
    with webrig.Rig() as r:
        yield r


@pytest.fixture(scope="session")
def browser(rig):
    with webrig.Browser(rig) as b:
        yield b
