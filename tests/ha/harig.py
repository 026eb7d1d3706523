"""A real Home Assistant for Hearth's tests: installed once into a cached Debian sid root, then started per run.

Why a Debian sid root: homeassistant 2026.11.0 needs Python >= 3.13, Debian 12 has 3.11, and a `debootstrap
--variant=minbase sid` root has 3.14. Home Assistant runs inside that root with `chroot`, in a private mount
namespace (`unshare --mount`) so its /proc, /dev, /sys and /config mounts vanish with the process; the root shares
the host's network, so Home Assistant reaches the test broker on the host's 127.0.0.1.

What is cached (`${XDG_CACHE_HOME:-~/.cache}/hearth/ha-<version>-r<RECIPE>`): the root, the venv with
homeassistant, and the requirements Home Assistant installs from PyPI at its first start (the always-loaded
integrations' and mqtt's). The install ends with such a first start, so later runs start with `--skip-pip` and
need no network at all. Bump RECIPE when the install steps change.

How a test gets a token without a browser: each run gets a fresh configuration directory, so Home Assistant is not
onboarded yet; the test does onboarding's user step over HTTP (`POST /api/onboarding/users`, the same call the
frontend makes, no token needed while no user exists), which creates an admin user and returns an authorization
code, and trades the code at `/auth/token` for an access token. It then asks the websocket API for a long-lived
token, which survives restarts of Home Assistant with the same directory. Chosen over a pre-seeded `.storage/auth`
(whose layout is private and changes between releases) and over `trusted_networks` (it needs a user to exist).

The MQTT connection is a pre-seeded config entry in `.storage/core.config_entries` (storage version 1.5; the mqtt
entry is version 2.1 with `broker`, `port` and `protocol` in `data`, discovery options in `options` — read from
homeassistant/config_entries.py and components/mqtt/{__init__,config_flow}.py of 2026.11.0), so Home Assistant
connects at start-up with no config flow.

Only the stdlib is used on the host, so the rig runs with Debian 12's /usr/bin/python3 and nothing else.

CLI (scripts/ha-rig wraps it):
  harig.py install            build the cached root if missing; prints its path and the times it took
  harig.py path               print where the cached root is
  harig.py run [--broker-port P]   start Home Assistant against a broker (a private one if none), print its URL
                              and token, run until ^C
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ws  # noqa: E402  (the minimal websocket client beside this file)

HA_VERSION = "2026.11.0"
#: Bump when the install steps change, so every cache built by the old steps is rebuilt.
RECIPE = 1
MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "sid"
ROOT_PACKAGES = "python3,python3-venv,ca-certificates,tzdata"
VENV = "/opt/ha"

#: The environment of everything run inside the root: nothing of the host's (PIP_FIND_LINKS, PYTHONDONTWRITEBYTECODE
#: and friends would change what pip does, and no byte code would make every start slow).
CHROOT_ENV = ["PATH=/opt/ha/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "HOME=/root", "LANG=C.UTF-8", "TZ=UTC",
              # uv (what Home Assistant installs requirements with) trusts its own built-in roots unless told;
              # the root's bundle is the host's, which is the one that works behind this network's TLS.
              "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]


class RigError(Exception):
    """The rig could not do what was asked; the message says what and where to look."""


def log(msg: str) -> None:
    print(f"ha-rig: {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hearth"


def root_dir() -> Path:
    return cache_root() / f"ha-{HA_VERSION}-r{RECIPE}"


def runs_dir() -> Path:
    return cache_root() / "ha-runs"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str, interval: float = 0.2, check=None):
    """Polls `condition` until it returns a true value (returned) or `timeout` seconds pass (RigError).
    `check` runs before each poll and may raise (e.g. when the process being waited for died)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        if check is not None:
            check()
        try:
            value = condition()
            if value:
                return value
        except (OSError, http.client.HTTPException, ws.WebSocketError, json.JSONDecodeError) as e:
            last_error = e
        if time.monotonic() >= deadline:
            extra = f" (last error: {last_error})" if last_error else ""
            raise RigError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(interval)


def ensure_debian_packages(*packages: str) -> None:
    """apt-get installs the packages that are missing (the rig runs as root, as scripts/setup does)."""
    missing = []
    for p in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if not missing:
        return
    log(f"installing {' '.join(missing)}")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)


