#!/usr/bin/env bash
# The Matter stage's network: two network namespaces, "controller" and "device", joined by one veth pair (IPv6
# link-local and IPv4 10.77.0.0/24, multicast routed on it for mDNS, loopback up in each). Nothing is attached to the
# host's network, so nothing the tests send leaves the pair. Needs root (ip netns, unshare, mount).
#
# Sourced by scripts/test-matter, which calls:
#   rig_up                           make the namespaces (names unique to this run; parallel runs do not collide)
#   rig_device_start LOG CMD…        start CMD in the device namespace in its own process group, output to LOG
#   rig_device_stop                  SIGTERM the device's process group (SIGKILL after 10 s) and wait for it
#   rig_controller STORE CMD…        run CMD in the controller namespace, in a private mount namespace with STORE/data
#                                    bound on /data and STORE/tmp on /tmp (see below), and return its status
#   rig_private_mounts STORE CMD…    the same private /data and /tmp without the namespaces (the offline codecs)
#   rig_down                         stop the device and delete both namespaces (the veth pair goes with them);
#                                    safe to call twice, meant for the caller's EXIT trap
# Run directly, `tests/matter/rig.sh check` makes the rig, checks IPv4, IPv6 link-local and mDNS multicast
# between the two ends, and removes it.
#
# Why the controller needs its own mounts: connectedhomeip's controller (home-assistant-chip-core) hard-codes
# /data/chip_{factory,config,counters}.ini and writes /tmp/chip_kvs, shared by every process on the machine, and aborts
# without /data. Each controller store gets its own /data and /tmp, so two stores (or two runs) never share them and
# a second controller process on the same store finds what the first left. The host only gets an empty /data
# directory to mount on.

RIG_SUBNET4=10.77.0

rig_log() { echo "rig: $*" >&2; }

rig_up() {
    local id
    id=$(cut -c1-6 /proc/sys/kernel/random/uuid)
    RIG_ID="$id"
    # The names carry the pid of the shell that made them, so a rig left behind by a killed run can be told apart.
    RIG_NS_CTRL="hearth-matter-$$-$id-ctl"
    RIG_NS_DEV="hearth-matter-$$-$id-dev"
    rig_remove_stale
    RIG_IF_CTRL="hmc$id"
    RIG_IF_DEV="hmd$id"
    RIG_DEVICE_PID=""
    RIG_CTRL_IP4="$RIG_SUBNET4.1"
    RIG_DEV_IP4="$RIG_SUBNET4.2"
    [ -d /data ] || mkdir /data
    ip netns add "$RIG_NS_CTRL"
    ip netns add "$RIG_NS_DEV"
    local ns
    for ns in "$RIG_NS_CTRL" "$RIG_NS_DEV"; do
        # Link-local addresses usable at once (no duplicate address detection on a private link).
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
            net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
        ip -n "$ns" link set lo up
    done
    ip link add "$RIG_IF_CTRL" netns "$RIG_NS_CTRL" type veth peer name "$RIG_IF_DEV" netns "$RIG_NS_DEV"
    ip -n "$RIG_NS_CTRL" addr add "$RIG_CTRL_IP4/24" dev "$RIG_IF_CTRL"
    ip -n "$RIG_NS_DEV" addr add "$RIG_DEV_IP4/24" dev "$RIG_IF_DEV"
    ip -n "$RIG_NS_CTRL" link set "$RIG_IF_CTRL" up
    ip -n "$RIG_NS_DEV" link set "$RIG_IF_DEV" up
    # mDNS over IPv4 (224.0.0.251) needs a route; there is no default route in either namespace.
    ip -n "$RIG_NS_CTRL" route add 224.0.0.0/4 dev "$RIG_IF_CTRL"
    ip -n "$RIG_NS_DEV" route add 224.0.0.0/4 dev "$RIG_IF_DEV"
    local i
    for i in $(seq 50); do
        RIG_CTRL_IP6=$(ip -n "$RIG_NS_CTRL" -6 -o addr show dev "$RIG_IF_CTRL" scope link | awk '{print $4}' | cut -d/ -f1)
        RIG_DEV_IP6=$(ip -n "$RIG_NS_DEV" -6 -o addr show dev "$RIG_IF_DEV" scope link | awk '{print $4}' | cut -d/ -f1)
        [ -n "$RIG_CTRL_IP6" ] && [ -n "$RIG_DEV_IP6" ] && break
        sleep 0.1
    done
    [ -n "$RIG_CTRL_IP6" ] && [ -n "$RIG_DEV_IP6" ] || { rig_log "no IPv6 link-local address on the veth pair"; return 1; }
    rig_log "up: $RIG_NS_CTRL ($RIG_CTRL_IP4, $RIG_CTRL_IP6) <-> $RIG_NS_DEV ($RIG_DEV_IP4, $RIG_DEV_IP6)"
}

# Namespaces of this rig whose making shell is gone (a run killed with SIGKILL never reaches rig_down).
rig_remove_stale() {
    local ns pid
    for ns in $(ip netns list | awk '{print $1}' | grep -E '^hearth-matter-[0-9]+-[0-9a-f]+-(ctl|dev)$' || true); do
        pid=$(echo "$ns" | cut -d- -f3)
        kill -0 "$pid" 2>/dev/null && continue
        rig_log "removing $ns, left behind by pid $pid"
        local pids
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        ip netns delete "$ns" 2>/dev/null || true
    done
}

rig_device_start() {
    local log=$1
    shift
    # setsid: the device and everything it starts form one process group that rig_device_stop can end.
    setsid ip netns exec "$RIG_NS_DEV" "$@" >"$log" 2>&1 </dev/null &
    RIG_DEVICE_PID=$!
}

