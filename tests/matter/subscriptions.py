"""Subscriptions of several controllers at once, and after the device restarts (run by tests/matter/controller.py).

`several` runs in one process: the store's controller (112233) lets two more nodes of its fabric administer the node
(an ACL entry it writes), and all three subscribe to NodeLabel with the same maximum interval. One of them subscribing
again with keepSubscriptions=false must leave the others' subscriptions reporting. Then, with --restart-flag PATH, it
writes PATH.ready and waits for PATH.go, which the stage creates once it has restarted the device (the word
"restarted"; anything else: the stage only measured the device meanwhile, and the check ends): every one of the
three subscriptions must report again, on its own (no resubscription by the client), well before its liveness
timeout. The controllers accept the device's CASE (ChipStack's server interactions), which the resumption needs.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

SUBSCRIBERS = (112233, 112234, 112235)
MAX_INTERVAL = 60


class Failed(Exception):
    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


async def until(what: str, predicate, timeout: float, details=None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise Failed(f"timed out after {timeout:.0f} s waiting for {what}", details() if details else None)
        await asyncio.sleep(0.05)


class Watched:
    """A subscription to NodeLabel whose reports and resubscriptions are timestamped."""

    def __init__(self, name: str, transaction) -> None:
        self.name = name
        self.transaction = transaction
        self.reports: list[tuple[float, Any]] = []
        self.resubscriptions: list[float] = []
        transaction.SetAttributeUpdateCallback(
            lambda path, t: self.reports.append((time.monotonic(), t.GetAttribute(path))))
        transaction.SetResubscriptionAttemptedCallback(lambda *_: self.resubscriptions.append(time.monotonic()))

    def reported_since(self, since: float, value: Any = None) -> bool:
        return any(t >= since and (value is None or v == value) for t, v in self.reports)

    def summary(self) -> dict[str, Any]:
        return {"subscription": self.transaction.subscriptionId, "reports": len(self.reports),
                "resubscriptions": len(self.resubscriptions)}


async def several(ctrl, args) -> dict[str, Any]:
    from chip import clusters as Clusters
    from chip.clusters.Types import NullValue

    node = args.node_id
    acl = Clusters.AccessControl
    entry = acl.Structs.AccessControlEntryStruct(
        privilege=acl.Enums.AccessControlEntryPrivilegeEnum.kAdminister,
        authMode=acl.Enums.AccessControlEntryAuthModeEnum.kCase, subjects=list(SUBSCRIBERS), targets=NullValue)
    written = await ctrl.ctrl.WriteAttribute(node, [(0, acl.Attributes.Acl([entry]))])
    if any(getattr(s.Status, "value", s.Status) != 0 for s in written):
        raise Failed(f"writing the ACL answered {written}")
    controllers = [ctrl.ctrl] + [ctrl.admin.NewController(nodeId=n, paaTrustStorePath=str(args.paa))
                                 for n in SUBSCRIBERS[1:]]
    label = (0, Clusters.BasicInformation.Attributes.NodeLabel)
    watched: list[Watched] = []
    try:
        for name, c in zip(SUBSCRIBERS, controllers):
            t = await c.ReadAttribute(node, [label], reportInterval=(0, MAX_INTERVAL), keepSubscriptions=True)
            watched.append(Watched(str(name), t))
        ids = [w.transaction.subscriptionId for w in watched]
        if len(set(ids)) != 3:
            raise Failed(f"three subscriptions expected, got ids {ids}")

        def state() -> dict[str, Any]:
            return {"subscriptions": [w.summary() for w in watched]}

        async def write_label(value: str) -> float:
            at = time.monotonic()
            result = await ctrl.ctrl.WriteAttribute(node, [(0, Clusters.BasicInformation.Attributes.NodeLabel(value))])
            if any(getattr(s.Status, "value", s.Status) != 0 for s in result):
                raise Failed(f"writing NodeLabel answered {result}")
            return at

        at = await write_label("three")
        await until("all three subscriptions to report NodeLabel 'three'",
                    lambda: all(w.reported_since(at, "three") for w in watched), 15, state)

        # The third subscribes again with keepSubscriptions=false: on the device its old subscription goes (the
        # client forgets it first, which tells the device nothing), the others' stay.
        watched[2].transaction.Shutdown()
        fresh = await controllers[2].ReadAttribute(node, [label], reportInterval=(0, MAX_INTERVAL), keepSubscriptions=False)
        watched[2] = Watched(f"{SUBSCRIBERS[2]} (again)", fresh)
        at = await write_label("kept")
        await until("the first two and the third's new subscription to report NodeLabel 'kept'",
                    lambda: all(w.reported_since(at, "kept") for w in watched), 15, state)
        result: dict[str, Any] = {"before_restart": state()}

        if args.restart_flag:
            flag = Path(args.restart_flag)
            before = time.monotonic()
            resubscribed_before = [len(w.resubscriptions) for w in watched]
            flag.with_suffix(".ready").write_text("ready\n")
            go = flag.with_suffix(".go")
            await until("the stage to restart the device", lambda: go.exists(), 120)
            if go.read_text().strip() != "restarted":
                # The stage only measured the device with three subscriptions live.
                return result
            restarted = time.monotonic()
            # Reported again, on the device's own initiative (a report may come before this process sees the flag):
            # within half the maximum interval of the restart (the liveness timeout is longer still), and without
            # the client resubscribing. Nothing changed meanwhile, so a report after `before` is the priming one.
            await until("every subscription to report after the restart",
                        lambda: all(w.reported_since(before) for w in watched), MAX_INTERVAL / 2, state)
            seconds = [round(min(t for t, _ in w.reports if t >= before) - before, 3) for w in watched]
            resubscribed = [len(w.resubscriptions) - n for w, n in zip(watched, resubscribed_before)]
            if any(resubscribed):
                raise Failed(f"the client resubscribed ({resubscribed}) instead of hearing from the device", state())
            at = await write_label("after")
            await until("all three to report NodeLabel 'after' the restart",
                        lambda: all(w.reported_since(at, "after") for w in watched), 15, state)
            result.update({"report_seconds_after_stop": seconds, "restart_seconds": round(restarted - before, 3),
                           "liveness_floor_seconds": MAX_INTERVAL, "after_restart": state()})
        return result
    finally:
        for w in watched:
            w.transaction.Shutdown()
        for c in controllers[1:]:
            c.Shutdown()
