"""Backup and restore, and the page's second language, in a real browser: a hub's backup restored onto a fresh state
directory brings back its names and states; a viewer can neither download nor restore; a German browser gets the
German page, whose catalogue misses no string."""

import json
import re
import shutil
import tarfile
import io

from selenium.webdriver.common.by import By

import webrig
from webrig import wait_until

PASSWORD = "correct horse battery"

DEVICES = """\
  - {id: porch, name: Porch light, room: outside, type: OnOffLight, binding: {kind: relay, pin: relay-1}}
  - {id: desk, name: Desk lamp, room: study, type: OnOffLight}
"""


def set_up_admin(hub: webrig.Hub) -> str:
    status, _, body = hub.request("POST", "/api/setup", {"code": hub.setup_code(), "password": PASSWORD})
    assert status == 200, body
    return hub.login("admin", PASSWORD)


def rig_admin(rig) -> str:
    """The rig's admin session, setting the password first when this file runs alone."""
    _, _, body = rig.hub.request("GET", "/api/session")
    if isinstance(body, dict) and body.get("setupNeeded"):
        return set_up_admin(rig.hub)
    return rig.hub.login("admin", PASSWORD)


def device(hub: webrig.Hub, cookie: str, device_id: str) -> dict:
    status, _, body = hub.request("GET", f"/api/devices/{device_id}", cookie=cookie)
    assert status == 200, body
    return body


def on_off(document: dict):
    for t in document.get("types", []):
        if "onOff" in t.get("traits", {}):
            return t["traits"]["onOff"]["attributes"]["onOff"]
    return None


def lone_hub(rig, name: str) -> webrig.Hub:
    """A hub of its own in a folder of its own (its board beside it, its state in `state-<id>` there), on the rig's
    broker, with no peer."""
    folder = rig.dir / name
    folder.mkdir()
    shutil.copy(rig.dir / "sim.yaml", folder / "sim.yaml")
    return webrig.Hub(folder, "lone", "nobody", rig.broker, DEVICES)


def test_a_backup_restored_onto_a_fresh_state_directory_brings_back_names_and_states(rig, browser):
    original = lone_hub(rig, "original")
    original.start()
    try:
        admin = set_up_admin(original)
        for request in ({"setName": "Front door light"}, {"setRoom": "porch"},
                        {"trait": "onOff", "command": "on"}):
            status, _, body = original.request("POST", "/api/devices/porch/request", request, cookie=admin)
            assert status == 200, body
        status, _, body = original.request("POST", "/api/devices/desk/request", {"setName": "Reading lamp"}, cookie=admin)
        assert status == 200, body
        state = original.dir / "state-lone" / "state.json"
        wait_until(lambda: state.exists() and "Reading lamp" in state.read_text() and "Front door light" in state.read_text(),
                   10, "the names in the saved state")

        # A viewer neither downloads nor restores.
        status, _, body = original.request("POST", "/api/users", {"name": "guest", "password": "guest password 1"},
                                           cookie=admin)
        assert status == 200, body
        viewer = original.login("guest", "guest password 1")
        status, _, body = original.request("GET", "/api/backup", cookie=viewer)
        assert status == 403 and body["error"]["code"] == "permissionDenied"
        status, _, body = original.request("POST", "/api/restore", b"x" * 1024, cookie=viewer,
                                           headers={"Content-Type": "application/x-tar"})
        assert status == 403 and body["error"]["code"] == "permissionDenied"

        status, headers, archive = original.request("GET", "/api/backup", cookie=admin)
        assert status == 200 and headers["Content-Type"] == "application/x-tar", archive
        assert re.match(r'attachment; filename="hearth-lone-backup\.tar"', headers["Content-Disposition"])
        with tarfile.open(fileobj=io.BytesIO(archive)) as t:
            names = t.getnames()
        assert names[:4] == ["hearth-backup", "hearth.yaml", "board.yaml", "state/state.json"], names
        assert "state/web-accounts.json" not in names
    finally:
        original.stop()
    backup = rig.dir / "lone-backup.tar"
    backup.write_bytes(archive)

    # A fresh hub (nothing in its state directory) with the same configuration, on the same port.
    fresh = lone_hub(rig, "fresh")
    fresh.web_port = original.web_port
    fresh.config.write_text(original.config.read_text())
    fresh.start()
    try:
        admin = set_up_admin(fresh)
        assert device(fresh, admin, "desk")["name"] == "Desk lamp"
        d = browser.driver
        d.get(fresh.url)
        wait_until(lambda: d.find_element(By.ID, "user").is_displayed(), 10, "the sign-in form")
        d.find_element(By.ID, "password").send_keys(PASSWORD)
        d.find_element(By.ID, "login-go").click()
        wait_until(lambda: d.find_element(By.ID, "admin-open").is_displayed(), 10, "the administration button")
        d.find_element(By.ID, "admin-open").click()
        wait_until(lambda: d.find_element(By.ID, "tab-backup"), 10, "the backup tab").click()
        wait_until(lambda: d.find_element(By.ID, "backup-hint"), 10, "the backup panel")
        assert "keeps its Matter pairings" in d.find_element(By.ID, "backup-hint").text
        d.find_element(By.ID, "restore-file").send_keys(str(backup))
        d.find_element(By.ID, "restore-go").click()
        wait_until(lambda: d.find_elements(By.CSS_SELECTOR, "#restore-result [data-restored]"), 20, "the restore's answer")
        browser.screenshot("backup-restored")
        # The hub stops to restart (exit 75, EX_TEMPFAIL); systemd's Restart=on-failure or scripts/run starts it again:
        # here the test does.
        assert "restarting" in d.find_element(By.ID, "restore-result").text
        assert fresh.proc.wait(20) == 75, fresh.log.read_text()[-2000:]
        fresh.start()

        def restored():
            cookie = fresh.login("admin", PASSWORD)
            return device(fresh, cookie, "desk")["name"] == "Reading lamp" and cookie
        cookie = wait_until(restored, 30, "the restored hub's names")
        porch = device(fresh, cookie, "porch")
        assert porch["name"] == "Front door light" and porch.get("roomId") == "porch", porch
        assert on_off(porch) is True, porch
    finally:
        fresh.stop()


