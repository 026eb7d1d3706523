"""Fixtures of the Home Assistant suites: one private broker and one Home Assistant for the whole session."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harig  # noqa: E402

harig.exit_on_sigterm()


@pytest.fixture(scope="session")
def broker():
    with harig.Broker() as b:
        yield b


@pytest.fixture(scope="session")
def ha(broker):
    with harig.HomeAssistant(broker.port, name="suite") as home_assistant:
        home_assistant.start()
        took = home_assistant.wait_ready()
        home_assistant.wait_mqtt_connected()
        print(f"\nHome Assistant ready in {took:.1f} s at {home_assistant.url}; run: {home_assistant.run_dir}")
        yield home_assistant
