"""The bridge's checks, run by controller.py's bridge-* subcommands against hearthd on the simulated board
(examples/sim.yaml): connectedhomeip's controller on one side, the hub's MQTT documents and requests on the other
(mosquitto in the device's namespace, reached with `ip netns exec NS mosquitto_*`).

Values that the checks expect are written here by hand from the configuration and the Matter specification, not
computed by the mapping under test; the rest are compared with the MQTT documents.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any, Callable

PREFIX = "hearth/sim"


def jsonable(value: Any) -> Any:
    """controller.py's conversion of cluster values to JSON (it runs as __main__)."""
    import __main__

    return __main__.jsonable(value)

# Cluster ids the checks use.
DESCRIPTOR, BRIDGED_INFO, ONOFF, LEVEL, COLOR, IDENTIFY = 0x001D, 0x0039, 0x0006, 0x0008, 0x0300, 0x0003
SWITCH, BOOLEAN_STATE = 0x003B, 0x0045


class Failed(Exception):
    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


# --- MQTT, in the device's namespace ---------------------------------------------------------------------------

def mqtt_get(ns: str, topic: str, timeout: float = 5.0) -> Any:
    """The retained message on `topic`, as JSON."""
    out = subprocess.run(["ip", "netns", "exec", ns, "mosquitto_sub", "-h", "127.0.0.1", "-t", topic, "-C", "1",
                          "-W", str(int(timeout))], capture_output=True, text=True, timeout=timeout + 5)
    if out.returncode != 0 or not out.stdout.strip():
        raise Failed(f"no retained message on {topic}: {out.stderr.strip()}")
    return json.loads(out.stdout.splitlines()[0])


def mqtt_request(ns: str, device: str, request: dict[str, Any]) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "mosquitto_pub", "-h", "127.0.0.1", "-q", "1",
                    "-t", f"{PREFIX}/devices/{device}/set", "-m", json.dumps(request)], check=True, timeout=10)


def doc_value(doc: dict[str, Any], trait: str, attribute: str) -> Any:
    for t in doc["types"]:
        if trait in t.get("traits", {}):
            return t["traits"][trait]["attributes"].get(attribute)
    raise Failed(f"device {doc['id']} has no trait {trait}")


