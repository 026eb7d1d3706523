"""The Matter stage's controller: connectedhomeip's own (home-assistant-chip-core), one call per process.

Each subcommand prints one JSON object on stdout ({"ok": true, …} or {"ok": false, "error": …}) and exits 0 when the
check it names passed, 1 when it failed, 2 on bad usage, 3 when it ran out of time. The controller's own logging goes
to stderr. Run it with the venv's python (scripts/matter-env) inside the rig's controller namespace
(tests/matter/rig.sh, rig_controller), which gives the store its own /data and /tmp.

Commissioning and interaction subcommands need --store DIR: the controller's fabric (its CA, keys and the nodes it
commissioned) lives in DIR/chip-controller.json, so a later process on the same DIR reaches the node over CASE
without pairing again. The commissioned node gets --node-id (default 1).

  commission-qr PAYLOAD                    commission by the QR payload (MT:…)
  commission-manual CODE                   commission by the manual pairing code
  commission-discriminator DISC PASSCODE   CommissionOnNetwork filtered by the long discriminator
  commission-wrong-passcode DISC PASSCODE  passes when commissioning with this (wrong) passcode fails
  read-basic                               BasicInformation of endpoint 0, every attribute
  read-descriptor                          Descriptor of every endpoint (DeviceTypeList, ServerList, PartsList, …)
  check-root-node                          what the controller does not check: the root node's mandatory clusters and
                                           commands, a fabric index of 1…254, Descriptor lists without duplicates
  invoke-armfailsafe                       GeneralCommissioning.ArmFailSafe(60) then ArmFailSafe(0) on endpoint 0
  invoke-identify ENDPOINT                 Identify.Identify(5) on ENDPOINT, then reads IdentifyTime
  read-after-restart                       BasicInformation again, from a fresh process, over CASE only
  fabric-open-window [--window-seconds S] [--discriminator D]
                                           OpenCommissioningWindow (enhanced, random passcode); prints its codes
  fabric-read                              Fabrics unfiltered (every fabric) and CurrentFabricIndex
  fabric-remove INDEX                      OperationalCredentials.RemoveFabric(INDEX)
  fabric-unreachable [--wait S]            passes when this controller can no longer read the node
  subscriptions-several [--restart-flag F] three controllers of the fabric subscribed at once, keepSubscriptions=false
                                           of one leaving the others; with F, after the device restarts, all three
                                           report again (tests/matter/subscriptions.py)
  bridge-layout, bridge-commands, bridge-from-outside, bridge-refused, bridge-rename, bridge-reachable,
  bridge-numbers, bridge-complete, bridge-bench
                                           the bridge's checks (tests/matter/bridge.py) against hearthd on
                                           examples/sim.yaml; --mqtt-ns NS names the namespace of its mosquitto
  home-control, home-unreachable          the checks of `matter: {bridge: home}` (tests/matter/home.py): a peer
                                           hub's light through the bridge; Reachable false once the peer is killed
  commission-fail-at, commission-premature, arm-and-leave, fabric-count
                                           interrupted commissioning (tests/matter/failsafe.py)

Oracles (no network, no store): the controller's own codecs, to check what Hearth's code produces. The setup-payload
ones start the native library, so they too need a private /data and /tmp: `scripts/test-matter --oracle …` runs them
so (tests/matter/rig.sh, rig_private_mounts).
  tlv-decode HEX                           TLV → typed JSON elements (see tlv_to_json)
  tlv-encode JSON                          typed JSON elements → TLV hex
  parse-qr PAYLOAD, parse-manual CODE      the setup payload's fields
  make-codes PASSCODE DISC VID PID         the QR payload and manual code chip makes for these
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import dataclasses
import enum
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bridge  # noqa: E402  (tests/matter/bridge.py: the bridge's checks)
import subscriptions  # noqa: E402  (tests/matter/subscriptions.py: several subscribers, and restarts)
import home  # noqa: E402  (tests/matter/home.py: the checks of `bridge: home`)
import fabrics  # noqa: E402  (tests/matter/fabrics.py: several fabrics)
import failsafe  # noqa: E402  (tests/matter/failsafe.py: interrupted commissioning)
DEFAULT_PAA = HERE.parent.parent / "Tests" / "Matter" / "credentials" / "paa"
CONTROLLER_NODE_ID = 112233
FABRIC_ID = 1
ADMIN_VENDOR_ID = 0xFFF1

# The one line of JSON goes to the real stdout. The native library logs on fd 1: that goes to a file, read by checks
# that need to know where the stack failed and copied to stderr on exit; Python's own output goes to stderr.
_result_out = os.fdopen(os.dup(1), "w")
_native_log = tempfile.TemporaryFile()
os.dup2(_native_log.fileno(), 1)
sys.stdout = sys.stderr


def native_log() -> str:
    """What the native library has logged so far."""
    ctypes.CDLL(None).fflush(None)
    _native_log.seek(0)
    return _native_log.read().decode(errors="replace")


class CheckFailed(Exception):
    """The device answered, but not as the check requires; details is what it answered."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


