"""The page's Matter panel in a real browser, against a hub with `matter: {enabled: true}`: the admin sees the pairing
QR code and manual code (the ones the hub printed) and the fabric list; a viewer has no Matter panel and is refused its
routes; the real node's refusals (no window without a fabric, no such fabric, a bad index) reach the admin. The hub and its mosquitto run in a network namespace of their own, joined to this machine by a veth pair on a
private /30, so the Matter node's UDP port and mDNS announcements reach nothing but that pair (needs root)."""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import webrig
from webrig import wait_until

PASSWORD = "correct horse battery"
NS = f"hearth-mpanel-{os.getpid()}"
HOST_IF, NS_IF = f"hmp{os.getpid() % 100000}h", f"hmp{os.getpid() % 100000}n"
HOST_IP, NS_IP = "169.254.77.1", "169.254.77.2"
WEB_PORT, BROKER_PORT, MATTER_PORT = 8080, 1883, 5540


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, timeout=10)


class MatterHub:
    """hearthd with Matter on, in its namespace: the page on NS_IP, mDNS on the veth alone."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.config = directory / "web.yaml"
        self.config.write_text(f"""\
hub: {{id: web, board: sim.yaml, stateDirectory: state-web}}
mqtt: {{host: 127.0.0.1, port: {BROKER_PORT}, keepAlive: 5s}}
web: {{listen: {NS_IP}, port: {WEB_PORT}}}
matter: {{enabled: true, port: {MATTER_PORT}, interfaces: [{NS_IF}], discriminator: 3840, passcode: 20202021}}
devices:
  - {{id: porch, name: Porch light, room: outside, type: OnOffLight, binding: {{kind: relay, pin: relay-1}}}}