def test_a_restore_whose_configuration_fails_the_checks_shows_its_line_and_changes_nothing(rig):
    admin = rig_admin(rig)
    before = rig.hub.config.read_text()
    broken = io.BytesIO()
    with tarfile.open(fileobj=broken, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in (("hearth-backup", b"hearth-backup 1\n"),
                           ("hearth.yaml", b"hub: {board: sim.yaml}\ndevices:\n  - {id: lamp, type: Lamp}\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    status, _, body = rig.hub.request("POST", "/api/restore", broken.getvalue(), cookie=admin,
                                      headers={"Content-Type": "application/x-tar"})
    assert status == 422, body
    assert body["problems"][0]["file"] == "hearth.yaml" and body["problems"][0]["line"] == 3, body
    assert rig.hub.config.read_text() == before
    # A link in the archive is refused, saying so.
    linked = io.BytesIO()
    with tarfile.open(fileobj=linked, mode="w", format=tarfile.USTAR_FORMAT) as t:
        info = tarfile.TarInfo("hearth.yaml")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/shadow"
        t.addfile(info)
    status, _, body = rig.hub.request("POST", "/api/restore", linked.getvalue(), cookie=admin,
                                      headers={"Content-Type": "application/x-tar"})
    assert status == 400 and "symbolic link" in body["error"]["message"], body


def test_the_page_is_german_when_the_browser_asks_for_it(rig, browser):
    rig_admin(rig)
    for header, lang in (("de-DE,de;q=0.9,en;q=0.8", "de"), ("en-GB,en;q=0.9,de;q=0.8", "en"),
                         ("fr-FR, de;q=0.5, en;q=0.4", "de"), ("de;q=0, en;q=0.1", "en"), ("fr", "en"), ("", "en")):
        status, headers, page = rig.hub.request("GET", "/", headers={"Accept-Language": header})
        assert status == 200 and f'<html lang="{lang}">'.encode() in page, (header, page[:80])
        assert headers.get("Vary") == "Accept-Language"
    d = browser.driver
    agent = d.execute_script("return navigator.userAgent")
    browser.cdp("Emulation.setUserAgentOverride", {"userAgent": agent, "acceptLanguage": "de-DE,de;q=0.9,en;q=0.5"})
    try:
        d.get(rig.hub.url)
        wait_until(lambda: d.find_element(By.ID, "logout").get_attribute("textContent") == "Abmelden"
                   or d.find_element(By.ID, "login-go").text == "Anmelden", 10, "the page in German")
        # Every string of the catalogue has its translation, and the translation nothing the catalogue lacks.
        missing = d.execute_script("""
            const out = [];
            const walk = (a, b, at) => {
              for (const k of Object.keys(a)) {
                if (!Object.hasOwn(b, k)) out.push("missing " + at + k);
                else if (typeof a[k] === "object") walk(a[k], b[k], at + k + ".");
              }
              for (const k of Object.keys(b)) if (!Object.hasOwn(a, k)) out.push("extra " + at + k);
            };
            walk(S, DE, "");
            return out;""")
        assert missing == [], missing
        browser.screenshot("german")
    finally:
        browser.cdp("Emulation.setUserAgentOverride", {"userAgent": agent, "acceptLanguage": "en-US,en"})
        d.get(rig.hub.url)


def test_the_page_over_tls_with_a_certificate_made_for_the_test(rig, browser):
    import http.client
    import os
    import ssl
    import subprocess

    hub = lone_hub(rig, "tls")
    folder = hub.dir

    def certificate(name: str) -> None:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-days", "2",
                        "-noenc", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(folder / f"{name}.key"), "-out", str(folder / f"{name}.crt")],
                       check=True, capture_output=True, timeout=30)
        os.chmod(folder / f"{name}.key", 0o600)

    certificate("web")
    certificate("other")
    plain = hub.config.read_text()
    listen = f"web: {{listen: 127.0.0.1, port: {hub.web_port}}}"
    assert listen in plain

    # A key that is not the certificate's: a problem at its line; the hub does not start.
    hub.config.write_text(plain.replace(listen, f"web: {{listen: 127.0.0.1, port: {hub.web_port}, "
                                                "tls: {certificate: web.crt, key: other.key}}"))
    check = subprocess.run([os.environ["HEARTHD"], "check-config", str(hub.config)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 78 and "web.tls.key" in check.stdout and "not the certificate's" in check.stdout, check.stdout

    hub.config.write_text(plain.replace(listen, f"web: {{listen: 127.0.0.1, port: {hub.web_port}, "
                                                "tls: {certificate: web.crt, key: web.key}}"))
    trusted = ssl.create_default_context(cafile=str(folder / "web.crt"))

    def https_get(path: str):
        conn = http.client.HTTPSConnection("127.0.0.1", hub.web_port, timeout=5, context=trusted)
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        conn.close()
        return r.status, body

    def https_post(path: str, payload: dict):
        conn = http.client.HTTPSConnection("127.0.0.1", hub.web_port, timeout=5, context=trusted)
        conn.request("POST", path, json.dumps(payload),
                     {"Content-Type": "application/json", "Origin": f"https://127.0.0.1:{hub.web_port}"})
        r = conn.getresponse()
        r.read()
        conn.close()
        return r.status, r.getheader("Set-Cookie") or ""

    hub.proc = subprocess.Popen([os.environ["HEARTHD"], "run", "--config", str(hub.config)],
                                stdout=open(hub.log, "ab"), stderr=subprocess.STDOUT)
    try:
        status, page = wait_until(lambda: https_get("/"), 30, f"the page over TLS (log: {hub.log})")
        assert status == 200 and b"<!doctype html>" in page
        assert "web page on https://" in hub.log.read_text()
        # Over TLS the session cookie is Secure: a browser never sends it over plain HTTP.
        status, _ = https_post("/api/setup", {"code": hub.setup_code(), "password": PASSWORD})
        assert status == 200
        status, cookie = https_post("/api/login", {"user": "admin", "password": PASSWORD})
        assert status == 200 and "; Secure" in cookie and "HttpOnly" in cookie, cookie
        # Plain HTTP on the TLS port gets no page.
        try:
            got = hub.request("GET", "/")
        except (OSError, http.client.HTTPException):
            got = None
        assert got is None or got[0] != 200
        # Chromium shows the sign-in over it (the certificate is the test's own, so the browser is told to take it).
        d = browser.driver
        browser.cdp("Security.setIgnoreCertificateErrors", {"ignore": True})
        try:
            d.get(f"https://127.0.0.1:{hub.web_port}/")
            wait_until(lambda: d.find_element(By.ID, "login-go").is_displayed(), 10, "the sign-in form over TLS")
            assert d.execute_script("return location.protocol") == "https:"
        finally:
            browser.cdp("Security.setIgnoreCertificateErrors", {"ignore": False})
    finally:
        hub.stop()
