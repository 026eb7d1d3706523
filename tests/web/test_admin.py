"""The hub's administration in a real browser: the configuration as the hub runs it and its wiring, a broken edit shown
at its line and column and not applied, a good edit applied by the hub restarting itself, the live log view without
secrets, and a viewer refused all of it. A hub of its own, restarted as systemd or scripts/run restarts it (exit 75),
with its broker password read from secrets.yaml."""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import webrig
from webrig import wait_until

PASSWORD = "correct horse battery"
SECRET = "broker-pw-7f3a9c"


class SupervisedHub(webrig.Hub):
    """A hub restarted whenever it exits with 75, as the systemd unit and scripts/run restart it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        text = self.config.read_text().replace("keepAlive: 5s}", f"keepAlive: 5s, username: web, password: !secret broker_password}}")
        self.config.write_text(text)
        secrets = self.dir / "secrets.yaml"
        secrets.write_text(f"broker_password: {SECRET}\n")
        secrets.chmod(0o600)
        self.starts = 0
        self.exits: list[int] = []
        self.stopping = False

    def start(self) -> None:
        self._launch()
        threading.Thread(target=self._supervise, daemon=True).start()
        wait_until(lambda: self.status("/")[0] == 200, 30, f"hearthd {self.id}'s page (log: {self.log})")

    def _launch(self) -> None:
        self.starts += 1
        self.proc = subprocess.Popen([os.environ["HEARTHD"], "run", "--config", str(self.config)],
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)

    def _supervise(self) -> None:
        while True:
            proc = self.proc
            code = proc.wait()
            self.exits.append(code)
            if self.stopping or code != 75:
                return
            self._launch()

    def stop(self) -> None:
        self.stopping = True
        super().stop()


class AdminRig:
    def __enter__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="hearth-admin-"))
        shutil.copy(webrig.REPO / "boards" / "sim.yaml", self.dir / "sim.yaml")
        self.broker = webrig.Broker(self.dir)
        self.broker.start()
        self.hub = SupervisedHub(self.dir, "web", "attic", self.broker, webrig.WEB_DEVICES)
        self.hub.start()
        return self

    def __exit__(self, *exc) -> None:
        self.hub.stop()
        self.broker.stop()
        if not exc[0]:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def admin_rig():
    with AdminRig() as r:
        yield r


@pytest.fixture(scope="module")
def admin_browser(admin_rig):
    with webrig.Browser(admin_rig) as b:
        yield b


def click(element):
    element.parent.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def sign_in(d, hub, load: bool = True) -> None:
    """Signs in as the admin through the page (the setup form the first time); without `load`, on the page as it is."""
    if load:
        d.get(hub.url)
    wait_until(lambda: d.find_element(By.ID, "password").is_displayed() or d.find_element(By.ID, "admin-open").is_displayed(),
               20, "the sign-in form")
    if d.find_element(By.ID, "admin-open").is_displayed():
        return
    if d.find_element(By.ID, "code").is_displayed():
        d.find_element(By.ID, "code").send_keys(hub.setup_code())
    d.find_element(By.ID, "password").send_keys(PASSWORD)
    click(d.find_element(By.ID, "login-go"))
    wait_until(lambda: d.find_element(By.ID, "admin-open").is_displayed(), 10, "the admin's menu")


def open_panel(d, panel: str) -> None:
    click(d.find_element(By.ID, "admin-open"))
    click(wait_until(lambda: d.find_element(By.ID, "tab-" + panel), 5, f"the {panel} tab"))
    wait_until(lambda: d.find_elements(By.ID, "admin-" + panel), 5, f"the {panel} panel")


def edit(d, change) -> str:
    """Replaces the editor's text with change(text), as typing would (an input event)."""
    text = wait_until(lambda: d.find_element(By.ID, "config-text"), 10, "the editor")
    wait_until(lambda: text.get_attribute("value"), 10, "the configuration's text")
    new = change(text.get_attribute("value"))
    d.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", text, new)
    return new