""")
        self.log = directory / "web.log"
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        conf = self.dir / "mosquitto.conf"
        conf.write_text(f"listener {BROKER_PORT} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        binary = os.environ.get("HEARTH_MOSQUITTO") or shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", NS, binary, "-c", str(conf)],
                                           stdout=open(self.dir / "mosquitto.log", "ab"), stderr=subprocess.STDOUT))
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", NS, os.environ["HEARTHD"], "run", "--config",
                                            str(self.config)], cwd=self.dir,
                                           stdout=open(self.log, "ab"), stderr=subprocess.STDOUT))
        wait_until(lambda: self.request("GET", "/")[0] == 200, 30, f"the hub's page (log: {self.log})")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    @property
    def url(self) -> str:
        return f"http://{NS_IP}:{WEB_PORT}/"

    def setup_code(self) -> str:
        return wait_until(lambda: (re.search(r"one-time setup code: (\S+)", self.log.read_text()) or [None, None])[1],
                          10, "the setup code in the log")

    def printed_manual_code(self) -> str:
        return wait_until(lambda: (re.search(r"the manual code (\S+)", self.log.read_text()) or [None, None])[1],
                          10, "the Matter manual code in the log")

    def request(self, method: str, path: str, body=None, cookie: str | None = None):
        conn = http.client.HTTPConnection(NS_IP, WEB_PORT, timeout=10)
        headers = {"Content-Type": "application/json", "Origin": self.url.rstrip("/")} if body is not None else {}
        if cookie:
            headers["Cookie"] = cookie
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        try:
            return r.status, dict(r.getheaders()), json.loads(raw)
        except ValueError:
            return r.status, dict(r.getheaders()), raw


class MatterRig:
    def __enter__(self):
        if os.geteuid() != 0:
            pytest.skip("the Matter panel's hub runs in a network namespace: run as root")
        self.dir = Path(tempfile.mkdtemp(prefix="hearth-mpanel-"))
        shutil.copy(webrig.REPO / "boards" / "sim.yaml", self.dir / "sim.yaml")
        ip("netns", "add", NS)
        ip("-n", NS, "link", "set", "lo", "up")
        ip("link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF, "netns", NS)
        ip("addr", "add", HOST_IP + "/30", "dev", HOST_IF)
        ip("link", "set", HOST_IF, "up")
        ip("-n", NS, "addr", "add", NS_IP + "/30", "dev", NS_IF)
        ip("-n", NS, "link", "set", NS_IF, "up")
        self.hub = MatterHub(self.dir)
        self.hub.start()
        return self

    def __exit__(self, *exc) -> None:
        self.hub.stop()
        subprocess.run(["ip", "link", "del", HOST_IF], timeout=10)
        subprocess.run(["ip", "netns", "del", NS], timeout=10)
        if not exc[0]:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def matter_rig():
    with MatterRig() as r:
        yield r


class Browser(webrig.Browser):
    """The suite's Chromium, its resolver mapping every name to nothing but the hub's address in the namespace."""

    def __enter__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps",
                  f"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE {NS_IP}"):
            options.add_argument(a)
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.implicitly_wait(0)
        webrig.OUT.mkdir(parents=True, exist_ok=True)
        return self


@pytest.fixture(scope="module")
def matter_browser(matter_rig):
    with Browser(matter_rig) as b:
        yield b


def click(element):
    element.parent.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def sign_in(d, hub, user: str | None = None, password: str = PASSWORD) -> None:
    d.get(hub.url)
    wait_until(lambda: d.find_element(By.ID, "password").is_displayed(), 20, "the sign-in form")
    if d.find_element(By.ID, "code").is_displayed():
        d.find_element(By.ID, "code").send_keys(hub.setup_code())
    else:
        d.find_element(By.ID, "user").clear()
        d.find_element(By.ID, "user").send_keys(user or "admin")
    d.find_element(By.ID, "password").send_keys(password)
    click(d.find_element(By.ID, "login-go"))
    wait_until(lambda: d.find_element(By.ID, "logout").is_displayed(), 10, "the signed-in page")


def test_the_admin_sees_the_pairing_codes_and_the_fabric_list(matter_rig, matter_browser):
    d, hub = matter_browser.driver, matter_rig.hub
    sign_in(d, hub)
    click(d.find_element(By.ID, "admin-open"))
    click(wait_until(lambda: d.find_element(By.ID, "tab-matter"), 5, "the Matter tab"))
    code = wait_until(lambda: d.find_element(By.ID, "matter-manual"), 10, "the manual code").text
    assert code == hub.printed_manual_code()
    qr = d.find_element(By.ID, "matter-qr")
    assert qr.get_attribute("src").startswith("data:image/svg+xml,")
    wait_until(lambda: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", qr), 5,
               "the QR code drawn")
    assert d.find_element(By.ID, "matter-qr-text").text.startswith("MT:")
    # Not paired yet: the list says so.
    assert d.find_element(By.ID, "matter-no-fabrics").is_displayed()
    matter_browser.screenshot("admin-matter")
    # Never in the log beyond the start-up print: the page's answers add no line with a code.
    before = hub.log.read_text().count(code)
    click(d.find_element(By.ID, "tab-matter"))
    wait_until(lambda: d.find_element(By.ID, "matter-manual"), 10, "the manual code again")
    assert hub.log.read_text().count(code) == before


def test_a_viewer_has_no_matter_panel_and_is_refused_its_routes(matter_rig, matter_browser):
    d, hub = matter_browser.driver, matter_rig.hub
    admin = hub.request("POST", "/api/login", {"user": "admin", "password": PASSWORD})[1]["Set-Cookie"].split(";")[0]
    status, _, _ = hub.request("POST", "/api/users", {"name": "guest", "password": "viewer password 1"}, cookie=admin)
    assert status == 200
    viewer = hub.request("POST", "/api/login", {"user": "guest", "password": "viewer password 1"})[1]["Set-Cookie"].split(";")[0]
    for method, path, body in (("GET", "/api/admin/matter", None), ("POST", "/api/admin/matter/window", {}),
                               ("DELETE", "/api/admin/matter/fabrics/1", None)):
        status, _, answer = hub.request(method, path, body, cookie=viewer)
        assert status == 403, (method, path, answer)
        assert "codes" not in answer and "20202021" not in json.dumps(answer)
    click(d.find_element(By.ID, "logout"))
    sign_in(d, hub, user="guest", password="viewer password 1")
    assert not d.find_element(By.ID, "admin-open").is_displayed()
    assert not d.find_elements(By.ID, "matter-manual") or not d.find_element(By.ID, "matter-manual").is_displayed()
    assert "MT:" not in d.find_element(By.TAG_NAME, "body").text


def test_the_real_nodes_refusals_reach_the_admin_precisely(matter_rig):
    hub = matter_rig.hub
    admin = hub.request("POST", "/api/login", {"user": "admin", "password": PASSWORD})[1]["Set-Cookie"].split(";")[0]
    status, _, answer = hub.request("GET", "/api/admin/matter", cookie=admin)
    assert status == 200 and answer["enabled"] and answer["commissionable"] and not answer["commissioned"]
    assert answer["fabrics"] == [] and answer["codes"]["manual"] == hub.printed_manual_code()
    # Unpaired, the hub's own code pairs it: no window to open.
    status, _, answer = hub.request("POST", "/api/admin/matter/window", {}, cookie=admin)
    assert status == 409 and "has no fabric yet" in answer["error"]["message"], answer
    status, _, answer = hub.request("DELETE", "/api/admin/matter/fabrics/1", cookie=admin)
    assert status == 404 and answer["error"]["message"] == "no fabric 1: the hub has no fabric", answer
    status, _, answer = hub.request("DELETE", "/api/admin/matter/fabrics/x1", cookie=admin)
    assert status == 400 and answer["error"]["message"] == 'a fabric index is a number from 1 to 254, not "x1"', answer
