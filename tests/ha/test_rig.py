"""The rig itself, before Hearth publishes anything: a hand-written device-based discovery message makes a device
with a light and a sensor appear in the real Home Assistant, with state from the broker and commands back to it."""

import json

import harig

PREFIX = "homeassistant"
DISCOVERY = {
    "dev": {"ids": ["rigtest_device"], "name": "Rig test device", "mf": "Hearth tests", "mdl": "hand-written",
            "sw": "1.0"},
    "o": {"name": "hearth-rig-test", "sw": "0"},
    "cmps": {
        "light": {"p": "light", "unique_id": "rigtest_light", "name": None,
                  "state_topic": "rigtest/state", "state_value_template": "{{ 'ON' if value_json.on else 'OFF' }}",
                  "command_topic": "rigtest/set"},
        "humidity": {"p": "sensor", "unique_id": "rigtest_humidity", "name": "Humidity",
                     "device_class": "humidity", "unit_of_measurement": "%", "state_class": "measurement",
                     "state_topic": "rigtest/state", "value_template": "{{ value_json.humidity / 100 }}"},
    },
}


def entity(ha, unique_id):
    return harig.wait_until(lambda: ha.entity_by_unique_id("mqtt", unique_id), 30,
                            f"the entity with unique id {unique_id}", interval=0.3, check=ha.check_alive)


def test_hand_written_device_discovery(ha, broker):
    broker.publish(f"{PREFIX}/device/rigtest/config", json.dumps(DISCOVERY), retain=True)
    broker.publish("rigtest/state", json.dumps({"on": True, "humidity": 4512}), retain=True)

    light = entity(ha, "rigtest_light")
    humidity = entity(ha, "rigtest_humidity")
    assert light["entity_id"] == "light.rig_test_device"
    assert humidity["entity_id"] == "sensor.rig_test_device_humidity"
    ha.wait_state(light["entity_id"], lambda s: s["state"] == "on", what="on")
    h = ha.wait_state(humidity["entity_id"], lambda s: s["state"] == "45.12", what="45.12")
    assert h["attributes"]["unit_of_measurement"] == "%"
    assert h["attributes"]["device_class"] == "humidity"
    assert h["attributes"]["state_class"] == "measurement"

    device = next(d for d in ha.devices() if ["mqtt", "rigtest_device"] in d["identifiers"])
    assert (device["name"], device["manufacturer"], device["model"], device["sw_version"]) == \
        ("Rig test device", "Hearth tests", "hand-written", "1.0")
    assert light["device_id"] == device["id"] == humidity["device_id"]

    # State from the broker, and a command from Home Assistant back to it.
    broker.publish("rigtest/state", json.dumps({"on": False, "humidity": 5000}), retain=True)
    ha.wait_state(light["entity_id"], lambda s: s["state"] == "off", what="off")
    ha.wait_state(humidity["entity_id"], lambda s: s["state"] == "50.0", what="50.0")
    with broker.subscribe("rigtest/set") as sub:
        ha.call_service("light", "turn_on", {"entity_id": light["entity_id"]})
        sub.wait_for(lambda t, p: t == "rigtest/set" and p == b"ON", what="ON on rigtest/set")

    # An empty retained config removes the device and its entities.
    broker.publish(f"{PREFIX}/device/rigtest/config", b"", retain=True)
    harig.wait_until(lambda: ha.entity_by_unique_id("mqtt", "rigtest_light") is None, 30,
                     "the light to leave the entity registry", check=ha.check_alive)
    harig.wait_until(lambda: not any(["mqtt", "rigtest_device"] in d["identifiers"] for d in ha.devices()), 30,
                     "the device to leave the device registry", check=ha.check_alive)
    broker.publish("rigtest/state", b"", retain=True)
