"""The web page in a real browser: first start → setup code → password; live state, controls and messages; the broker
and the stream going away; viewers; the API's refusals; screenshots, weight and no other host."""

import json
import subprocess
import os
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import webrig
from webrig import wait_until

PASSWORD = "correct horse battery"


def card(driver, hub: str, device: str):
    return driver.find_element(By.ID, f"card-{hub}/{device}")


def click(element):
    """Scrolls the element to the middle of the viewport (clear of the sticky header) and clicks it."""
    element.parent.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def attribute(driver, hub: str, device: str, name: str) -> str | None:
    """The attribute's value as JSON (`data-value`: "true", "254"); the page shows it in words."""
    try:
        return card(driver, hub, device).find_element(By.CSS_SELECTOR, f'[data-attribute="{name}"]').get_attribute("data-value")
    except Exception:  # noqa: BLE001 - not drawn yet
        return None


def mqtt_document(rig, device: str) -> dict:
    raw = rig.broker.retained(f"hearth/web/devices/{device}")
    return json.loads(raw) if raw else {}


def mqtt_attribute(rig, device: str, trait: str, name: str):
    doc = mqtt_document(rig, device)
    return doc["types"][0]["traits"][trait]["attributes"][name] if doc else None


def test_first_start_sets_the_password_and_signs_in(rig, browser):
    d = browser.driver
    d.get(rig.proxy.url)  # through the proxy, so that a test can cut the connections
    wait_until(lambda: d.find_element(By.ID, "code").is_displayed(), 10, "the setup form")
    browser.screenshot("setup")
    # The code the hub printed is the one `hearthd web setup-code` prints.
    printed = subprocess.run([os.environ["HEARTHD"], "web", "setup-code", "--config", str(rig.hub.config)],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert printed == rig.hub.setup_code()
    d.find_element(By.ID, "code").send_keys(printed)
    d.find_element(By.ID, "password").send_keys(PASSWORD)
    click(d.find_element(By.ID, "login-go"))
    wait_until(lambda: card(d, "web", "porch").find_elements(By.CSS_SELECTOR, '[data-command="onOff.toggle"]'), 10,
               "the porch light's controls")
    assert "Broker connected" in d.find_element(By.ID, "link").text


def test_toggle_shows_on_the_page_and_over_mqtt(rig, browser):
    d = browser.driver
    before = attribute(d, "web", "porch", "onOff.onOff")
    click(card(d, "web", "porch").find_element(By.CSS_SELECTOR, '[data-command="onOff.toggle"]'))
    expected = "false" if before == "true" else "true"
    wait_until(lambda: attribute(d, "web", "porch", "onOff.onOff") == expected, 5, "the toggled state on the page")
    wait_until(lambda: mqtt_attribute(rig, "porch", "onOff", "onOff") == (expected == "true"), 5, "the MQTT document")


def test_dim_with_a_transition_fades_on_the_page(rig, browser):
    d = browser.driver
    lamp = card(d, "web", "lamp")
    form = lamp.find_element(By.CSS_SELECTOR, 'details[data-form="moveToLevelWithOnOff"]')
    click(form.find_element(By.TAG_NAME, "summary"))
    level = form.find_element(By.NAME, "level")
    level.clear()
    level.send_keys("254" if attribute(d, "web", "lamp", "levelControl.currentLevel") != "254" else "10")
    target = level.get_attribute("value")
    form.find_element(By.NAME, "transitionTime").send_keys("40")  # 4 s
    click(form.find_element(By.CSS_SELECTOR, "button"))
    seen = set()

    def reached():
        v = attribute(d, "web", "lamp", "levelControl.currentLevel")
        if v:
            seen.add(v)
        return v == target
    wait_until(reached, 10, "the end of the fade", interval=0.1)
    assert len(seen - {target}) >= 2, f"intermediate levels shown during the fade: {seen}"


def test_a_wall_switch_press_and_a_sensor_change_appear_without_reload(rig, browser):
    d = browser.driver
    before = attribute(d, "web", "porch", "onOff.onOff")
    rig.broker.publish("hearth/web/devices/hall-switch/set",
                       json.dumps({"trait": "dev.hearth.simulatedSwitch", "command": "press"}))
    # The press shows on the switch's card (past the debounce) before it is let go.
    wait_until(lambda: attribute(d, "web", "hall-switch", "switch.currentPosition") == "1", 5, "the press")
    rig.broker.publish("hearth/web/devices/hall-switch/set",
                       json.dumps({"trait": "dev.hearth.simulatedSwitch", "command": "release"}))
    wait_until(lambda: attribute(d, "web", "porch", "onOff.onOff") not in (None, before), 5, "the switch's command")
    first = wait_until(lambda: attribute(d, "web", "climate", "relativeHumidityMeasurement.measuredValue"), 5, "a humidity")
    wait_until(lambda: attribute(d, "web", "climate", "relativeHumidityMeasurement.measuredValue") != first, 20,
               "the humidity to drift")


def test_names_and_values_read_as_words(rig, browser):
    d = browser.driver
    lamp = card(d, "web", "lamp")
    # Commands, traits, attributes and fields: the catalogue's words, or lowerCamelCase split.
    assert lamp.find_element(By.CSS_SELECTOR, '[data-command="onOff.toggle"]').text == "Toggle"
    assert lamp.find_element(By.CSS_SELECTOR, '[data-trait="levelControl"] .tname').text == "Brightness · Dimmable light"
    dim = lamp.find_element(By.CSS_SELECTOR, 'details[data-form="moveToLevelWithOnOff"] summary')
    assert dim.text == "Dim"
    labels = [e.get_attribute("textContent") for e in lamp.find_elements(By.CSS_SELECTOR, '[data-trait="levelControl"] dt')]
    assert "Level" in labels and "currentLevel" not in labels, labels
    switch = card(d, "web", "hall-switch")
    assert "Simulated switch" in switch.text, switch.text
    # A boolean as yes or no; its JSON stays in data-value for scripts.
    shown = lamp.find_element(By.CSS_SELECTOR, '[data-attribute="onOff.onOff"]')
    assert shown.text == ("yes" if shown.get_attribute("data-value") == "true" else "no")


def test_a_refused_value_shows_the_hubs_message(rig, browser):
    d = browser.driver
    form = card(d, "web", "lamp").find_element(By.CSS_SELECTOR, 'details[data-form="moveToLevel"]')
    click(form.find_element(By.TAG_NAME, "summary"))
    form.find_element(By.NAME, "level").send_keys("999")
    click(form.find_element(By.CSS_SELECTOR, "button"))
    wait_until(lambda: "out of range" in card(d, "web", "lamp").find_element(By.CSS_SELECTOR, ".error").text, 5,
               "the hub's message")
    browser.screenshot("refused")


def test_a_peers_device_is_shown(rig, browser):
    d = browser.driver
    wait_until(lambda: "Attic fan" in card(d, "attic", "attic-fan").text, 10, "the peer's device")
    assert "attic" in d.find_element(By.ID, "peers").text


def test_a_group_and_its_scene_from_the_page(rig, browser):
    d = browser.driver
    group = wait_until(lambda: d.find_element(By.ID, "group-1"), 10, "the group's card")
    wait_until(lambda: "Evening" in group.text and "Kitchen lamp" in group.text and "Porch light" in group.text, 10,
               "the group's name, members and scene")

    def answer():
        return d.find_element(By.CSS_SELECTOR, "#group-1 .answer").text

    def both(value: str) -> bool:
        return all(attribute(d, "web", device, "onOff.onOff") == value for device in ("porch", "lamp"))

    # One send turns every member off; the hub's answer names where it ran.
    click(d.find_element(By.CSS_SELECTOR, '#group-1 [data-group-command="off"]'))
    wait_until(lambda: both("false"), 5, "both members off on the page")
    wait_until(lambda: answer() == "web: ran on Kitchen lamp, Porch light", 5, "the hub's answer")
    wait_until(lambda: mqtt_attribute(rig, "porch", "onOff", "onOff") is False
               and mqtt_attribute(rig, "lamp", "onOff", "onOff") is False, 5, "both MQTT documents off")

    # The scene: on, and the lamp at its level.
    d.execute_script("document.querySelector('#group-1 .answer').textContent = ''")
    click(d.find_element(By.CSS_SELECTOR, '#group-1 [data-scene="1"]'))
    wait_until(lambda: both("true") and attribute(d, "web", "lamp", "levelControl.currentLevel") == "80", 5,
               "the scene on both members")
    wait_until(lambda: answer() == "web: ran on Kitchen lamp, Porch light", 5, "the hub's answer to the scene")
    d.execute_script("document.getElementById('group-1').scrollIntoView({block: 'center'})")
    browser.screenshot("group-scene")

    # Toggle: each member changes.
    click(d.find_element(By.CSS_SELECTOR, '#group-1 [data-group-command="toggle"]'))
    wait_until(lambda: both("false"), 5, "both members toggled off")
    wait_until(lambda: mqtt_attribute(rig, "porch", "onOff", "onOff") is False
               and mqtt_attribute(rig, "lamp", "onOff", "onOff") is False, 5, "both MQTT documents toggled")


def test_the_broker_stopped_is_said_and_the_page_recovers(rig, browser):
    d = browser.driver
    rig.broker.stop()
    wait_until(lambda: d.find_element(By.ID, "link").text == "Broker disconnected", 10, "the broker link down")
    assert "lost its MQTT broker" in d.find_element(By.ID, "banner").text
    d.execute_script("window.scrollTo(0, 0)")
    browser.screenshot("broker-down")
    # The page still commands the hub meanwhile.
    before = attribute(d, "web", "porch", "onOff.onOff")
    click(card(d, "web", "porch").find_element(By.CSS_SELECTOR, '[data-command="onOff.toggle"]'))
    wait_until(lambda: attribute(d, "web", "porch", "onOff.onOff") not in (None, before), 5, "a toggle without a broker")
    rig.broker.start()
    wait_until(lambda: d.find_element(By.ID, "link").text == "Broker connected", 40, "the broker link back")
    assert d.find_element(By.ID, "banner").is_displayed() is False


def test_a_cut_stream_resyncs(rig, browser):
    d = browser.driver
    # A rename the hub makes just as the stream is cut reaches the page by the snapshot of the next stream.
    rig.proxy.cut()
    rig.broker.publish("hearth/web/devices/lamp/set", json.dumps({"setName": "Renamed while cut"}))
    wait_until(lambda: "Renamed while cut" in card(d, "web", "lamp").text, 20, "the snapshot after reconnecting")
    wait_until(lambda: not d.find_element(By.ID, "banner").is_displayed(), 10, "the banner gone once resynced")


def test_screenshots_light_dark_and_phone(rig, browser):
    d = browser.driver
    d.execute_script("window.scrollTo(0, 0)")
    browser.screenshot("home-light")
    browser.cdp("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    dark_bg = d.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.screenshot("home-dark")
    browser.cdp("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    assert dark_bg != d.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.cdp("Emulation.setDeviceMetricsOverride", {"width": 360, "height": 640, "deviceScaleFactor": 2, "mobile": True})
    wait_until(lambda: d.execute_script("return document.documentElement.clientWidth") == 360, 5, "a 360 px viewport")
    d.execute_script("window.scrollTo(0, 0)")
    widths = d.execute_script("return [...document.querySelectorAll('.card')].map(c => c.getBoundingClientRect().width)")
    overflow = d.execute_script("return document.documentElement.scrollWidth > document.documentElement.clientWidth")
    browser.screenshot("home-360x640")
    browser.cdp("Emulation.clearDeviceMetricsOverride", {})
    assert not overflow, "the page scrolls sideways at 360 px"
    assert widths and max(widths) > 300, f"one column at 360 px: {widths}"


def test_weight_and_no_other_host(rig, browser):
    d = browser.driver
    origin = rig.proxy.url.rstrip("/")
    entries = d.execute_script("return performance.getEntries().map(e => e.name)")
    others = [e for e in entries if e.startswith("http") and not e.startswith(origin)]
    assert not others, f"requests to other hosts: {others}"
    raw, gz = webrig.page_weight(rig.hub)
    (webrig.OUT / "weight.txt").write_text(f"{raw} bytes, {gz} bytes gzip -9\n")
    assert gz <= 30 * 1024


def test_a_viewer_changes_nothing(rig, browser):
    d = browser.driver
    admin = rig.hub.login("admin", PASSWORD)
    status, _, body = rig.hub.request("POST", "/api/users", {"name": "guest", "password": "guest password 1"},
                                      cookie=admin)
    assert status == 200, body
    click(d.find_element(By.ID, "logout"))
    wait_until(lambda: d.find_element(By.ID, "user").is_displayed(), 10, "the sign-in form")
    d.find_element(By.ID, "user").clear()
    d.find_element(By.ID, "user").send_keys("guest")
    d.find_element(By.ID, "password").send_keys("guest password 1")
    click(d.find_element(By.ID, "login-go"))
    button = wait_until(lambda: card(d, "web", "porch").find_element(By.CSS_SELECTOR, '[data-command="onOff.toggle"]'),
                        10, "the viewer's page")
    assert not button.is_enabled()
    group_button = wait_until(lambda: d.find_element(By.CSS_SELECTOR, '#group-1 [data-group-command="toggle"]'), 10,
                              "the viewer's groups")
    assert not group_button.is_enabled()
    browser.screenshot("viewer")
    viewer = rig.hub.login("guest", "guest password 1")
    status, _, body = rig.hub.request("POST", "/api/devices/porch/request", {"trait": "onOff", "command": "toggle"},
                                      cookie=viewer)
    assert status == 403 and body["error"]["code"] == "permissionDenied"
    status, _, body = rig.hub.request("POST", "/api/groups/1/request", {"trait": "onOff", "command": "toggle"},
                                      cookie=viewer)
    assert status == 403 and body["error"]["code"] == "permissionDenied"


def test_401_without_a_session_and_403_across_origins(rig):
    status, _, body = rig.hub.request("GET", "/api/home")
    assert status == 401 and body["error"]["code"] == "unauthenticated"
    admin = rig.hub.login("admin", PASSWORD)
    status, _, _ = rig.hub.request("POST", "/api/devices/porch/request", {"trait": "onOff", "command": "toggle"},
                                   cookie=admin, headers={"Origin": "http://evil.example"})
    assert status == 403
