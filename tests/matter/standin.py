"""The Matter stage's stand-in device: PyPI's circuitmatter (a pure-Python Matter node) as an On/Off light, with a
fixed passcode and discriminator and an mDNS responder of its own.

It runs in the rig's device namespace (tests/matter/rig.sh) so the real controller can be tried, and timed, against
a node that is not Hearth's. Two things circuitmatter leaves to the platform are done here:
- the passcode and discriminator: circuitmatter draws both at random into its state file at first start; a test needs
  them known, so the state file is made here first with the given values (and their PASE verifier);
- mDNS: circuitmatter publishes through avahi-publish-service, which needs the host's avahi and dbus; this answers with
  python-zeroconf inside the namespace instead, including the `_L`/`_S`/`_CM` subtypes the controller queries for
  (zeroconf registers one type per name, so each subtype is added to its responder's index by hand).

Prints circuitmatter's own "QR code data: MT:…" and "Manual code: …" lines while uncommissioned, then
"standin: ready" once it listens. Runs until SIGTERM or SIGINT.
Usage: standin.py --state FILE [--passcode N] [--discriminator N]
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path

import ifaddr
from zeroconf import IPVersion, ServiceInfo, Zeroconf

import circuitmatter
from circuitmatter import certificates
from circuitmatter.device_types.lighting import on_off
from circuitmatter.utility import random as cm_random

VENDOR_ID = 0xFFF4  # circuitmatter accepts only its own test vendor and product
PRODUCT_ID = 0x1234


class ZeroconfResponder:
    """circuitmatter's mDNS interface (advertise_service), answered by python-zeroconf on every interface."""

    def __init__(self) -> None:
        self.zc = Zeroconf(ip_version=IPVersion.All)
        self.host = f"{binascii.hexlify(os.urandom(6)).decode().upper()}.local."
        self.registered: list[ServiceInfo] = []

    def _addresses(self) -> list[str]:
        found = []
        for adapter in ifaddr.get_adapters():
            if adapter.nice_name == "lo":
                continue
            for ip in adapter.ips:
                if isinstance(ip.ip, tuple):  # IPv6: (address, flowinfo, scope id)
                    found.append(ip.ip[0])
                else:
                    found.append(ip.ip)
        return found

    def advertise_service(self, service_type, protocol, port, txt_records=None, subtypes=None, instance_name=""):
        base = f"{service_type}.{protocol}.local."
        name = f"{instance_name}.{base}"
        props = dict(txt_records or {})
        info = ServiceInfo(base, name, port=port, properties=props, server=self.host,
                           parsed_addresses=self._addresses())
        self.zc.register_service(info, allow_name_change=False)
        self.registered.append(info)
        extra = [f"{s}.local." for s in (subtypes or [])]
        if service_type == "_matterc":
            # circuitmatter names the long-discriminator and _CM subtypes; the manual code carries only the short
            # discriminator (the top 4 bits of the 12), which the controller looks up as _S<short>.
            discriminator = int(props.get("D", "0"))
            extra.append(f"_S{discriminator >> 8}._sub.{base}")
        subinfos = [ServiceInfo(sub, name, port=port, properties=props, server=self.host,
                                parsed_addresses=self._addresses()) for sub in extra]

        async def add() -> None:
            for sub in subinfos:
                self.zc.registry.types.setdefault(sub.type.lower(), {})[sub.key] = sub

        asyncio.run_coroutine_threadsafe(add(), self.zc.loop).result(5)
        print(f"standin: mDNS {name} port {port} subtypes {[s.type for s in subinfos]}", flush=True)

    def close(self) -> None:
        for info in self.registered:
            self.zc.unregister_service(info)
        self.zc.close()


class Light(on_off.OnOffLight):
    def on(self) -> None:
        print("standin: light on", flush=True)

    def off(self) -> None:
        print("standin: light off", flush=True)


def make_state(path: Path, passcode: int, discriminator: int) -> None:
    """The state file circuitmatter would write at first start, with the given passcode and discriminator."""
    state = certificates.generate_initial_state(VENDOR_ID, PRODUCT_ID, "CircuitMatter Device", cm_random)
    salt = binascii.a2b_base64(state["salt"])
    verifier = certificates.compute_verifier(passcode, salt, state["iteration-count"])
    state["passcode"] = passcode
    state["discriminator"] = discriminator
    state["manual_code"] = certificates.compute_manual_code(discriminator, passcode)
    state["verifier"] = binascii.b2a_base64(verifier, newline=False).decode()
    path.write_text(json.dumps(state, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True, type=Path, help="circuitmatter's state file (made if missing)")
    parser.add_argument("--passcode", type=int, default=20202021)
    parser.add_argument("--discriminator", type=int, default=3840)
    args = parser.parse_args()
    if not args.state.exists():
        make_state(args.state, args.passcode, args.discriminator)

    stop = False

    def on_signal(signum, frame) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    mdns = ZeroconfResponder()
    try:
        matter = circuitmatter.CircuitMatter(state_filename=str(args.state), mdns_server=mdns)
        matter.add_device(Light("light1"))
        print("standin: ready", flush=True)
        sys.stdout.flush()
        while not stop:
            # Wake for a packet or every 50 ms for circuitmatter's retransmissions and subscription reports.
            try:
                select.select([matter.socket], [], [], 0.05)
            except InterruptedError:
                continue
            matter.process_packets()
    finally:
        mdns.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
