"""The Matter stage's checks of several fabrics (controller.py's fabric-* subcommands): a controller opens a
commissioning window for another, reads the node's fabric list as the node shows it unfiltered, removes a fabric,
and finds a removed fabric's node unreachable. Each function takes the controller and the parsed arguments and
returns a JSON-able dict, or raises Failed."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
from typing import Any


class Failed(Exception):
    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


async def open_window(ctrl, args: argparse.Namespace) -> dict[str, Any]:
    """OpenCommissioningWindow (enhanced, a random passcode the controller makes), then the window's attributes."""
    from chip import clusters as Clusters

    params = await ctrl.ctrl.OpenCommissioningWindow(nodeid=args.node_id, timeout=args.window_seconds, iteration=1000,
                                                     discriminator=args.discriminator, option=1)
    attrs = (await ctrl.ctrl.ReadAttribute(args.node_id, [(0, Clusters.AdministratorCommissioning)]))[0]
    window = {a.__name__: v for a, v in attrs[Clusters.AdministratorCommissioning].items() if a.__name__ != "DataVersion"}
    status = int(window.get("WindowStatus", -1))
    if status != 1:
        raise Failed(f"WindowStatus is {status} after OpenCommissioningWindow, not 1 (EnhancedWindowOpen)")
    return {"passcode": params.setupPinCode, "manual": params.setupManualCode, "qr": params.setupQRCode,
            "window_status": status, "admin_fabric_index": window.get("AdminFabricIndex")}


async def read_fabrics(ctrl, args: argparse.Namespace) -> dict[str, Any]:
    """The Fabrics attribute unfiltered (every fabric, as the node lists them) and filtered (this fabric's only)."""
    from chip import clusters as Clusters

    creds = Clusters.OperationalCredentials
    everything = (await ctrl.ctrl.ReadAttribute(args.node_id, [(0, creds.Attributes.Fabrics)], fabricFiltered=False))[0]
    own = (await ctrl.ctrl.ReadAttribute(args.node_id, [(0, creds.Attributes.Fabrics),
                                                        (0, creds.Attributes.CurrentFabricIndex)]))[0][creds]

    def entry(f) -> dict[str, Any]:
        key = bytes(f.rootPublicKey)
        return {"index": f.fabricIndex, "fabric_id": f.fabricID, "vendor_id": int(f.vendorID), "node_id": f.nodeID,
                "label": f.label, "root_fingerprint": hashlib.sha256(key).hexdigest()[:16].upper()}

    fabrics = [entry(f) for f in everything[creds][creds.Attributes.Fabrics]]
    current = own[creds.Attributes.CurrentFabricIndex]
    filtered = [entry(f) for f in own[creds.Attributes.Fabrics]]
    if [f["index"] for f in filtered] != [current]:
        raise Failed(f"the filtered Fabrics shows {[f['index'] for f in filtered]}, not only this fabric ({current})",
                     {"fabrics": fabrics})
    return {"fabrics": fabrics, "current": current}


async def remove_fabric(ctrl, args: argparse.Namespace) -> dict[str, Any]:
    """OperationalCredentials.RemoveFabric(INDEX) from this controller's administrator."""
    from chip import clusters as Clusters

    creds = Clusters.OperationalCredentials
    response = await ctrl.ctrl.SendCommand(args.node_id, 0, creds.Commands.RemoveFabric(fabricIndex=args.index))
    status = int(response.statusCode)
    if status != 0:
        raise Failed(f"RemoveFabric({args.index}) answered NOCResponse status {status}")
    return {"removed": args.index}


async def expect_unreachable(ctrl, args: argparse.Namespace) -> dict[str, Any]:
    """Passes when this controller can no longer read the node (its fabric is gone): no CASE session comes up."""
    from chip import clusters as Clusters

    try:
        await asyncio.wait_for(ctrl.ctrl.ReadAttribute(args.node_id, [(0, Clusters.BasicInformation.Attributes.VendorID)]),
                               timeout=args.wait)
    except Exception as e:  # the timeout, or the stack's own failure to establish CASE
        return {"unreachable": f"{type(e).__name__}: {e}"}
    raise Failed("the node still answers this controller")