def chroot_run(root: Path, *argv: str, log_file: Path) -> None:
    with open(log_file, "ab") as out:
        r = subprocess.run(["chroot", str(root), "/usr/bin/env", "-i", *CHROOT_ENV, *argv],
                           stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise RigError(f"`{' '.join(argv)}` in {root} exited {r.returncode}; see {log_file}")


# --------------------------------------------------------------------------------------------------------------------
# Install


def install() -> Path:
    """Returns the cached root, building it first when it is missing (a lock keeps two builds from racing)."""
    root = root_dir()
    if (root / ".complete").exists():
        return root
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / "ha.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".complete").exists():
            return root
        return _build(root)


def _build(root: Path) -> Path:
    ensure_debian_packages("debootstrap", "mosquitto", "util-linux")
    building = root.with_name(root.name + ".building")
    if building.exists():
        shutil.rmtree(building)
    building.mkdir(parents=True)
    build_log = root.with_name(root.name + ".build.log")
    build_log.unlink(missing_ok=True)
    times: dict[str, float] = {}

    t = time.monotonic()
    log(f"debootstrap {DEBIAN_SUITE} into {building} (log: {build_log})")
    with open(build_log, "ab") as out:
        r = subprocess.run(["debootstrap", "--variant=minbase", f"--include={ROOT_PACKAGES}", DEBIAN_SUITE,
                            str(building), MIRROR], stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise RigError(f"debootstrap failed ({r.returncode}); see {build_log}")
    times["debootstrap"] = time.monotonic() - t

    # pip in the root checks PyPI's certificate against the root's bundle; the host's is the one known to work here.
    shutil.copyfile("/etc/ssl/certs/ca-certificates.crt", building / "etc/ssl/certs/ca-certificates.crt")
    shutil.copyfile("/etc/resolv.conf", building / "etc/resolv.conf")
    (building / "config").mkdir()

    t = time.monotonic()
    log(f"venv + pip install homeassistant=={HA_VERSION}")
    chroot_run(building, "python3", "-m", "venv", VENV, log_file=build_log)
    chroot_run(building, f"{VENV}/bin/pip", "install", "--no-cache-dir", "--disable-pip-version-check",
               f"homeassistant=={HA_VERSION}", log_file=build_log)
    times["pip"] = time.monotonic() - t

    # The first start installs the requirements of every integration a test run loads (the same configuration).
    t = time.monotonic()
    log("first start: Home Assistant installs its integrations' requirements")
    with Broker() as broker, HomeAssistant(broker.port, root=building, skip_pip=False, name="install") as ha:
        ha.start()
        ha.wait_ready(timeout=900)
        ha.wait_mqtt_connected(timeout=120)
    times["first-start"] = time.monotonic() - t
    # Runs need no name service: without resolv.conf a lookup goes to 127.0.0.1 and fails there, never outside.
    (building / "etc/resolv.conf").unlink()

    size = subprocess.run(["du", "-sm", str(building)], capture_output=True, text=True).stdout.split()[0]
    info = {"version": HA_VERSION, "recipe": RECIPE, "seconds": {k: round(v, 1) for k, v in times.items()},
            "megabytes": int(size), "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    (building / ".complete").write_text(json.dumps(info) + "\n")
    if root.exists():
        shutil.rmtree(root)
    building.rename(root)
    log(f"installed in {sum(times.values()):.0f} s ({', '.join(f'{k} {v:.0f} s' for k, v in times.items())}), "
        f"{size} MB: {root}")
    return root


# --------------------------------------------------------------------------------------------------------------------
# A private mosquitto


class Broker:
    """mosquitto on a free loopback port with its own configuration (no persistence, Nagle off), stopped on exit."""

    def __init__(self, run_dir: Path | None = None):
        self.port = free_port()
        self.dir = run_dir or Path(tempfile.mkdtemp(prefix="hearth-ha-broker-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Broker:
        conf = self.dir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
                        f"persistence false\nlog_dest stdout\nlog_type error\nlog_type warning\nlog_type notice\n")
        binary = os.environ.get("HEARTH_MOSQUITTO") or shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.log_path = self.dir / "mosquitto.log"
        self.proc = subprocess.Popen([binary, "-c", str(conf)], stdout=open(self.log_path, "wb"),
                                     stderr=subprocess.STDOUT)
        wait_until(self._accepts, 10, f"mosquitto on 127.0.0.1:{self.port} (log: {self.log_path})",
                   check=self._alive)
        return self

    def _alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RigError(f"mosquitto exited {self.proc.returncode}; see {self.log_path}")

    def _accepts(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def publish(self, topic: str, payload: str | bytes, retain: bool = False) -> None:
        """Publishes with mosquitto_pub (QoS 1, so it is at the broker when this returns)."""
        data = payload.encode() if isinstance(payload, str) else payload
        argv = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.port), "-q", "1", "-t", topic,
                "-s" if data else "-n"]
        if retain:
            argv.append("-r")
        subprocess.run(argv, input=data if data else None, check=True, timeout=10)

    def subscribe(self, *topic_filters: str) -> Subscription:
        """A live subscription (mosquitto_sub), returned once the broker has it."""
        return Subscription(self.port, topic_filters)

    def retained(self, topic_filter: str, timeout: float = 2.0) -> dict[str, bytes]:
        """The retained messages under `topic_filter` now (mosquitto_sub --retained-only until it goes quiet)."""
        r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-t", topic_filter,
                            "--retained-only", "-W", str(int(timeout)), "-F", "%t\t%x"],
                           capture_output=True, text=True, timeout=timeout + 10)
        out: dict[str, bytes] = {}
        for line in r.stdout.splitlines():
            topic, _, hexdata = line.partition("\t")
            out[topic] = bytes.fromhex(hexdata)
        return out

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Subscription:
    """mosquitto_sub in the background; messages collected by a reader thread as (topic, payload bytes).
    Ready when constructed: a probe message on a private topic has come back through the broker."""

    def __init__(self, port: int, topic_filters: tuple[str, ...]):
        self.messages: list[tuple[str, bytes]] = []
        self._cond = threading.Condition()
        probe = f"hearth-rig/probe/{uuid.uuid4().hex}"
        argv = ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-F", "%t\t%x", "-t", probe]
        for f in topic_filters:
            argv += ["-t", f]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 10
        while not self.wait_for(lambda t, _: t == probe, timeout=0.5, raise_on_timeout=False):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RigError(f"mosquitto_sub on 127.0.0.1:{port} did not get its probe message in 10 s")
            subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-t", probe, "-m", "probe"],
                           check=True, timeout=10)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            topic, _, hexdata = line.decode().rstrip("\n").partition("\t")
            with self._cond:
                self.messages.append((topic, bytes.fromhex(hexdata)))
                self._cond.notify_all()

    def wait_for(self, predicate, timeout: float = 30, raise_on_timeout: bool = True, what: str = "a message"):
        """The first message (topic, payload) received so far or within `timeout` s for which predicate holds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages:
                    if predicate(*m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    if raise_on_timeout:
                        raise RigError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                       f"got {[t for t, _ in self.messages][-20:]}")
                    return None
                self._cond.wait(left)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --------------------------------------------------------------------------------------------------------------------
# Home Assistant


def configuration_yaml() -> str:
    """Only what the tests need: no default_config (no discovery, cloud, recorder …), a fixed location so nothing
    asks the network where the house is. `http` is not here: see http_storage()."""
    return f"""\