async def mqtt_until(ns: str, device: str, check: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
    """The device's document once `check` holds for it."""
    deadline = time.monotonic() + timeout
    while True:
        doc = mqtt_get(ns, f"{PREFIX}/devices/{device}")
        if check(doc):
            return doc
        if time.monotonic() > deadline:
            raise Failed(f"{device}'s MQTT document never showed the change", {"document": doc})
        await asyncio.sleep(0.2)


# --- reading the bridge ----------------------------------------------------------------------------------------

# Attribute ids by their lowerCamelCase names (the MQTT documents' keys), per cluster id, as the controller names them.
ATTRIBUTE_IDS: dict[int, dict[str, int]] = {}


def ids(result: dict) -> dict[int, dict[int, dict[int, Any]]]:
    """A read's result by endpoint, cluster id and attribute id (what the controller decoded, as JSON)."""
    out: dict[int, dict[int, dict[int, Any]]] = {}
    for ep, clusters in result.items():
        for cluster, attributes in clusters.items():
            cid = getattr(cluster, "id", None)
            if cid is None:
                continue
            for attr, value in attributes.items():
                aid = getattr(attr, "attribute_id", None)
                if aid is None:
                    continue
                name = attr.__name__
                ATTRIBUTE_IDS.setdefault(cid, {})[name[:1].lower() + name[1:]] = aid
                out.setdefault(ep, {}).setdefault(cid, {})[aid] = jsonable(value)
    return out


async def read_all(ctrl, node: int) -> dict[int, dict[int, dict[int, Any]]]:
    """Everything, by one wildcard read; retried while the node is not reachable yet (it may have just restarted:
    each try resolves its _matter._tcp record and sets up a CASE session)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return ids(await ctrl.ctrl.ReadAttribute(node, ["*"]))
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def endpoints_by_name(values: dict[int, dict[int, dict[int, Any]]]) -> dict[str, int]:
    """Each bridged node's endpoint by its NodeLabel."""
    return {clusters[BRIDGED_INFO][0x0005]: ep for ep, clusters in values.items() if BRIDGED_INFO in clusters}


def device_types(values, ep: int) -> list[int]:
    return [t["deviceType"] for t in values[ep][DESCRIPTOR][0x0000]]


async def layout(ctrl, args) -> dict[str, Any]:
    """Commissioned hearthd on examples/sim.yaml: a wildcard read of every endpoint, checked by hand, then compared
    with the MQTT documents."""
    values = await read_all(ctrl, args.node_id)
    problems: list[str] = []
    names = endpoints_by_name(values)

    def expect(what: str, got: Any, want: Any) -> None:
        if got != want:
            problems.append(f"{what} is {got!r}, expected {want!r}")

    # The shape: root, aggregator at 1, a bridged node per device (12 in examples/sim.yaml), the climate's
    # temperature as a part of its bridged node.
    expect("endpoint 1's device types", device_types(values, 1), [0x000E])
    bridged = sorted(ep for ep in values if ep > 1 and 0x0013 in device_types(values, ep))
    expect("the number of bridged nodes", len(bridged), 12)
    expect("the aggregator's PartsList", sorted(values[1][DESCRIPTOR][0x0003]), sorted(ep for ep in values if ep > 1))
    expect("the root's PartsList", sorted(values[0][DESCRIPTOR][0x0003]), sorted(ep for ep in values if ep > 0))
    for name in ("Porch light", "Kitchen lamp", "Desk strip", "Bathroom climate", "Hall switch", "Front door",
                 "Hall motion", "Desk plug", "Garden thermometer", "Bedroom fan", "Office fan", "Living room blind"):
        if name not in names:
            problems.append(f"no bridged node has NodeLabel {name!r}")
    if problems:
        raise Failed("; ".join(problems), {"names": names})
    porch, lamp, strip = names["Porch light"], names["Kitchen lamp"], names["Desk strip"]
    climate, switch, door = names["Bathroom climate"], names["Hall switch"], names["Front door"]
    expect("Porch light's device types", device_types(values, porch), [0x0013, 0x0100])
    expect("Porch light's OnOff FeatureMap (Lighting)", values[porch][ONOFF][0xFFFC], 1)
    expect("Porch light's OnOff ClusterRevision", values[porch][ONOFF][0xFFFD], 6)
    expect("Porch light's Reachable", values[porch][BRIDGED_INFO][0x0011], True)
    expect("Kitchen lamp's VendorName (info:)", values[lamp][BRIDGED_INFO].get(0x0001), "Hearth")
    expect("Kitchen lamp's LevelControl FeatureMap (OnOff, Lighting)", values[lamp][LEVEL][0xFFFC], 3)
    expect("Kitchen lamp's MinLevel", values[lamp][LEVEL][0x0002], 1)
    expect("Kitchen lamp's MaxLevel", values[lamp][LEVEL][0x0003], 254)
    expect("Kitchen lamp's OnOffTransitionTime", values[lamp][LEVEL][0x0010], 5)
    expect("Desk strip's device types", device_types(values, strip), [0x0013, 0x010C])
    expect("Desk strip's ColorControl FeatureMap (ColorTemperature)", values[strip][COLOR][0xFFFC], 0x10)
    expect("Hall switch's device types", device_types(values, switch), [0x0013, 0x000F])
    expect("Front door's device types", device_types(values, door), [0x0013, 0x0015])
    parts = values[climate][DESCRIPTOR][0x0003]
    expect("Bathroom climate's parts", len(parts), 1)
    if len(parts) == 1:
        expect("Bathroom climate's part's device types", device_types(values, parts[0]), [0x0302])
    unique = [clusters[BRIDGED_INFO][0x0012] for clusters in values.values() if BRIDGED_INFO in clusters]
    expect("UniqueIDs distinct", len(set(unique)), len(unique))
    # Every cluster answered every attribute its AttributeList names: the read is complete.
    for ep, clusters in values.items():
        for cid, attrs in clusters.items():
            listed = attrs.get(0xFFFB)
            if isinstance(listed, list):
                missing = [a for a in listed if a not in attrs]
                if missing:
                    problems.append(f"endpoint {ep} cluster 0x{cid:04X}: attributes {missing} listed but not read")
    # The rest equal the MQTT documents: every number, boolean and null of a trait whose cluster is on the
    # endpoint (enumerations are names in JSON: left out; measurements drift between the two reads: left out).
    compared = 0
    summary = mqtt_get(args.mqtt_ns, f"{PREFIX}/devices")
    drifting = {0x0402, 0x0405, 0x0090, 0x0091}
    for entry in summary:
        doc = mqtt_get(args.mqtt_ns, f"{PREFIX}/devices/{entry['id']}")
        ep = names.get(doc["name"])
        if ep is None:
            continue
        for n, t in enumerate(doc["types"]):
            type_ep = ep if n == 0 else next((p for p in values[ep][DESCRIPTOR][0x0003]), None)
            if type_ep is None:
                continue
            for trait in t.get("traits", {}).values():
                cid = trait.get("clusterId")
                if cid not in values[type_ep] or cid in drifting:
                    continue
                attribute_list = values[type_ep][cid].get(0xFFFB, [])
                for name, value in trait["attributes"].items():
                    if isinstance(value, str) or isinstance(value, (dict, list)):
                        continue
                    aid = ATTRIBUTE_IDS.get(cid, {}).get(name)
                    if aid is None:
                        problems.append(f"{doc['id']}.{name} (cluster 0x{cid:04X}) is in MQTT but Matter has no such attribute")
                        continue
                    if aid not in attribute_list:
                        problems.append(f"{doc['id']}.{name} is in MQTT but not in Matter's AttributeList")
                        continue
                    compared += 1
                    if values[type_ep][cid].get(aid) != value:
                        problems.append(f"{doc['id']}.{name}: Matter {values[type_ep][cid].get(aid)!r}, MQTT {value!r}")
    if problems:
        raise Failed("; ".join(problems[:20]), {"names": names})
    return {"names": names, "endpoints": len(values), "compared_with_mqtt": compared}


async def subscribe(ctrl, node: int, attributes: list, events: list | None = None, interval=(0, 10)):
    """A subscription whose reports land in the returned lists: (time, endpoint, cluster id, attribute id, value)
    and (time, endpoint, cluster id, event id, data)."""
    reports: list[tuple] = []
    seen_events: list[tuple] = []
    sub = await ctrl.ctrl.ReadAttribute(node, attributes, reportInterval=interval) if not events else \
        await ctrl.ctrl.Read(node, attributes=attributes, events=events, reportInterval=interval)

    def on_attribute(path, transaction) -> None:
        value = transaction.GetAttribute(path)
        reports.append((time.monotonic(), path.Path.EndpointId, path.Path.ClusterId, path.Path.AttributeId,
                        jsonable(value)))

    def on_event(event, transaction) -> None:
        header = event.Header
        seen_events.append((time.monotonic(), header.EndpointId, header.ClusterId, header.EventId,
                            jsonable(event.Data)))

    sub.SetAttributeUpdateCallback(on_attribute)
    if events:
        sub.SetEventUpdateCallback(on_event)
    return sub, reports, seen_events


async def until(what: str, predicate: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise Failed(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def reported(reports, ep: int, cid: int, aid: int, want: Callable[[Any], bool]) -> bool:
    return any(r[1] == ep and r[2] == cid and r[3] == aid and want(r[4]) for r in reports)


async def commands(ctrl, args) -> dict[str, Any]:
    """Invoke OnOff, LevelControl with a transition, ColorControl and Identify: the device and its MQTT document
    change, and a subscription reports it."""
    from chip import clusters as C

    values = await read_all(ctrl, args.node_id)
    names = endpoints_by_name(values)
    lamp, strip = names["Kitchen lamp"], names["Desk strip"]
    sub, reports, _ = await subscribe(ctrl, args.node_id, [
        (lamp, C.OnOff.Attributes.OnOff), (lamp, C.LevelControl.Attributes.CurrentLevel),
        (strip, C.ColorControl.Attributes.ColorTemperatureMireds), (lamp, C.Identify.Attributes.IdentifyTime)])
    out: dict[str, Any] = {}
    try:
        await ctrl.ctrl.SendCommand(args.node_id, lamp, C.OnOff.Commands.On())
        await until("OnOff true reported", lambda: reported(reports, lamp, ONOFF, 0, lambda v: v is True), 10)
        await mqtt_until(args.mqtt_ns, "kitchen-lamp", lambda d: doc_value(d, "onOff", "onOff") is True, 10)
        # A one-second transition: reports along the way end at the target.
        await ctrl.ctrl.SendCommand(args.node_id, lamp, C.LevelControl.Commands.MoveToLevel(
            level=77, transitionTime=10, optionsMask=0, optionsOverride=0))
        await until("CurrentLevel 77 reported", lambda: reported(reports, lamp, LEVEL, 0, lambda v: v == 77), 15)
        await mqtt_until(args.mqtt_ns, "kitchen-lamp", lambda d: doc_value(d, "levelControl", "currentLevel") == 77, 10)
        await ctrl.ctrl.SendCommand(args.node_id, strip, C.OnOff.Commands.On())
        await ctrl.ctrl.SendCommand(args.node_id, strip, C.ColorControl.Commands.MoveToColorTemperature(
            colorTemperatureMireds=250, transitionTime=0, optionsMask=0, optionsOverride=0))
        await until("ColorTemperatureMireds 250 reported",
                    lambda: reported(reports, strip, COLOR, 0x0007, lambda v: v == 250), 10)
        await mqtt_until(args.mqtt_ns, "desk-strip",
                         lambda d: doc_value(d, "colorControl", "colorTemperatureMireds") == 250, 10)
        await ctrl.ctrl.SendCommand(args.node_id, lamp, C.Identify.Commands.Identify(identifyTime=3))
        await until("IdentifyTime reported", lambda: reported(reports, lamp, IDENTIFY, 0, lambda v: v and v > 0), 10)
        out["reports"] = len(reports)
        out["level_steps"] = sum(1 for r in reports if r[1] == lamp and r[2] == LEVEL)
    finally:
        sub.Shutdown()
    return out


async def from_outside(ctrl, args) -> dict[str, Any]:
    """An MQTT request, a wall-switch press and a contact closing reach a Matter subscriber: attributes and the
    Switch's and BooleanState's events."""
    from chip import clusters as C

    values = await read_all(ctrl, args.node_id)
    names = endpoints_by_name(values)
    porch, switch, door, lamp = names["Porch light"], names["Hall switch"], names["Front door"], names["Kitchen lamp"]
    before_lamp = values[lamp][ONOFF][0]
    sub, reports, events = await subscribe(ctrl, args.node_id, [
        (porch, C.OnOff.Attributes.OnOff), (door, C.BooleanState.Attributes.StateValue),
        (lamp, C.OnOff.Attributes.OnOff), (switch, C.Switch.Attributes.CurrentPosition),
    ], events=[(switch, C.Switch, 0), (door, C.BooleanState, 0)])
    try:
        mqtt_request(args.mqtt_ns, "porch-light", {"transaction": "m1", "trait": "onOff", "command": "on"})
        await until("porch light's OnOff reported", lambda: reported(reports, porch, ONOFF, 0, lambda v: v is True), 10)
        mqtt_request(args.mqtt_ns, "hall-switch", {"transaction": "m2", "trait": "dev.hearth.simulatedSwitch",
                                                   "command": "press"})
        await until("the Switch's InitialPress event", lambda: any(
            e[1] == switch and e[2] == SWITCH and e[3] == 0x01 for e in events), 10)
        mqtt_request(args.mqtt_ns, "hall-switch", {"transaction": "m3", "trait": "dev.hearth.simulatedSwitch",
                                                   "command": "release"})
        # The switch controls the kitchen lamp: it toggled.
        await until("the kitchen lamp toggled by the switch",
                    lambda: reported(reports, lamp, ONOFF, 0, lambda v: v is (not before_lamp)), 10)
        mqtt_request(args.mqtt_ns, "front-door", {"transaction": "m4", "trait": "dev.hearth.simulatedSwitch",
                                                  "command": "press"})
        await until("BooleanState StateValue true", lambda: reported(reports, door, BOOLEAN_STATE, 0, lambda v: v is True), 10)
        await until("BooleanState's StateChange event", lambda: any(
            e[1] == door and e[2] == BOOLEAN_STATE and e[3] == 0x00 for e in events), 10)
        switch_events = sorted({e[3] for e in events if e[1] == switch})
        return {"switch_events": switch_events, "events": len(events), "reports": len(reports)}
    finally:
        sub.Shutdown()


async def refused(ctrl, args) -> dict[str, Any]:
    """A value the engine refuses: the status the table says (CONSTRAINT_ERROR), and nothing changed."""
    from chip import clusters as C
    from chip.interaction_model import InteractionModelError, Status

    values = await read_all(ctrl, args.node_id)
    lamp = endpoints_by_name(values)["Kitchen lamp"]
    before = values[lamp][LEVEL][0]
    try:
        await ctrl.ctrl.SendCommand(args.node_id, lamp, C.LevelControl.Commands.MoveToLevel(
            level=255, transitionTime=0, optionsMask=0, optionsOverride=0))
    except InteractionModelError as e:
        if e.status != Status.ConstraintError:
            raise Failed(f"MoveToLevel(255) answered {e.status}, expected CONSTRAINT_ERROR")
        status = str(e.status)
    else:
        raise Failed("MoveToLevel(255) was accepted")
    after = (await ctrl.ctrl.ReadAttribute(args.node_id, [(lamp, C.LevelControl.Attributes.CurrentLevel)]))
    level = after[lamp][C.LevelControl][C.LevelControl.Attributes.CurrentLevel]
    if level != before:
        raise Failed(f"CurrentLevel moved from {before} to {level} on a refused command")
    doc = mqtt_get(args.mqtt_ns, f"{PREFIX}/devices/kitchen-lamp")
    if doc_value(doc, "levelControl", "currentLevel") != before:
        raise Failed("the MQTT document's currentLevel moved on a refused command")
    return {"status": status, "level": level}


async def rename(ctrl, args) -> dict[str, Any]:
    """NodeLabel written from Matter renames the device (MQTT sees it); a rename over MQTT is NodeLabel."""
    from chip import clusters as C

    values = await read_all(ctrl, args.node_id)
    ep = endpoints_by_name(values)["Office fan"]
    label = C.BridgedDeviceBasicInformation.Attributes.NodeLabel
    result = await ctrl.ctrl.WriteAttribute(args.node_id, [(ep, label("Study fan"))])
    if result[0].Status != 0:
        raise Failed(f"writing NodeLabel answered {result[0].Status}")
    await mqtt_until(args.mqtt_ns, "office-fan", lambda d: d["name"] == "Study fan", 10)
    mqtt_request(args.mqtt_ns, "office-fan", {"transaction": "r1", "setName": "Office fan"})

    async def read_label() -> Any:
        got = await ctrl.ctrl.ReadAttribute(args.node_id, [(ep, label)])
        return got[ep][C.BridgedDeviceBasicInformation][label]

    deadline = time.monotonic() + 10
    while (name := await read_label()) != "Office fan":
        if time.monotonic() > deadline:
            raise Failed(f"NodeLabel is {name!r} after the MQTT rename")
        await asyncio.sleep(0.2)
    return {"endpoint": ep}


async def reachable(ctrl, args) -> dict[str, Any]:
    """The front door's contact chip unplugged for 5 s: Reachable false (with ReachableChanged), then true again."""
    from chip import clusters as C

    values = await read_all(ctrl, args.node_id)
    door = endpoints_by_name(values)["Front door"]
    sub, reports, events = await subscribe(
        ctrl, args.node_id, [(door, C.BridgedDeviceBasicInformation.Attributes.Reachable)],
        events=[(door, C.BridgedDeviceBasicInformation, 0)])
    try:
        mqtt_request(args.mqtt_ns, "front-door", {"transaction": "u1", "trait": "dev.hearth.simulatedSwitch",
                                                  "command": "unplug"})
        await until("Reachable false", lambda: reported(reports, door, BRIDGED_INFO, 0x0011, lambda v: v is False), 15)
        # The contact's traits are offline, the rest (identify, basicInformation) not: the device is partiallyOnline.
        await mqtt_until(args.mqtt_ns, "front-door",
                         lambda d: d["sourceConnectivity"]["connectivityState"] != "online", 10)
        # The chip comes back after 5 s; the binding's retries (1, 2, 4, 8 s …) find it.
        await until("Reachable true again",
                    lambda: [r for r in reports if r[1] == door and r[3] == 0x0011][-1][4] is True, 30)
        changed = [e[4] for e in events if e[1] == door and e[2] == BRIDGED_INFO and e[3] == 0x03]
        if len(changed) < 2:
            raise Failed(f"ReachableChanged events: {changed}, expected false then true")
        return {"reachable_changed": changed}
    finally:
        sub.Shutdown()


async def complete(ctrl, args) -> dict[str, Any]:
    """A wildcard read of a bridge of `--count` devices: every bridged node there, every listed attribute read."""
    values = await read_all(ctrl, args.node_id)
    bridged = [ep for ep in values if ep > 1 and 0x0013 in device_types(values, ep)]
    problems = []
    if len(bridged) != args.count:
        problems.append(f"{len(bridged)} bridged nodes, expected {args.count}")
    attributes = 0
    for ep, clusters in values.items():
        for cid, attrs in clusters.items():
            attributes += len(attrs)
            missing = [a for a in attrs.get(0xFFFB, []) if a not in attrs]
            if missing:
                problems.append(f"endpoint {ep} cluster 0x{cid:04X}: {missing} listed but not read")
    if problems:
        raise Failed("; ".join(problems[:10]))
    return {"bridged": len(bridged), "attributes": attributes}


async def numbers(ctrl, args) -> dict[str, Any]:
    """The endpoint of every bridged node by name, and PartsList of the aggregator (compared across restarts)."""
    values = await read_all(ctrl, args.node_id)
    return {"names": endpoints_by_name(values), "parts": sorted(values[1][DESCRIPTOR][0x0003])}


def cpu_ms(pid: int) -> float:
    """utime + stime of a process, in milliseconds."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def percentiles(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"p50_ms": round(samples[len(samples) // 2], 2),
            "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))], 2)}


async def bench(ctrl, args) -> dict[str, Any]:
    """Matter invoke → report (On or Off on the porch light until the subscription reports the new OnOff), then MQTT
    command → state in the same run (the same request until the device's document shows it, through long-running
    mosquitto_pub and mosquitto_sub in the hub's namespace), and the hub's CPU per Matter command."""
    from chip import clusters as C

    porch = args.endpoint or endpoints_by_name(await read_all(ctrl, args.node_id))["Porch light"]
    sub, reports, _ = await subscribe(ctrl, args.node_id, [(porch, C.OnOff.Attributes.OnOff)])
    matter: list[float] = []
    cpu_before = cpu_ms(args.device_pid) if args.device_pid else None
    onoff = C.OnOff.Attributes.OnOff
    state = (await ctrl.ctrl.ReadAttribute(args.node_id, [(porch, onoff)]))[porch][C.OnOff][onoff]
    try:
        for _ in range(args.count):
            mark = len(reports)
            start = time.monotonic()
            # On and Off, not Toggle, which the stand-in device does not take.
            await ctrl.ctrl.SendCommand(args.node_id, porch, C.OnOff.Commands.Off() if state else C.OnOff.Commands.On())
            await until("the toggle's report", lambda: any(r[4] is (not state) for r in reports[mark:]), 10)
            matter.append((next(r[0] for r in reports[mark:] if r[4] is (not state)) - start) * 1000)
            state = not state
    finally:
        sub.Shutdown()
    cpu = (cpu_ms(args.device_pid) - cpu_before) / args.count if cpu_before is not None else None
    if not args.mqtt_ns:
        return {"samples": args.count, "matter": percentiles(matter),
                "cpu_ms_per_matter_command": round(cpu, 3) if cpu is not None else None}

    topic = f"{PREFIX}/devices/porch-light"
    ns = ["ip", "netns", "exec", args.mqtt_ns]
    watcher = subprocess.Popen(ns + ["mosquitto_sub", "-h", "127.0.0.1", "-t", topic], stdout=subprocess.PIPE,
                               text=True, bufsize=1)
    sender = subprocess.Popen(ns + ["mosquitto_pub", "-h", "127.0.0.1", "-q", "1", "-t", topic + "/set", "-l"],
                              stdin=subprocess.PIPE, text=True, bufsize=1)
    mqtt: list[float] = []
    loop = asyncio.get_running_loop()
    try:
        state = doc_value(json.loads(await loop.run_in_executor(None, watcher.stdout.readline)), "onOff", "onOff")
        for n in range(args.count):
            start = time.monotonic()
            command = "off" if state else "on"
            sender.stdin.write(json.dumps({"transaction": f"b{n}", "trait": "onOff", "command": command}) + "\n")
            sender.stdin.flush()
            while True:
                line = await asyncio.wait_for(loop.run_in_executor(None, watcher.stdout.readline), 10)
                if line and doc_value(json.loads(line), "onOff", "onOff") is (not state):
                    break
            mqtt.append((time.monotonic() - start) * 1000)
            state = not state
    finally:
        sender.terminate()
        watcher.terminate()
    return {"samples": args.count, "matter": percentiles(matter), "mqtt": percentiles(mqtt),
            "cpu_ms_per_matter_command": round(cpu, 3) if cpu is not None else None}