def admin_cookie(hub) -> str:
    return hub.login("admin", PASSWORD)


def test_the_wiring_view_lists_each_devices_hardware(admin_rig, admin_browser):
    d, hub = admin_browser.driver, admin_rig.hub
    sign_in(d, hub)
    open_panel(d, "wiring")
    rows = wait_until(lambda: d.find_elements(By.CSS_SELECTOR, "#wiring-table tbody tr"), 10, "the wiring table")
    text = {r.get_attribute("data-device"): r.text for r in rows}
    assert "relay-1" in text["porch"] and "OnOffLight" in text["porch"]
    assert "0x40" in text["climate"]  # the humidity sensor's I²C address
    assert "PWM" in text["lamp"]
    admin_browser.screenshot("admin-wiring")


def test_a_broken_edit_shows_its_line_and_column_and_is_not_applied(admin_rig, admin_browser):
    d, hub = admin_browser.driver, admin_rig.hub
    before = hub.config.read_text()
    pid = hub.proc.pid
    open_panel(d, "config")
    edit(d, lambda t: t.replace("pin: relay-1", "pin: relay-99"))
    click(d.find_element(By.ID, "config-save"))
    problem = wait_until(lambda: d.find_element(By.CSS_SELECTOR, "#config-problems li"), 10, "the problem")
    line = int(problem.get_attribute("data-line"))
    column = int(problem.get_attribute("data-column"))
    assert before.splitlines()[line - 1].find("relay-1") >= 0  # the line the pin is written on
    assert column > 1 and "relay-99" in problem.text and f"line {line}, column {column}" in problem.text
    marked = d.find_elements(By.CSS_SELECTOR, "#config-gutter span.bad")
    assert [m.text.strip() for m in marked] == [str(line)]
    admin_browser.screenshot("admin-editor-problem")
    # Nothing applied: the same file, the same process, still serving.
    assert hub.config.read_text() == before
    assert hub.proc.pid == pid and hub.proc.poll() is None
    assert hub.request("GET", "/api/admin/config", cookie=admin_cookie(hub))[2]["text"] == before


def test_the_log_view_shows_a_new_line_live_and_never_a_secret(admin_rig, admin_browser):
    d, hub = admin_browser.driver, admin_rig.hub
    open_panel(d, "logs")
    wait_until(lambda: d.find_elements(By.CSS_SELECTOR, "#log-lines li"), 10, "the log's lines")
    # The hub logs a failed sign-in with the name tried: here the broker's password from secrets.yaml.
    status, _, _ = hub.request("POST", "/api/login", {"user": SECRET, "password": "not the password"})
    assert status == 401
    line = wait_until(lambda: [li for li in d.find_elements(By.CSS_SELECTOR, "#log-lines li") if "failed sign-in" in li.text],
                      10, "the failed sign-in in the log view")
    assert "‹secret›" in line[0].text
    assert SECRET not in d.find_element(By.ID, "log-lines").text
    assert SECRET in hub.log.read_text()  # the console has it (the journal is root's); the page never
    status, _, body = hub.request("GET", "/api/admin/logs", cookie=admin_cookie(hub))
    assert status == 200 and SECRET not in str(body) and hub.setup_code() not in str(body)
    # The level filter: at warning, the notice is gone.
    d.execute_script("const s = document.getElementById('log-level'); s.value = 'warning'; s.dispatchEvent(new Event('change'))")
    wait_until(lambda: not [li for li in d.find_elements(By.CSS_SELECTOR, "#log-lines li") if "failed sign-in" in li.text],
               5, "the notice filtered out")


