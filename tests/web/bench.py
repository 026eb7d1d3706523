"""scripts/bench-web's measurements (not a test): idle CPU with the page on and off, memory with two streams on a
1,000-device hub, and a toggle's round trip through the page's API against MQTT."""

import argparse
import json
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import webrig  # noqa: E402


def cpu_ns(pid: int) -> int:
    """The process's CPU time, its exited threads' included: clock_getcpuclockid(pid)'s clock, as HubBench reads it
    (Linux's process CPU clock id is ((~pid) << 3) | 2)."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def rss_anon_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0


def hub(directory: Path, broker: webrig.Broker, devices: int, web: bool, name: str) -> webrig.Hub:
    lines = "".join(f"  - {{id: d{i}, name: Device {i}, room: r{i % 20}, type: DimmableLight}}\n" for i in range(devices))
    h = webrig.Hub(directory, name, "none", broker, lines)
    if not web:
        h.config.write_text(h.config.read_text().replace(f"web: {{listen: 127.0.0.1, port: {h.web_port}}}",
                                                         "web: {enabled: false}"))
    return h


def start(h: webrig.Hub, web: bool) -> None:
    h.proc = subprocess.Popen([os.environ["HEARTHD"], "run", "--config", str(h.config)],
                              stdout=open(h.log, "ab"), stderr=subprocess.STDOUT)
    webrig.wait_until(lambda: "online" in h.log.read_text() and "devices published" in h.log.read_text(), 60, "online")


def stream(port: int, cookie: str, ready: threading.Event, lines: list, stop: threading.Event):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/api/events", headers={"Cookie": cookie})
    r = conn.getresponse()
    while not stop.is_set():
        line = r.fp.readline()
        if not line:
            return
        lines.append((time.monotonic(), line))
        if line.startswith(b"event: ready"):
            ready.set()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--idle-seconds", type=int, default=60)
    p.add_argument("--toggles", type=int, default=50)
    a = p.parse_args()
    d = Path(tempfile.mkdtemp(prefix="hearth-bench-web-"))
    shutil.copy(webrig.REPO / "boards" / "sim.yaml", d / "sim.yaml")
    broker = webrig.Broker(d)
    broker.start()
    try:
        print("== idle CPU, 100 devices, no browser (µs of CPU per second; alternated)")
        for round_ in range(2):
            for web in (False, True):
                h = hub(d, broker, 100, web, f"idle{round_}{int(web)}")
                start(h, web)
                time.sleep(10)  # start-up's work (and the retained messages of the last hub) winds down first
                before = cpu_ns(h.proc.pid)
                time.sleep(a.idle_seconds)
                used = cpu_ns(h.proc.pid) - before
                print(f"web {'on ' if web else 'off'}: {used / a.idle_seconds / 1000:.1f} µs/s "
                      f"({used / a.idle_seconds / 1e9 * 100:.4f} %)")
                h.stop()

        print("== memory, 1,000 devices: RssAnon before and with two live streams")
        h = hub(d, broker, 1000, True, "mem")
        start(h, True)
        code = h.setup_code()
        status, headers, body = h.request("POST", "/api/setup", {"code": code, "password": "correct horse battery"})
        cookie = headers["Set-Cookie"].split(";")[0]
        time.sleep(3)
        before = rss_anon_kb(h.proc.pid)
        stop = threading.Event()
        events = []
        for _ in range(2):
            ready = threading.Event()
            lines: list = []
            threading.Thread(target=stream, args=(h.web_port, cookie, ready, lines, stop), daemon=True).start()
            ready.wait(60)
            events.append(lines)
        time.sleep(3)
        after = rss_anon_kb(h.proc.pid)
        print(f"RssAnon {before} kB → {after} kB with two streams (+{after - before} kB)")

        print(f"== a toggle to its state: the page's API and stream against MQTT (median of {a.toggles})")
        watcher = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-t", "hearth/mem/devices/d7"],
                                   stdout=subprocess.PIPE)
        time.sleep(1)
        mqtt_lines: list = []
        threading.Thread(target=lambda: [mqtt_lines.append((time.monotonic(), l)) for l in iter(watcher.stdout.readline, b"")],
                         daemon=True).start()
        time.sleep(0.5)
        publisher = subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-l",
                                      "-t", "hearth/mem/devices/d7/set"], stdin=subprocess.PIPE)
        time.sleep(0.5)
        page, mqtt = [], []
        conn = http.client.HTTPConnection("127.0.0.1", h.web_port)
        for i in range(a.toggles):
            n = len(events[0])
            t0 = time.monotonic()
            conn.request("POST", "/api/devices/d7/request", body=json.dumps({"trait": "onOff", "command": "toggle"}),
                         headers={"Cookie": cookie, "Content-Type": "application/json"})
            conn.getresponse().read()
            webrig.wait_until(lambda: any(b"\"id\":\"d7\"" in l for _, l in events[0][n:]), 5, "the stream", interval=0.0005)
            page.append(next(t for t, l in events[0][n:] if b"\"id\":\"d7\"" in l) - t0)
            m = len(mqtt_lines)
            t0 = time.monotonic()
            publisher.stdin.write(b'{"trait":"onOff","command":"toggle"}\n')
            publisher.stdin.flush()
            webrig.wait_until(lambda: len(mqtt_lines) > m, 5, "the document", interval=0.0005)
            mqtt.append(mqtt_lines[m][0] - t0)
        print(f"page API → stream: {statistics.median(page) * 1000:.2f} ms; MQTT set → document (mosquitto_pub -l → "
              f"mosquitto_sub): {statistics.median(mqtt) * 1000:.2f} ms")
        publisher.terminate()
        stop.set()
        watcher.terminate()
        h.stop()
    finally:
        broker.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