homeassistant:
  name: Hearth test
  latitude: 52.52
  longitude: 13.405
  elevation: 34
  unit_system: metric
  time_zone: UTC
  country: DE
  currency: EUR
  language: en
  auth_providers:
    - type: homeassistant
api:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: debug
    homeassistant.setup: info
    homeassistant.bootstrap: info
"""


def http_storage(http_port: int) -> dict[str, Any]:
    """The HTTP server's settings as Home Assistant 2026.11 keeps them (components/http/config.py): YAML's `http:`
    would become a *pending* configuration that reverts to port 8123 on every interface, with a restart, unless
    confirmed in the UI within 5 minutes. A *stable* one with the YAML migration marked done is used as it is."""
    now = datetime.datetime.now(datetime.UTC).isoformat()
    stable = {"server_port": http_port, "server_host": ["127.0.0.1"], "cors_allowed_origins": [],
              "login_attempts_threshold": -1, "ip_ban_enabled": False, "ssl_profile": "intermediate_v6",
              "use_x_frame_options": True, "created_at": now, "error": None, "error_message": None}
    return {"version": 3, "minor_version": 1, "key": "http",
            "data": {"stable": stable, "pending": None, "yaml_migration_done": True}}


def config_entries(broker_host: str, broker_port: int, discovery_prefix: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).isoformat()
    entry = {
        "created_at": now, "modified_at": now,
        "data": {"broker": broker_host, "port": broker_port, "protocol": "5"},
        "discovery_keys": {}, "disabled_by": None, "domain": "mqtt", "entry_id": uuid.uuid4().hex,
        "version": 2, "minor_version": 1,
        "options": {"discovery": True, "discovery_prefix": discovery_prefix},
        "pref_disable_new_entities": False, "pref_disable_polling": False, "source": "user", "subentries": [],
        "title": broker_host, "unique_id": None,
    }
    # The Marketplace (always loaded) starts a config flow that downloads a catalogue unless an entry exists; a
    # disabled one is "turned off by the user" (components/marketplace/__init__.py), so nothing leaves the machine.
    marketplace = {
        "created_at": now, "modified_at": now, "data": {}, "discovery_keys": {}, "disabled_by": "user",
        "domain": "marketplace", "entry_id": uuid.uuid4().hex, "version": 1, "minor_version": 1, "options": {},
        "pref_disable_new_entities": False, "pref_disable_polling": False, "source": "system", "subentries": [],
        "title": "", "unique_id": None,
    }
    return {"version": 1, "minor_version": 5, "key": "core.config_entries",
            "data": {"entries": [entry, marketplace]}}


#: Home Assistants started and not yet stopped: killed when the interpreter exits, however the test ended.
_live: set[HomeAssistant] = set()


@atexit.register
def _kill_leftovers() -> None:
    for ha in list(_live):
        ha.kill()


def exit_on_sigterm() -> None:
    """Turns SIGTERM into SystemExit so context managers and fixtures stop Home Assistant and the broker."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class HomeAssistant:
    """One Home Assistant with its own configuration directory, against a broker on the host's loopback.

    `start()` → `wait_ready()` (onboards and gets a token on the first start) → REST/websocket helpers → `stop()`.
    The run directory (configuration, `hass.log` with stdout and stderr, the token) stays under
    ~/.cache/hearth/ha-runs/ for reading after a failure; the newest runs are kept, older ones pruned."""

    KEEP_RUNS = 10

    def __init__(self, broker_port: int, broker_host: str = "127.0.0.1", discovery_prefix: str = "homeassistant",
                 root: Path | None = None, skip_pip: bool = True, name: str = "run"):
        self.root = root or install()
        self.broker = (broker_host, broker_port)
        self.discovery_prefix = discovery_prefix
        self.skip_pip = skip_pip
        runs_dir().mkdir(parents=True, exist_ok=True)
        self._prune_runs()
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"{stamp}-{name}-", dir=runs_dir()))
        self.config_dir = self.run_dir / "config"
        self.log_path = self.run_dir / "hass.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token: str | None = None
        self.proc: subprocess.Popen | None = None
        self._write_config()
        with contextlib.suppress(OSError):
            last = runs_dir() / "last"
            last.unlink(missing_ok=True)
            last.symlink_to(self.run_dir.name)

    def _prune_runs(self) -> None:
        runs = sorted(p for p in runs_dir().iterdir() if p.is_dir() and not p.is_symlink())
        for old in runs[:-self.KEEP_RUNS]:
            shutil.rmtree(old, ignore_errors=True)

    def _write_config(self) -> None:
        storage = self.config_dir / ".storage"
        storage.mkdir(parents=True)
        (self.config_dir / "configuration.yaml").write_text(configuration_yaml())
        (storage / "http").write_text(json.dumps(http_storage(self.port), indent=2))
        (storage / "core.config_entries").write_text(
            json.dumps(config_entries(*self.broker, self.discovery_prefix), indent=2))

    # -- process

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise RigError("Home Assistant is already running")
        r = self.root
        args = [f"{VENV}/bin/hass", "-c", "/config", "--log-file", "/config/home-assistant.log", "--log-no-color"]
        if self.skip_pip:
            args.append("--skip-pip")
        # sh mounts inside the new mount namespace and execs chroot → env → hass: the pid we hold is Home Assistant's.
        script = (f'set -e; mount --rbind /dev "{r}/dev"; mount -t proc proc "{r}/proc"; '
                  f'mount --rbind /sys "{r}/sys"; mount --bind "{self.config_dir}" "{r}/config"; '
                  f'exec chroot "{r}" /usr/bin/env -i {" ".join(CHROOT_ENV)} {" ".join(args)}')
        with open(self.log_path, "ab") as out:
            out.write(f"--- start {datetime.datetime.now().isoformat()}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                                          script], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self.started_at = time.monotonic()
        _live.add(self)

    def check_alive(self) -> None:
        if self.proc is None:
            raise RigError("Home Assistant was not started")
        if self.proc.poll() is not None:
            raise RigError(f"Home Assistant exited {self.proc.returncode}; log: {self.log_path}\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_ready(self, timeout: float = 240) -> float:
        """Waits until the HTTP API answers, onboards and gets a token the first time, then waits until Home
        Assistant says it is RUNNING. Returns the seconds since start()."""
        wait_until(lambda: self._status("/api/onboarding") < 500, timeout, f"the HTTP API at {self.url}",
                   check=self.check_alive)
        if self.token is None:
            self._onboard()
        remaining = max(5.0, timeout - (time.monotonic() - self.started_at))
        def running() -> bool:
            config = self.rest("GET", "/api/config")
            if config.get("recovery_mode"):
                raise RigError(f"Home Assistant started in recovery mode; log: {self.log_path}\n{self.log_tail()}")
            return config.get("state") == "RUNNING"
        wait_until(running, remaining, "Home Assistant's state RUNNING", check=self.check_alive)
        return time.monotonic() - self.started_at

    def wait_mqtt_connected(self, timeout: float = 60) -> None:
        """Waits for the mqtt config entry to be loaded (it connected to the broker and subscribed)."""
        def loaded() -> bool:
            entries = self.ws_call({"type": "config_entries/get", "domain": "mqtt"})
            return bool(entries) and entries[0]["state"] == "loaded"
        wait_until(loaded, timeout, "the mqtt config entry to load", interval=0.5, check=self.check_alive)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM (Home Assistant's clean shutdown, which also saves .storage), SIGKILL if it does not end."""
        _live.discard(self)
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"Home Assistant did not stop in {timeout:.0f} s; SIGKILL")
            self.kill()

    def kill(self) -> None:
        _live.discard(self)
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def restart(self, timeout: float = 240) -> float:
        self.stop()
        self.start()
        return self.wait_ready(timeout)

    def __enter__(self) -> HomeAssistant:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- HTTP

    def _status(self, path: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        finally:
            conn.close()

    def _http(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
              timeout: float = 30) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def _onboard(self) -> None:
        client_id = f"{self.url}/"
        status, body = self._http("POST", "/api/onboarding/users", json.dumps({
            "client_id": client_id, "name": "Test", "username": "test", "password": "hearth-test-password",
            "language": "en"}).encode(), {"Content-Type": "application/json"})
        if status != 200:
            raise RigError(f"onboarding's user step answered {status}: {body[:300]!r}")
        code = json.loads(body)["auth_code"]
        form = urllib.parse.urlencode({"grant_type": "authorization_code", "code": code, "client_id": client_id})
        status, body = self._http("POST", "/auth/token", form.encode(),
                                  {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise RigError(f"/auth/token answered {status}: {body[:300]!r}")
        self.token = json.loads(body)["access_token"]
        # An access token lasts 30 minutes; a long-lived one outlives the suite and Home Assistant's restarts.
        self.token = self.ws_call({"type": "auth/long_lived_access_token", "client_name": "hearth-tests",
                                   "lifespan": 30})
        (self.run_dir / "token").write_text(self.token + "\n")

    def rest(self, method: str, path: str, data: Any = None, expect: tuple[int, ...] = (200, 201)) -> Any:
        """Calls the REST API with the token; returns the decoded JSON (RigError on another status)."""
        body = None if data is None else json.dumps(data).encode()
        status, raw = self._http(method, path, body, {"Authorization": f"Bearer {self.token}",
                                                      "Content-Type": "application/json"})
        if status not in expect:
            raise RigError(f"{method} {path} answered {status}: {raw[:500]!r}")
        return json.loads(raw) if raw else None

    def state(self, entity_id: str) -> dict[str, Any] | None:
        """The entity's state object, or None when Home Assistant has no such entity."""
        status, raw = self._http("GET", f"/api/states/{entity_id}", None, {"Authorization": f"Bearer {self.token}"})
        if status == 404:
            return None
        if status != 200:
            raise RigError(f"GET /api/states/{entity_id} answered {status}: {raw[:300]!r}")
        return json.loads(raw)

    def states(self) -> list[dict[str, Any]]:
        return self.rest("GET", "/api/states")

    def call_service(self, domain: str, service: str, data: dict[str, Any]) -> Any:
        return self.rest("POST", f"/api/services/{domain}/{service}", data)

    def wait_state(self, entity_id: str, predicate, timeout: float = 30, what: str = "") -> dict[str, Any]:
        """Waits until the entity exists and `predicate(state_object)` holds; returns the state object."""
        def ok():
            s = self.state(entity_id)
            return s if s is not None and predicate(s) else None
        try:
            return wait_until(ok, timeout, f"{entity_id} {what}".strip(), interval=0.2, check=self.check_alive)
        except RigError as e:
            raise RigError(f"{e}; it is now: {self.state(entity_id)}") from None

    # -- websocket

    def ws_call(self, message: dict[str, Any]) -> Any:
        """One websocket command on a fresh connection; returns its result (RigError when it failed)."""
        with ws.connect("127.0.0.1", self.port, "/api/websocket") as conn:
            self._ws_auth(conn)
            conn.send_json({"id": 1, **message})
            while True:
                reply = conn.recv_json()
                if reply.get("id") == 1 and reply.get("type") == "result":
                    break
        if not reply.get("success"):
            raise RigError(f"websocket {message.get('type')} failed: {reply.get('error')}")
        return reply.get("result")

    def ws_session(self) -> ws.Connection:
        """An authenticated websocket connection for subscriptions (the caller closes it)."""
        conn = ws.connect("127.0.0.1", self.port, "/api/websocket")
        self._ws_auth(conn)
        return conn

    def _ws_auth(self, conn: ws.Connection) -> None:
        hello = conn.recv_json()
        if hello.get("type") != "auth_required":
            raise RigError(f"websocket: expected auth_required, got {hello}")
        conn.send_json({"type": "auth", "access_token": self.token})
        reply = conn.recv_json()
        if reply.get("type") != "auth_ok":
            raise RigError(f"websocket authentication failed: {reply}")

    # -- registries

    def devices(self) -> list[dict[str, Any]]:
        return self.ws_call({"type": "config/device_registry/list"})

    def entities(self) -> list[dict[str, Any]]:
        return self.ws_call({"type": "config/entity_registry/list"})

    def entity_by_unique_id(self, platform: str, unique_id: str) -> dict[str, Any] | None:
        for e in self.entities():
            if e.get("platform") == platform and e.get("unique_id") == unique_id:
                return e
        return None


# --------------------------------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="ha-rig", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="build the cached root if missing, print its path")
    sub.add_parser("path", help="print the cached root's path (built or not)")
    run = sub.add_parser("run", help="start Home Assistant against a broker and keep it running until ^C")
    run.add_argument("--broker-port", type=int, help="a broker on 127.0.0.1 (default: start a private one)")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    if args.cmd == "path":
        print(root_dir())
        return 0
    if args.cmd == "install":
        t = time.monotonic()
        root = install()
        info = json.loads((root / ".complete").read_text())
        log(f"ready in {time.monotonic() - t:.1f} s; built {info['built']}: {info['seconds']}, {info['megabytes']} MB")
        print(root)
        return 0
    with contextlib.ExitStack() as stack:
        port = args.broker_port or stack.enter_context(Broker()).port
        ha = stack.enter_context(HomeAssistant(port))
        ha.start()
        took = ha.wait_ready()
        ha.wait_mqtt_connected()
        print(f"url {ha.url}\ntoken {ha.token}\nbroker 127.0.0.1:{port}\nrun {ha.run_dir}\nready in {took:.1f} s",
              flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while ha.proc.poll() is None:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RigError as e:
        log(f"error: {e}")
        sys.exit(1)
