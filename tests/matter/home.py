"""The checks of `matter: {bridge: home}`, run by controller.py's home-* subcommands: hub "sim" (commissioned, its
bridge showing the home) and its peer hub "attic" share one mosquitto in the device's namespace; the attic's light is
reached through sim's bridge. The attic's side is read and driven over MQTT (`ip netns exec NS mosquitto_*`).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any

from bridge import BRIDGED_INFO, Failed, endpoints_by_name, read_all

PEER_PREFIX = "hearth/attic"
PEER_DEVICE, PEER_NAME = "attic-light", "Attic light"


def mqtt_document(ns: str, topic: str) -> dict[str, Any]:
    out = subprocess.run(["ip", "netns", "exec", ns, "mosquitto_sub", "-h", "127.0.0.1", "-t", topic, "-C", "1",
                          "-W", "5"], capture_output=True, text=True, timeout=10)
    if out.returncode != 0 or not out.stdout.strip():
        raise Failed(f"no retained message on {topic}: {out.stderr.strip()}")
    return json.loads(out.stdout.splitlines()[0])


def peer_on_off(ns: str) -> Any:
    doc = mqtt_document(ns, f"{PEER_PREFIX}/devices/{PEER_DEVICE}")
    for t in doc["types"]:
        if "onOff" in t.get("traits", {}):
            return t["traits"]["onOff"]["attributes"].get("onOff")
    raise Failed(f"{PEER_DEVICE} has no onOff", {"document": doc})


async def bridged_endpoint(ctrl, node: int, timeout: float = 30) -> tuple[int, dict]:
    """The peer light's bridged endpoint on sim's bridge, once it is there (the peer's documents arrive after the
    bridging hub's start)."""
    deadline = time.monotonic() + timeout
    while True:
        values = await read_all(ctrl, node)
        ep = endpoints_by_name(values).get(PEER_NAME)
        if ep is not None:
            return ep, values
        if time.monotonic() > deadline:
            raise Failed(f"no bridged node named {PEER_NAME!r}", {"names": endpoints_by_name(values)})
        await asyncio.sleep(0.5)


async def control(ctrl, args) -> dict[str, Any]:
    """The attic's light through sim's bridge: On, then Off, each seen in the attic's own MQTT document and in the
    bridged OnOff attribute; Reachable true while the attic is up."""
    from chip import clusters as C

    ep, values = await bridged_endpoint(ctrl, args.node_id)
    if values[ep][BRIDGED_INFO].get(0x0011) is not True:
        raise Failed("the attic's light is not Reachable while the attic is up", {"basic": values[ep][BRIDGED_INFO]})
    seen = []
    for command, want in ((C.OnOff.Commands.On(), True), (C.OnOff.Commands.Off(), False)):
        await ctrl.ctrl.SendCommand(args.node_id, ep, command)
        deadline = time.monotonic() + 10
        while peer_on_off(args.mqtt_ns) is not want:
            if time.monotonic() > deadline:
                raise Failed(f"{type(command).__name__} through sim's bridge: the attic's document never said onOff {want}")
            await asyncio.sleep(0.2)
        deadline = time.monotonic() + 10
        while True:
            got = (await ctrl.ctrl.ReadAttribute(args.node_id, [(ep, C.OnOff.Attributes.OnOff)]))[ep][C.OnOff][
                C.OnOff.Attributes.OnOff]
            if got is want:
                break
            if time.monotonic() > deadline:
                raise Failed(f"the bridged OnOff stayed {got} after the attic's light became {want}")
            await asyncio.sleep(0.2)
        seen.append(want)
    return {"endpoint": ep, "states": seen, "clusters": sorted(values[ep])}


async def unreachable(ctrl, args) -> dict[str, Any]:
    """Subscribed to the attic light's Reachable (and ReachableChanged) on sim's bridge, the attic hub is killed
    (`--kill-pid`): Reachable is reported false within `--within` seconds of the kill (the attic's broker keep-alive's
    1.5 times, when the broker gives up on it and sends its will, plus the report)."""
    import os
    import signal

    from chip import clusters as C

    from bridge import reported, subscribe, until

    ep, values = await bridged_endpoint(ctrl, args.node_id)
    if values[ep][BRIDGED_INFO].get(0x0011) is not True:
        raise Failed("the attic's light is not Reachable before the attic is killed")
    sub, reports, events = await subscribe(
        ctrl, args.node_id, [(ep, C.BridgedDeviceBasicInformation.Attributes.Reachable)],
        events=[(ep, C.BridgedDeviceBasicInformation, 0)])
    try:
        killed = time.monotonic()
        os.kill(args.kill_pid, signal.SIGKILL)
        await until(f"Reachable false within {args.within} s of the kill",
                    lambda: reported(reports, ep, BRIDGED_INFO, 0x0011, lambda v: v is False), args.within)
        seconds = round(time.monotonic() - killed, 1)
        changed = [e[4] for e in events if e[1] == ep and e[2] == BRIDGED_INFO and e[3] == 0x03]
        if not changed:
            raise Failed("no ReachableChanged event")
        return {"endpoint": ep, "seconds": seconds, "bound": args.within, "reachable_changed": changed}
    finally:
        sub.Shutdown()
