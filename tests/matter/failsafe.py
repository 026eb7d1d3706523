"""Interrupted commissioning, driven by connectedhomeip's controller (subcommands of tests/matter/controller.py).

  commission-fail-at STAGE NAME PAYLOAD  the controller's test commissioner fails on commissioning stage STAGE (a
                                         CommissioningStage number; NAME is what the stack's log must call it, so a
                                         change of the enum's numbering shows as a failed check, not as another
                                         stage tested); passes when commissioning fails there and CommissioningComplete
                                         is never sent. The commissioner then disarms the fail-safe (ArmFailSafe 0)
                                         where it still can; else the device's fail-safe expires by itself.
  commission-premature PAYLOAD           the test commissioner sends CommissioningComplete right after AddNOC, over
                                         PASE; passes when the device refuses it and commissioning fails.
  arm-and-leave PAYLOAD SECONDS          PASE, ArmFailSafe(SECONDS), CSRRequest, then the process exits without
                                         disarming or closing anything: the device's fail-safe must expire by itself.
  fabric-count                           passes when the device (over CASE, this store's fabric) holds exactly one
                                         fabric and one trusted root: nothing of the interrupted attempts is left.

The device's side (what it logs when the fail-safe rolls back, and that it takes a clean commissioning afterwards)
is checked by scripts/test-matter's interrupted_commissioning.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any


def failed_stages(log: str) -> list[str]:
    """The stage names the stack's log reports as failed."""
    names = re.findall(r"[Ee]rror on commissioning step '(\w+)'", log)
    # A failure the test commissioner makes up is reported to the auto-commissioner, not by the device.
    for stage, error in re.findall(r"Going from commissioning step '(\w+)' with lastErr = '([^']*)'", log):
        if error not in ("Success", "CHIP_NO_ERROR") and "0x00000000" not in error:
            names.append(stage)
    return names


def stages_done(log: str) -> list[str]:
    """The stage names the stack's log reports as finished, in order."""
    return re.findall(r"[Ss]uccessfully finished commissioning step '(\w+)'", log)


def same_stage(a: str, b: str) -> bool:
    """Stage names as the enum spells them (kArmFailsafe) or as the log does (ArmFailSafe)."""
    return a.lower().removeprefix("k") == b.lower().removeprefix("k")


async def commission_fail_at(ctrl, args: argparse.Namespace, native_log, check_failed) -> dict[str, Any]:
    c = ctrl.ctrl
    c.ResetTestCommissioner()
    if not c.SetTestCommissionerSimulateFailureOnStage(args.stage):
        raise check_failed(f"the test commissioner does not simulate a failure on stage {args.stage}")
    start = time.monotonic()
    # The Python call does not always raise when the test commissioner fails a stage: the stack's log says.
    try:
        outcome = f"CommissionWithCode returned node {await c.CommissionWithCode(args.payload, args.node_id)}"
    except Exception as e:
        outcome = f"{type(e).__name__}: {e}"
    log = native_log()
    failed, done = failed_stages(log), stages_done(log)
    result = {"stage": args.stage, "expected": args.name, "failed_at": sorted(set(failed)), "outcome": outcome,
              "seconds": round(time.monotonic() - start, 3)}
    if not any(same_stage(name, args.name) for name in failed):
        raise check_failed(f"commissioning did not fail on {args.name} (stage {args.stage}): failed at {failed or 'no stage'}",
                           result)
    if any(same_stage(name, "kSendComplete") for name in done):
        raise check_failed("CommissioningComplete was sent after the failed stage", result)
    return result


async def commission_premature(ctrl, args: argparse.Namespace, native_log, check_failed) -> dict[str, Any]:
    c = ctrl.ctrl
    c.ResetTestCommissioner()
    if not c.SetTestCommissionerPrematureCompleteAfter(args.stage):
        raise check_failed(f"the test commissioner does not complete prematurely after stage {args.stage}")
    try:
        node = await c.CommissionWithCode(args.payload, args.node_id)
    except Exception as e:
        return {"stage": args.stage, "refused": f"{type(e).__name__}: {e}", "done": stages_done(native_log())}
    raise check_failed(f"commissioning completed (node {node}) with CommissioningComplete sent before CASE")


async def arm_and_leave(ctrl, args: argparse.Namespace, native_log, check_failed, emit) -> dict[str, Any]:
    from chip import clusters as Clusters

    c = ctrl.ctrl
    await c.EstablishPASESession(args.payload, args.node_id)
    general = Clusters.GeneralCommissioning.Commands
    armed = await c.SendCommand(args.node_id, 0, general.ArmFailSafe(expiryLengthSeconds=args.seconds, breadcrumb=7))
    if armed.errorCode != 0:
        raise check_failed(f"ArmFailSafe({args.seconds}) answered {armed}")
    csr = await c.SendCommand(args.node_id, 0, Clusters.OperationalCredentials.Commands.CSRRequest(CSRNonce=os.urandom(32)))
    result = {"armed_seconds": args.seconds, "csr_bytes": len(csr.NOCSRElements), "left_at": time.time()}
    # Gone without a word: no ArmFailSafe(0), no CloseSession, no controller shutdown.
    emit({"ok": True, "command": args.command, **result}, 0)
    return result


async def fabric_count(ctrl, args: argparse.Namespace, native_log, check_failed) -> dict[str, Any]:
    from chip import clusters as Clusters

    creds = Clusters.OperationalCredentials.Attributes
    read = await ctrl.ctrl.ReadAttribute(args.node_id, [(0, creds.Fabrics), (0, creds.TrustedRootCertificates),
                                                        (0, creds.CommissionedFabrics)], fabricFiltered=False)
    values = read[0][Clusters.OperationalCredentials]
    result = {"fabrics": len(values[creds.Fabrics]), "roots": len(values[creds.TrustedRootCertificates]),
              "commissioned": values[creds.CommissionedFabrics]}
    if result != {"fabrics": 1, "roots": 1, "commissioned": 1}:
        raise check_failed(f"the device holds more than this controller's fabric: {result}", result)
    return result


def add_subcommands(sub) -> None:
    p = sub.add_parser("commission-fail-at")
    p.add_argument("stage", type=int)
    p.add_argument("name")
    p.add_argument("payload")
    p = sub.add_parser("commission-premature")
    p.add_argument("payload")
    p.add_argument("--stage", type=int, default=18, help="the stage after which CommissioningComplete goes (kSendNOC)")
    p = sub.add_parser("arm-and-leave")
    p.add_argument("payload")
    p.add_argument("seconds", type=int)
    sub.add_parser("fabric-count")


# The subcommands that need connectedhomeip's test commissioner in the controller.
TEST_COMMISSIONER = {"commission-fail-at", "commission-premature"}
