"""The web page's test rig: a private mosquitto on a free loopback port (restartable on the same port), two real
hearthd processes on the simulated board ("web", whose page is tested, and its peer "attic"), small HTTP helpers,
and Chromium driven by Selenium. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("HEARTH_WEB_OUT", REPO / "out" / "web"))


def exit_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str, interval: float = 0.05):
    """Polls `condition` until it returns something truthy; fails after `timeout` seconds saying `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - a condition that cannot be evaluated yet
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last})" if last else ""))


class Broker:
    """mosquitto on a fixed free port, so that a restart keeps the address the hubs know."""

    def __init__(self, directory: Path):
        self.port = free_port()
        self.dir = directory
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        conf = self.dir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n")
        binary = os.environ.get("HEARTH_MOSQUITTO") or shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.proc = subprocess.Popen([binary, "-c", str(conf)], stdout=open(self.dir / "mosquitto.log", "ab"),
                                     stderr=subprocess.STDOUT)
        wait_until(lambda: socket.create_connection(("127.0.0.1", self.port), timeout=1).close() or True, 10,
                   "mosquitto to accept")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def publish(self, topic: str, payload: str) -> None:
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.port), "-q", "1", "-t", topic, "-m", payload],
                       check=True, timeout=10)

    def retained(self, topic: str) -> bytes | None:
        r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-t", topic, "-C", "1", "-W", "3"],
                           capture_output=True, timeout=10)
        return r.stdout.strip() or None


HUB = """\
hub: {{id: {id}, board: sim.yaml, stateDirectory: state-{id}}}
mqtt: {{host: 127.0.0.1, port: {broker}, keepAlive: 5s}}
web: {{listen: 127.0.0.1, port: {web}}}
peers: [{{hub: {peer}}}]
devices:
{devices}
"""

WEB_DEVICES = """\
  - {id: porch, name: Porch light, room: outside, type: OnOffLight, binding: {kind: relay, pin: relay-1}}
  - id: lamp
    name: Kitchen lamp
    room: kitchen
    type: DimmableLight
    binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}
  - id: climate
    name: Bathroom climate
    room: bathroom
    type: HumiditySensor
    binding: {kind: humiditySensor, sensor: humidity-1, interval: 1s}
  - {id: hall-switch, name: Hall switch, room: hall, type: GenericSwitch, binding: {kind: wallSwitch, pin: wall-switch-1, mode: momentary, controls: porch}}
groups:
  - id: 1
    name: Downstairs
    members: [porch, lamp]
    scenes: [{id: 1, name: Evening, values: {onOff: {onOff: true}, levelControl: {currentLevel: 80}}}]
"""

ATTIC_DEVICES = """\
  - {id: attic-fan, name: Attic fan, room: attic, type: OnOffPlugInUnit}
"""


class Hub:
    def __init__(self, directory: Path, hub_id: str, peer: str, broker: Broker, devices: str):
        self.id = hub_id
        self.dir = directory
        self.web_port = free_port()
        self.config = directory / f"{hub_id}.yaml"
        self.config.write_text(HUB.format(id=hub_id, broker=broker.port, web=self.web_port, peer=peer, devices=devices))
        self.log = directory / f"{hub_id}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([os.environ["HEARTHD"], "run", "--config", str(self.config)],
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        wait_until(lambda: self.status("/")[0] == 200, 30, f"hearthd {self.id}'s page (log: {self.log})")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}/"

    def setup_code(self) -> str:
        def code():
            m = re.search(r"one-time setup code: (\S+)", self.log.read_text())
            return m.group(1) if m else None
        return wait_until(code, 10, "the setup code in the log")

    def request(self, method: str, path: str, body=None, cookie: str | None = None, headers=None):
        """(status, headers, parsed JSON or raw bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        h = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        if cookie:
            h["Cookie"] = cookie
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw
        return r.status, dict(r.getheaders()), parsed

    def status(self, path: str):
        return self.request("GET", path)

    def login(self, user: str, password: str) -> str:
        status, headers, body = self.request("POST", "/api/login", {"user": user, "password": password})
        assert status == 200, body
        return headers["Set-Cookie"].split(";")[0]


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 in front of the hub's page, so a test can cut every open connection (the browser's
    event stream among them) as a dropped Wi-Fi link would."""

    def __init__(self, target_port: int):
        import threading
        self.target = target_port
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
            sockets, self.open = self.open, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


class Rig:
    def __enter__(self) -> Rig:
        self.dir = Path(tempfile.mkdtemp(prefix="hearth-web-"))
        shutil.copy(REPO / "boards" / "sim.yaml", self.dir / "sim.yaml")
        self.broker = Broker(self.dir)
        self.broker.start()
        self.hub = Hub(self.dir, "web", "attic", self.broker, WEB_DEVICES)
        self.attic = Hub(self.dir, "attic", "web", self.broker, ATTIC_DEVICES)
        self.attic.start()
        self.hub.start()
        self.proxy = CuttingProxy(self.hub.web_port)
        return self

    def __exit__(self, *exc) -> None:
        self.hub.stop()
        self.attic.stop()
        self.broker.stop()
        if not exc[0]:
            shutil.rmtree(self.dir, ignore_errors=True)


class Browser:
    """Headless Chromium (Debian's) under chromedriver, with the CDP calls the suite needs."""

    def __init__(self, rig: Rig):
        self.rig = rig

    def __enter__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
            options.add_argument(a)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.implicitly_wait(0)
        OUT.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> None:
        self.driver.quit()

    def screenshot(self, name: str) -> Path:
        path = OUT / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def cdp(self, command: str, params: dict) -> dict:
        return self.driver.execute_cdp_cmd(command, params)


def page_weight(hub: Hub) -> tuple[int, int]:
    """(bytes, gzip -9 bytes) of the page's three files as the hub serves them."""
    raw = b""
    for path in ("/", "/app.css", "/app.js"):
        status, _, body = hub.request("GET", path)
        assert status == 200
        raw += body if isinstance(body, bytes) else json.dumps(body).encode()
    return len(raw), len(gzip.compress(raw, 9))