def init_native() -> None:
    """Starts connectedhomeip's native library, which writes /data/chip_*.ini and /tmp/chip_kvs at once: refused unless
    /data and /tmp are mount points, as rig_controller makes them, so the host's /data and /tmp are never written."""
    import chip.native

    with open("/proc/self/mountinfo") as f:
        mount_points = {line.split()[4] for line in f}
    if "/data" not in mount_points or "/tmp" not in mount_points:
        raise CheckFailed("/data or /tmp is not a private mount: run this through tests/matter/rig.sh's rig_controller")
    chip.native.Init(bluetoothAdapter=None)


def emit(result: dict[str, Any], code: int) -> None:
    sys.stderr.write(native_log())
    sys.stderr.flush()
    _result_out.write(json.dumps(result, sort_keys=True) + "\n")
    _result_out.flush()
    # os._exit: past this point the native stack may already be shut down, and the interpreter's own teardown of
    # the library's objects is what aborts at exit.
    os._exit(code)


def jsonable(value: Any) -> Any:
    """Cluster values as JSON: bytes as hex, enums as their number, structs as objects, Null as null."""
    from chip.clusters.Attribute import ValueDecodeFailure
    from chip.clusters.Types import NullValue

    if value is None or value is NullValue:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, ValueDecodeFailure):
        return {"error": str(value.Reason)}
    if dataclasses.is_dataclass(value):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return repr(value)


# --- the controller ----------------------------------------------------------------------------------------------

class Controller:
    """A controller on the store's fabric: made on first use, loaded from the store afterwards."""

    def __init__(self, store: Path, paa: Path, serve: bool = False, use_test_commissioner: bool = False) -> None:
        import chip.CertificateAuthority as CA
        from chip.ChipStack import ChipStack

        if not paa.is_dir() or not list(paa.glob("*.der")):
            raise CheckFailed(f"no *.der PAA certificates in {paa}")
        store.mkdir(parents=True, exist_ok=True)
        init_native()
        self.stack = ChipStack(persistentStoragePath=str(store / "chip-controller.json"), enableServerInteractions=serve)
        self.ca_mgr = CA.CertificateAuthorityManager(chipStack=self.stack)
        self.ca_mgr.LoadAuthoritiesFromStorage()
        self.fabric_was_stored = bool(self.ca_mgr.activeCaList and self.ca_mgr.activeCaList[0].adminList)
        if not self.ca_mgr.activeCaList:
            self.ca_mgr.NewCertificateAuthority()
        ca = self.ca_mgr.activeCaList[0]
        admin = ca.adminList[0] if ca.adminList else ca.NewFabricAdmin(vendorId=ADMIN_VENDOR_ID, fabricId=FABRIC_ID)
        self.admin = admin
        self.ctrl = admin.NewController(nodeId=CONTROLLER_NODE_ID, paaTrustStorePath=str(paa),
                                        useTestCommissioner=use_test_commissioner)

    def shutdown(self) -> None:
        # All three, in this order, or the interpreter aborts at exit.
        self.ctrl.Shutdown()
        self.ca_mgr.Shutdown()
        self.stack.Shutdown()