# Whether the device process is still running.
rig_device_alive() {
    [ -n "${RIG_DEVICE_PID:-}" ] && kill -0 "$RIG_DEVICE_PID" 2>/dev/null
}

rig_device_stop() {
    [ -n "${RIG_DEVICE_PID:-}" ] || return 0
    local i
    kill -TERM -- "-$RIG_DEVICE_PID" 2>/dev/null || true
    for i in $(seq 100); do
        kill -0 "$RIG_DEVICE_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$RIG_DEVICE_PID" 2>/dev/null || true
    wait "$RIG_DEVICE_PID" 2>/dev/null || true
    RIG_DEVICE_PID=""
}

rig_controller() {
    _rig_with_private_mounts ip netns exec "$RIG_NS_CTRL" -- "$@"
}

# rig_private_mounts STORE CMD…: the same private /data and /tmp in the caller's own network namespace (for the
# controller's offline codecs, which need no network).
rig_private_mounts() {
    _rig_with_private_mounts -- "$@"
}

# _rig_with_private_mounts [PREFIX…] -- STORE CMD…: PREFIX (e.g. ip netns exec NS) runs unshare, which runs CMD.
_rig_with_private_mounts() {
    local prefix=()
    while [ "$1" != -- ]; do prefix+=("$1"); shift; done
    shift
    local store=$1
    shift
    [ -d /data ] || mkdir /data
    mkdir -p "$store/data" "$store/tmp"
    "${prefix[@]}" unshare --mount --propagation private -- \
        /bin/sh -c 'mount --bind "$1/data" /data && mount --bind "$1/tmp" /tmp && shift && exec "$@"' \
        rig-controller "$store" "$@"
}

rig_down() {
    rig_device_stop
    local ns
    for ns in "${RIG_NS_CTRL:-}" "${RIG_NS_DEV:-}"; do
        [ -n "$ns" ] || continue
        # Anything still running in the namespace (a controller killed by a timeout leaves none, but be sure).
        local pids
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        ip netns delete "$ns" 2>/dev/null || true
    done
    RIG_NS_CTRL="" RIG_NS_DEV=""
}

# rig.sh check: the rig's own test.
rig_check() {
    trap rig_down EXIT
    trap 'exit 130' INT TERM
    rig_up
    # Unicast both ways (IPv4, IPv6 link-local) and multicast from controller to device (the mDNS groups, both
    # families), with Debian's python3: the device end listens, the controller end sends and waits for the echoes.
    local py=/usr/bin/python3 out
    out=$(mktemp)
    ip netns exec "$RIG_NS_DEV" "$py" - "$RIG_IF_DEV" >"$out" <<'EOF' &
import select, socket, struct, sys
idx = socket.if_nametoindex(sys.argv[1])
m4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); m4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
m4.bind(("", 5353))
m4.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("224.0.0.251") + socket.inet_aton("0.0.0.0"))
m6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); m6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
m6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1); m6.bind(("", 5353))
m6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
              socket.inet_pton(socket.AF_INET6, "ff02::fb") + struct.pack("@I", idx))
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
u.bind(("", 5540))
print("listening", flush=True)
got = set()
while len(got) < 4:
    ready, _, _ = select.select([m4, m6, u], [], [], 5)
    if not ready:
        break
    for s in ready:
        data, addr = s.recvfrom(100)
        got.add(data.decode())
        if s is u:
            u.sendto(b"echo-" + data, addr)
print(" ".join(sorted(got)), flush=True)
EOF
    local listener=$!
    local i
    for i in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
    ip netns exec "$RIG_NS_CTRL" "$py" - "$RIG_IF_CTRL" "$RIG_DEV_IP4" "$RIG_DEV_IP6" <<'EOF' \
        || { rig_log "unicast between the namespaces failed"; rm -f "$out"; return 1; }
import socket, sys
ifname, ip4, ip6 = sys.argv[1:]
idx = socket.if_nametoindex(ifname)
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s4.sendto(b"mcast4", ("224.0.0.251", 5353))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx); s6.sendto(b"mcast6", ("ff02::fb", 5353, 0, idx))
s4.settimeout(5); s6.settimeout(5)
s4.sendto(b"unicast4", (ip4, 5540)); assert s4.recv(100) == b"echo-unicast4"
s6.sendto(b"unicast6", (ip6, 5540, 0, idx)); assert s6.recv(100) == b"echo-unicast6"
EOF
    wait "$listener" || { rig_log "the listener failed: $(cat "$out")"; rm -f "$out"; return 1; }
    grep -q "mcast4 mcast6 unicast4 unicast6" "$out" || { rig_log "not all received: $(cat "$out")"; rm -f "$out"; return 1; }
    rm -f "$out"
    # The controller's private mounts.
    local store
    store=$(mktemp -d)
    rig_controller "$store" /bin/sh -c 'touch /data/probe /tmp/probe' || { rig_log "private /data, /tmp failed"; return 1; }
    [ -f "$store/data/probe" ] && [ -f "$store/tmp/probe" ] && [ ! -e /data/probe ] \
        || { rig_log "the controller's /data and /tmp are not private"; return 1; }
    rm -rf "$store"
    rig_log "check passed: unicast IPv4 and IPv6 link-local both ways, mDNS multicast (v4, v6), private /data and /tmp"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    [ "$(id -u)" = 0 ] || { echo "tests/matter/rig.sh needs root (ip netns, unshare)" >&2; exit 1; }
    case "${1:-}" in
        check) rig_check ;;
        *) echo "usage: tests/matter/rig.sh check   (or source it: see its opening comment)" >&2; exit 2 ;;
    esac
fi