def test_a_good_edit_is_applied_and_the_hub_comes_back_with_it(admin_rig, admin_browser):
    d, hub = admin_browser.driver, admin_rig.hub
    starts = hub.starts
    open_panel(d, "config")
    new = edit(d, lambda t: t.replace("name: Porch light", "name: Front porch"))
    assert "Front porch" in new
    click(d.find_element(By.ID, "config-save"))
    wait_until(lambda: d.find_element(By.ID, "config-restarting"), 10, "the page saying the hub restarts")
    wait_until(lambda: hub.starts == starts + 1 and hub.status("/")[0] == 200, 30, "the hub to come back")
    assert hub.exits[-1] == 75
    assert hub.config.read_text() == new
    # Once it serves, the new text is the last one that started and nothing is pending.
    last = Path(str(hub.config) + ".last-started")
    wait_until(lambda: last.read_text() == new and not Path(str(hub.config) + ".pending").exists(), 10,
               "the new configuration kept as the last one that started")
    # A restart ends the sessions: the page asks to sign in again, then shows the configuration that runs.
    wait_until(lambda: d.find_element(By.ID, "password").is_displayed(), 20, "the page asking to sign in again")
    sign_in(d, hub, load=False)
    open_panel(d, "config")
    wait_until(lambda: d.find_element(By.ID, "config-applied"), 10, "the page saying the new configuration runs")
    cookie = admin_cookie(hub)
    home = hub.request("GET", "/api/home", cookie=cookie)[2]
    assert any(x["id"] == "porch" and x["name"] == "Front porch" for x in home)
    assert "stopped to restart" in hub.log.read_text()


def test_a_saved_configuration_that_fails_at_start_is_rolled_back(admin_rig):
    hub = admin_rig.hub
    cookie = admin_cookie(hub)
    before = hub.config.read_text()
    starts = hub.starts
    # The checks pass (nothing is bound to check a port), but the start cannot listen: another program has the port.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        text = before.replace(f"port: {hub.web_port}}}", f"port: {port}}}")
        assert text != before
        status, _, answer = hub.request("POST", "/api/admin/config", {"text": text}, cookie=cookie)
        assert status == 200 and answer["restarting"], answer
        # The failed start puts the last one that started back and restarts with it: the page is back on its port.
        wait_until(lambda: hub.starts >= starts + 2 and hub.status("/")[0] == 200, 40, "the hub back on the old configuration")
    assert hub.exits[-2:] == [75, 75]
    assert hub.config.read_text() == before
    assert Path(str(hub.config) + ".rejected").read_text() == text
    assert "did not start: it was rolled back to the last one that started" in hub.log.read_text()


def test_a_viewer_sees_no_configuration_nor_logs(admin_rig, admin_browser):
    d, hub = admin_browser.driver, admin_rig.hub
    cookie = admin_cookie(hub)
    status, _, _ = hub.request("POST", "/api/users", {"name": "guest", "password": "viewer password 1"}, cookie=cookie)
    assert status == 200
    viewer = hub.login("guest", "viewer password 1")
    for method, path, body in [("GET", "/api/admin/config", None), ("GET", "/api/admin/wiring", None),
                               ("GET", "/api/admin/logs", None), ("POST", "/api/admin/config", {"text": "hub: {}\n"}),
                               ("POST", "/api/admin/config/check", {"text": "hub: {}\n"})]:
        status, _, answer = hub.request(method, path, body, cookie=viewer)
        assert status == 403, (path, answer)
        assert "text" not in answer and "lines" not in answer
    # In the page: no way in.
    click(d.find_element(By.ID, "logout"))
    wait_until(lambda: d.find_element(By.ID, "user").is_displayed(), 10, "the sign-in form")
    d.find_element(By.ID, "user").clear()
    d.find_element(By.ID, "user").send_keys("guest")
    d.find_element(By.ID, "password").send_keys("viewer password 1")
    click(d.find_element(By.ID, "login-go"))
    wait_until(lambda: d.find_element(By.ID, "home").is_displayed(), 10, "the home")
    assert not d.find_element(By.ID, "admin-open").is_displayed()
    assert not d.find_element(By.ID, "admin").is_displayed()