async def commission(ctrl: Controller, how: str, args: argparse.Namespace) -> dict[str, Any]:
    from chip.ChipDeviceCtrl import DiscoveryFilterType

    start = time.monotonic()
    if how == "qr":
        node = await ctrl.ctrl.CommissionWithCode(args.payload, args.node_id)
    elif how == "manual":
        node = await ctrl.ctrl.CommissionWithCode(args.code, args.node_id)
    else:
        node = await ctrl.ctrl.CommissionOnNetwork(args.node_id, args.passcode, DiscoveryFilterType.LONG_DISCRIMINATOR,
                                                   args.discriminator, discoveryTimeoutMsec=int(args.timeout * 1000))
    seconds = time.monotonic() - start
    return {"node_id": node, "seconds": round(seconds, 3)}


async def commission_wrong_passcode(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    from chip.ChipDeviceCtrl import DiscoveryFilterType

    start = time.monotonic()
    try:
        node = await ctrl.ctrl.CommissionOnNetwork(args.node_id, args.passcode, DiscoveryFilterType.LONG_DISCRIMINATOR,
                                                   args.discriminator, discoveryTimeoutMsec=int(args.timeout * 1000))
    except Exception as e:
        # The failure this check expects is PASE's: the device's confirmation does not verify with this passcode.
        # The exception does not say which step failed; the stack's log does.
        pase = [line for line in native_log().splitlines()
                if "Failed to verify peer's MAC" in line or "Failed during PASE session setup" in line]
        if not pase:
            raise CheckFailed(f"commissioning failed, but not at PASE: {type(e).__name__}: {e}")
        return {"refused": f"{type(e).__name__}: {e}", "pase": pase[0].split("] ", 2)[-1],
                "seconds": round(time.monotonic() - start, 3)}
    raise CheckFailed(f"commissioning with the wrong passcode {args.passcode} succeeded (node {node})")


async def read_cluster(ctrl: Controller, node: int, endpoint: int | None, cluster) -> dict[str, Any]:
    path = cluster if endpoint is None else (endpoint, cluster)  # a bare cluster: every endpoint
    result = await ctrl.ctrl.ReadAttribute(node, [path])
    out: dict[str, Any] = {}
    for ep, clusters in sorted(result.items()):
        attrs = clusters.get(cluster, {})
        out[str(ep)] = {a.__name__: jsonable(v) for a, v in attrs.items() if a.__name__ != "DataVersion"}
    return out


async def read_basic(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    from chip import clusters as Clusters

    start = time.monotonic()
    attrs = (await read_cluster(ctrl, args.node_id, 0, Clusters.BasicInformation)).get("0")
    if not attrs:
        raise CheckFailed("no BasicInformation on endpoint 0")
    for required in ("VendorID", "ProductID", "SoftwareVersion", "DataModelRevision"):
        if required not in attrs or isinstance(attrs[required], dict):
            raise CheckFailed(f"BasicInformation.{required} missing or unreadable: {attrs.get(required)}", {"basic": attrs})
    return {"basic": attrs, "seconds": round(time.monotonic() - start, 3)}


async def read_descriptor(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    from chip import clusters as Clusters

    endpoints = await read_cluster(ctrl, args.node_id, None, Clusters.Descriptor)
    root = endpoints.get("0")
    if not root:
        raise CheckFailed("no Descriptor on endpoint 0")
    root_types = [t.get("deviceType") for t in root.get("DeviceTypeList", [])]
    if 0x0016 not in root_types:
        raise CheckFailed(f"endpoint 0's DeviceTypeList {root_types} lacks Root Node (0x0016)", {"endpoints": endpoints})
    parts = root.get("PartsList", [])
    missing = sorted(int(e) for e in endpoints if e != "0" and int(e) not in parts)
    if missing:
        raise CheckFailed(f"endpoints {missing} answer but are not in endpoint 0's PartsList {parts}", {"endpoints": endpoints})
    return {"endpoints": endpoints}


# The root node's mandatory clusters and, for those that have any, their mandatory commands (Matter 1.4; Network
# Commissioning with only the Ethernet feature has none). The controller never asks for these lists, so a node that
# lacks them still commissions: these are checks of our own.
ROOT_CLUSTER_COMMANDS = {
    "Descriptor": [],
    "AccessControl": [],
    "BasicInformation": [],
    "GeneralCommissioning": [0x00, 0x02, 0x04],  # ArmFailSafe, SetRegulatoryConfig, CommissioningComplete
    "NetworkCommissioning": [],
    "GeneralDiagnostics": [0x00, 0x01],  # TestEventTrigger, TimeSnapshot
    # AttestationRequest, CertificateChainRequest, CSRRequest, AddNOC, UpdateNOC, UpdateFabricLabel, RemoveFabric,
    # AddTrustedRootCertificate
    "OperationalCredentials": [0x00, 0x02, 0x04, 0x06, 0x07, 0x09, 0x0A, 0x0B],
    "GroupKeyManagement": [0x00, 0x01, 0x03, 0x04],  # KeySetWrite, KeySetRead, KeySetRemove, KeySetReadAllIndices
    "AdministratorCommissioning": [0x00, 0x02],  # OpenCommissioningWindow, RevokeCommissioning
}


async def check_root_node(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    """What the controller lets through: the root node's clusters and their accepted commands, the fabric index
    the node gave this fabric, and every endpoint's Descriptor lists free of duplicates."""
    from chip import clusters as Clusters

    problems: list[str] = []
    paths = [(0, getattr(Clusters, name).Attributes.AcceptedCommandList) for name in ROOT_CLUSTER_COMMANDS]
    paths += [(0, Clusters.OperationalCredentials.Attributes.CurrentFabricIndex),
              (0, Clusters.OperationalCredentials.Attributes.Fabrics)]
    result = (await ctrl.ctrl.ReadAttribute(args.node_id, paths)).get(0, {})
    accepted: dict[str, Any] = {}
    for name, mandatory in ROOT_CLUSTER_COMMANDS.items():
        cluster = getattr(Clusters, name)
        value = jsonable(result.get(cluster, {}).get(cluster.Attributes.AcceptedCommandList))
        accepted[name] = value
        if not isinstance(value, list):
            problems.append(f"{name} on endpoint 0: no AcceptedCommandList ({value})")
            continue
        missing = [f"0x{c:02X}" for c in mandatory if c not in value]
        if missing:
            problems.append(f"{name} does not accept its mandatory commands {', '.join(missing)}")
    creds = result.get(Clusters.OperationalCredentials, {})
    fabric_index = jsonable(creds.get(Clusters.OperationalCredentials.Attributes.CurrentFabricIndex))
    fabrics = jsonable(creds.get(Clusters.OperationalCredentials.Attributes.Fabrics))
    if not isinstance(fabric_index, int) or not 1 <= fabric_index <= 254:
        problems.append(f"CurrentFabricIndex is {fabric_index}; a fabric's index is 1…254")
    if not isinstance(fabrics, list) or [f.get("fabricIndex") for f in fabrics] != [fabric_index]:
        problems.append(f"Fabrics (this fabric's view) is {fabrics}, expected one entry with fabricIndex {fabric_index}")
    endpoints = await read_cluster(ctrl, args.node_id, None, Clusters.Descriptor)
    for ep, desc in endpoints.items():
        for key, items in (("ServerList", desc.get("ServerList")),
                           ("DeviceTypeList", [t.get("deviceType") for t in desc.get("DeviceTypeList", [])])):
            if not isinstance(items, list) or not items:
                problems.append(f"endpoint {ep}'s {key} is empty or unreadable")
            elif len(set(items)) != len(items):
                problems.append(f"endpoint {ep}'s {key} repeats entries: {items}")
    servers = endpoints.get("0", {}).get("ServerList", [])
    for name in ROOT_CLUSTER_COMMANDS:
        if getattr(Clusters, name).id not in servers:
            problems.append(f"endpoint 0's ServerList lacks {name}")
    details = {"accepted_commands": accepted, "current_fabric_index": fabric_index, "fabrics": fabrics}
    if problems:
        raise CheckFailed("; ".join(problems), details)
    return details


async def invoke_armfailsafe(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    from chip import clusters as Clusters

    cmd = Clusters.GeneralCommissioning.Commands
    armed = await ctrl.ctrl.SendCommand(args.node_id, 0, cmd.ArmFailSafe(expiryLengthSeconds=60, breadcrumb=1))
    disarmed = await ctrl.ctrl.SendCommand(args.node_id, 0, cmd.ArmFailSafe(expiryLengthSeconds=0, breadcrumb=0))
    result = {"arm": jsonable(armed), "disarm": jsonable(disarmed)}
    for step in ("arm", "disarm"):
        if result[step].get("errorCode") != 0:
            raise CheckFailed(f"ArmFailSafe ({step}) answered {result[step]}", result)
    return result


async def invoke_identify(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    from chip import clusters as Clusters

    response = await ctrl.ctrl.SendCommand(args.node_id, args.endpoint, Clusters.Identify.Commands.Identify(identifyTime=5))
    after = await ctrl.ctrl.ReadAttribute(args.node_id, [(args.endpoint, Clusters.Identify.Attributes.IdentifyTime)])
    identify_time = after[args.endpoint][Clusters.Identify][Clusters.Identify.Attributes.IdentifyTime]
    return {"response": jsonable(response), "identify_time": jsonable(identify_time)}


async def read_after_restart(ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    if not ctrl.fabric_was_stored:
        raise CheckFailed(f"no fabric in the store {args.store}: commission first, with the same --store")
    # The device may still be coming up: retry until the deadline; each try resolves the node's _matter._tcp record
    # and sets up a CASE session (this process never had a PASE one).
    deadline = time.monotonic() + args.timeout - 2
    start = time.monotonic()
    tries = 0
    while True:
        tries += 1
        try:
            result = await asyncio.wait_for(read_basic(ctrl, args), timeout=max(1.0, min(15.0, deadline - time.monotonic())))
            result["tries"] = tries
            result["seconds"] = round(time.monotonic() - start, 3)
            return result
        except (asyncio.TimeoutError, CheckFailed):
            raise
        except Exception as e:
            if time.monotonic() + 1 > deadline:
                raise CheckFailed(f"no answer over CASE after {tries} tries: {type(e).__name__}: {e}")
            await asyncio.sleep(0.5)


# --- the oracles ---------------------------------------------------------------------------------------------------

# Typed JSON for TLV, so an encoder's choices are visible: an element is {"tag": T, "type": K, "value": V}, where T
# is null (anonymous), an integer (context tag) or [profile, tag] (profile-specific; profile null: implicit), K is
# one of uint int bool null float double utf8 bytes struct array list, and V is a number, string, hex (bytes) or,
# for the three containers, a list of elements. Decoding adds "width" to numbers (their size in bytes as encoded: an
# encoder's choice the controller's TLVWriter makes minimal) and "length" to strings (bytes of data).
_TYPE_OF = {
    "Unsigned Integer": "uint", "Signed Integer": "int", "Boolean": "bool", "Null": "null",
    "Floating Point 4": "float", "Floating Point 8": "double", "UTF-8 String": "utf8", "Byte String": "bytes",
    "Structure": "struct", "Array": "array", "Path": "list",
}


def _kind(decoded_type: str) -> str:
    for prefix, kind in _TYPE_OF.items():
        if decoded_type.startswith(prefix):
            return kind
    raise ValueError(f"unknown TLV element type {decoded_type!r}")


def tlv_to_json(decodings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for d in decodings:
        if d["type"] == "End of Collection":
            continue
        kind = _kind(d["type"])
        if "profileTag" in d:
            tag: Any = list(d["profileTag"])
        else:
            tag = d.get("tag")
        element: dict[str, Any] = {"tag": tag, "type": kind}
        if kind in ("struct", "array", "list"):
            element["value"] = tlv_to_json(d[{"struct": "Structure", "array": "Array", "list": "Path"}[kind]])
        elif kind == "bytes":
            element["value"] = bytes(d["value"]).hex()
            element["length"] = len(d["value"])
        elif kind == "utf8":
            element["value"] = d["value"] if isinstance(d["value"], str) else bytes(d["value"]).hex()
            element["length"] = d["strDataLen"]
        elif kind in ("uint", "int", "float", "double"):
            element["value"] = float(d["value"]) if kind in ("float", "double") else int(d["value"])
            element["width"] = int(d["type"].split(" ")[-2].split("-")[0])  # "… 2-byte value"
        elif kind == "bool":
            element["value"] = bool(d["value"])
        else:
            element["value"] = None
        out.append(element)
    return out


def tlv_decode(hex_text: str) -> dict[str, Any]:
    from chip.tlv import TLVReader

    data = bytes.fromhex(hex_text)
    reader = TLVReader(data)
    try:
        reader.get()
    except Exception as e:
        raise CheckFailed(f"the controller's TLV reader rejects it: {type(e).__name__}: {e}")
    # The reader is lenient: a container left open at the end of the input is not an error to it.
    return {"elements": tlv_to_json(reader.decoding), "consumed": reader._bytesRead, "length": len(data)}


def _tag(value: Any) -> Any:
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, list) and len(value) == 2:
        return (value[0], value[1])
    raise ValueError(f"bad tag {value!r}")


def _put(writer, element: dict[str, Any]) -> None:
    from chip.tlv import float32, uint

    tag, kind, value = _tag(element.get("tag")), element["type"], element.get("value")
    if kind == "uint":
        writer.putUnsignedInt(tag, uint(value))
    elif kind == "int":
        writer.putSignedInt(tag, int(value))
    elif kind == "bool":
        writer.putBool(tag, bool(value))
    elif kind == "null":
        writer.putNull(tag)
    elif kind == "float":
        writer.putFloat(tag, float32(value))
    elif kind == "double":
        writer.putDouble(tag, float(value))
    elif kind == "utf8":
        writer.putString(tag, value)
    elif kind == "bytes":
        writer.putBytes(tag, bytes.fromhex(value))
    elif kind in ("struct", "array", "list"):
        {"struct": writer.startStructure, "array": writer.startArray, "list": writer.startPath}[kind](tag)
        for inner in value:
            _put(writer, inner)
        writer.endContainer()
    else:
        raise ValueError(f"unknown element type {kind!r}")


def tlv_encode(json_text: str) -> dict[str, Any]:
    from chip.tlv import TLVWriter

    elements = json.loads(json_text)
    if isinstance(elements, dict):
        elements = [elements]
    writer = TLVWriter()
    for element in elements:
        _put(writer, element)
    return {"hex": bytes(writer.encoding).hex()}


def parse_setup(how: str, code: str) -> dict[str, Any]:
    from chip.setup_payload import SetupPayload

    init_native()
    payload = SetupPayload()
    if how == "qr":
        payload.ParseQrCode(code)
    else:
        payload.ParseManualPairingCode(code)
    fields = {
        "version": payload.version, "vendor_id": payload.vendor_id, "product_id": payload.product_id,
        "passcode": payload.setup_passcode, "long_discriminator": payload.long_discriminator,
        "short_discriminator": payload.short_discriminator, "commissioning_flow": payload.commissioning_flow,
        "rendezvous_information": payload.rendezvous_information,
    }
    return {"fields": fields, "attributes": payload.attributes}


def make_codes(args: argparse.Namespace) -> dict[str, Any]:
    from chip.setup_payload import SetupPayload

    init_native()
    payload = SetupPayload()
    # capabilities 4: on-network discovery only (no BLE, no SoftAP), as a hub on Ethernet announces.
    qr = payload.GenerateQrCode(args.passcode, args.vid, args.pid, args.discriminator, 0, 4, 0)
    manual = payload.GenerateManualPairingCode(args.passcode, args.vid, args.pid, args.discriminator, 0, 4, 0)
    return {"qr": qr, "manual": manual}


# --- the command line ----------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="the controller's storage directory (commissioning, reads, invokes)")
    parser.add_argument("--paa", type=Path, default=DEFAULT_PAA, help="directory of trusted PAA certificates (*.der)")
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the whole subcommand may take")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("commission-qr").add_argument("payload")
    sub.add_parser("commission-manual").add_argument("code")
    for name in ("commission-discriminator", "commission-wrong-passcode"):
        p = sub.add_parser(name)
        p.add_argument("discriminator", type=int)
        p.add_argument("passcode", type=int)
    sub.add_parser("read-basic")
    sub.add_parser("read-descriptor")
    sub.add_parser("check-root-node")
    sub.add_parser("invoke-armfailsafe")
    sub.add_parser("invoke-identify").add_argument("endpoint", type=int)
    sub.add_parser("read-after-restart")
    for name in ("bridge-layout", "bridge-commands", "bridge-from-outside", "bridge-refused", "bridge-rename",
                 "bridge-reachable", "bridge-numbers", "bridge-complete", "bridge-bench"):
        p = sub.add_parser(name)
        p.add_argument("--mqtt-ns", default="", help="the network namespace of the hub's mosquitto (bridge checks)")
        p.add_argument("--count", type=int, default=100,
                       help="bridge-bench: how many toggles; bridge-complete: how many devices the bridge has")
        p.add_argument("--device-pid", type=int, default=0, help="bridge-bench: the device's pid, for its CPU time")
        p.add_argument("--endpoint", type=int, default=0, help="bridge-bench: the light's endpoint (default: the porch light)")
    for name in ("home-control", "home-unreachable"):
        p = sub.add_parser(name)
        p.add_argument("--mqtt-ns", default="", help="the network namespace of the hubs' mosquitto")
        p.add_argument("--within", type=float, default=15.0,
                       help="home-unreachable: seconds the peer's light may take to become unreachable")
        p.add_argument("--kill-pid", type=int, default=0, help="home-unreachable: the peer hub's process, killed by the check")
    p = sub.add_parser("fabric-open-window")
    p.add_argument("--window-seconds", type=int, default=300)
    p.add_argument("--discriminator", type=int, default=2222)
    sub.add_parser("fabric-read")
    sub.add_parser("fabric-remove").add_argument("index", type=int)
    sub.add_parser("fabric-unreachable").add_argument("--wait", type=float, default=15.0)
    p = sub.add_parser("subscriptions-several")
    p.add_argument("--restart-flag", default="",
                   help="write FLAG.ready, wait for FLAG.go (the device restarted), then expect every subscription back")
    failsafe.add_subcommands(sub)
    sub.add_parser("tlv-decode").add_argument("hex")
    sub.add_parser("tlv-encode").add_argument("json")
    sub.add_parser("parse-qr").add_argument("payload")
    sub.add_parser("parse-manual").add_argument("code")
    p = sub.add_parser("make-codes")
    for name in ("passcode", "discriminator"):
        p.add_argument(name, type=int)
    for name in ("vid", "pid"):
        p.add_argument(name, type=lambda s: int(s, 0))
    return parser.parse_args()


NETWORK_COMMANDS = {
    "commission-qr": lambda c, a: commission(c, "qr", a),
    "commission-manual": lambda c, a: commission(c, "manual", a),
    "commission-discriminator": lambda c, a: commission(c, "discriminator", a),
    "commission-wrong-passcode": commission_wrong_passcode,
    "read-basic": read_basic,
    "read-descriptor": read_descriptor,
    "check-root-node": check_root_node,
    "invoke-armfailsafe": invoke_armfailsafe,
    "invoke-identify": invoke_identify,
    "read-after-restart": read_after_restart,
    "fabric-open-window": lambda c, a: fabric_check(fabrics.open_window, c, a),
    "fabric-read": lambda c, a: fabric_check(fabrics.read_fabrics, c, a),
    "fabric-remove": lambda c, a: fabric_check(fabrics.remove_fabric, c, a),
    "fabric-unreachable": lambda c, a: fabric_check(fabrics.expect_unreachable, c, a),
    "bridge-layout": lambda c, a: bridge_check(bridge.layout, c, a),
    "bridge-commands": lambda c, a: bridge_check(bridge.commands, c, a),
    "bridge-from-outside": lambda c, a: bridge_check(bridge.from_outside, c, a),
    "bridge-refused": lambda c, a: bridge_check(bridge.refused, c, a),
    "bridge-rename": lambda c, a: bridge_check(bridge.rename, c, a),
    "bridge-reachable": lambda c, a: bridge_check(bridge.reachable, c, a),
    "bridge-numbers": lambda c, a: bridge_check(bridge.numbers, c, a),
    "bridge-complete": lambda c, a: bridge_check(bridge.complete, c, a),
    "bridge-bench": lambda c, a: bridge_check(bridge.bench, c, a),
    "home-control": lambda c, a: bridge_check(home.control, c, a),
    "home-unreachable": lambda c, a: bridge_check(home.unreachable, c, a),
    "subscriptions-several": lambda c, a: subscriptions_check(subscriptions.several, c, a),
    "commission-fail-at": lambda c, a: failsafe.commission_fail_at(c, a, native_log, CheckFailed),
    "commission-premature": lambda c, a: failsafe.commission_premature(c, a, native_log, CheckFailed),
    "arm-and-leave": lambda c, a: failsafe.arm_and_leave(c, a, native_log, CheckFailed, emit),
    "fabric-count": lambda c, a: failsafe.fabric_count(c, a, native_log, CheckFailed),
}
# The commands whose controllers accept CASE from the device (a resumed subscription's).
SERVING_COMMANDS = {"subscriptions-several"}


async def subscriptions_check(check, ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    """A check of tests/matter/subscriptions.py, its failures as this script's."""
    try:
        return await check(ctrl, args)
    except subscriptions.Failed as e:
        raise CheckFailed(str(e), e.details)


async def bridge_check(check, ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    """A check of tests/matter/bridge.py, its failures as this script's."""
    try:
        return await check(ctrl, args)
    except bridge.Failed as e:
        raise CheckFailed(str(e), e.details)


async def fabric_check(check, ctrl: Controller, args: argparse.Namespace) -> dict[str, Any]:
    """A check of tests/matter/fabrics.py, its failures as this script's."""
    try:
        return await check(ctrl, args)
    except fabrics.Failed as e:
        raise CheckFailed(str(e), e.details)


async def run_network(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    ctrl = Controller(args.store, args.paa, serve=args.command in SERVING_COMMANDS,
                      use_test_commissioner=args.command in failsafe.TEST_COMMISSIONER)
    try:
        result = await asyncio.wait_for(NETWORK_COMMANDS[args.command](ctrl, args), timeout=args.timeout)
    finally:
        ctrl.shutdown()
    result["process_seconds"] = round(time.monotonic() - started, 3)
    return result


def main() -> None:
    args = parse_args()
    # The native stack can block outside asyncio's reach: a hard deadline a little past the soft one.
    signal.signal(signal.SIGALRM, lambda *_: emit({"ok": False, "command": args.command,
                                                   "error": f"no result within {args.timeout + 10:.0f} s"}, 3))
    signal.alarm(int(args.timeout) + 10)
    try:
        if args.command in NETWORK_COMMANDS:
            if args.store is None:
                emit({"ok": False, "command": args.command, "error": "--store DIR is required"}, 2)
            result = asyncio.run(run_network(args))
        elif args.command == "tlv-decode":
            result = tlv_decode(args.hex)
        elif args.command == "tlv-encode":
            result = tlv_encode(args.json)
        elif args.command == "parse-qr":
            result = parse_setup("qr", args.payload)
        elif args.command == "parse-manual":
            result = parse_setup("manual", args.code)
        else:
            result = make_codes(args)
    except asyncio.TimeoutError:
        emit({"ok": False, "command": args.command, "error": f"timed out after {args.timeout:.0f} s"}, 3)
    except CheckFailed as e:
        emit({"ok": False, "command": args.command, "error": str(e), **e.details}, 1)
    except Exception as e:
        traceback.print_exc()
        emit({"ok": False, "command": args.command, "error": f"{type(e).__name__}: {e}"}, 1)
    emit({"ok": True, "command": args.command, **result}, 0)


if __name__ == "__main__":
    main()
