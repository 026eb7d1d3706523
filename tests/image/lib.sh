# Shared helpers for the image's end-to-end tests (tests/image/*.test.sh). They run inside the
# booted board image (scripts/test-image), as root, next to the hub that init started. They talk
# to the hub over MQTT only (mosquitto_pub/sub and the hearth CLI), and touch the hardware only
# through gpio-sim's sysfs files and the i2c-stub registers. POSIX sh (busybox).
#
# The HIL assertions and board lookups (ok, fail, assert_eq, wait_for, hil_sim_value, ...) come
# from tests/hil/lib.sh, carried in as hil-lib.sh.
. "$HIL_TESTS/hil-lib.sh"

HUB=$(hostname)
PREFIX=hearth
export HEARTH_HUB="$HUB" HEARTH_USERNAME=hearth-admin
HEARTH_PASSWORD=$(cat /etc/hearth/admin-password) || bail "no /etc/hearth/admin-password (first boot did not run?)"
export HEARTH_PASSWORD
MQ="-h 127.0.0.1 -p 1883 -u $HEARTH_USERNAME -P $HEARTH_PASSWORD"

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# mq_get TOPIC [SECONDS]: the retained message of TOPIC (empty when none within SECONDS, default 3).
mq_get() {
    # shellcheck disable=SC2086
    mosquitto_sub $MQ -t "$1" -C 1 -W "${2:-3}" 2>/dev/null
}
# mq_pub TOPIC MESSAGE
mq_pub() {
    # shellcheck disable=SC2086
    mosquitto_pub $MQ -t "$1" -m "$2"
}
# doc DEVICE: the device's retained document.
doc() { mq_get "$PREFIX/$HUB/devices/$1"; }

# jfield JSON TRAIT KEY: the value of KEY inside TRAIT's object (the first after it: its
# attributes come before attributeInfo), quotes removed. `jfield "$d" onOff onOff` -> true.
# TRAIT "-" means the document's top level (name, roomId, ...).
jfield() {
    printf '%s\n' "$1" | awk -v t="\"$2\":{\"namespace\"" -v k="\"$3\":" '{
        s = $0
        if (t != "\"-\":{\"namespace\"") { i = index(s, t); if (!i) exit 1; s = substr(s, i + length(t)) }
        j = index(s, k); if (!j) exit 1
        s = substr(s, j + length(k))
        if (substr(s, 1, 1) == "\"") { s = substr(s, 2); print substr(s, 1, index(s, "\"") - 1) }
        else { match(s, /^[^,}]*/); print substr(s, 1, RLENGTH) }
    }'
}
# jconn JSON TRAIT: that trait's connectivityState.
jconn() { jfield "$1" "$2" connectivityState; }

# attr DEVICE TRAIT KEY: the attribute as the hub published it now.
attr() { jfield "$(doc "$1")" "$2" "$3"; }
# attr_is DEVICE TRAIT KEY VALUE (for wait_for)
attr_is() { [ "$(attr "$1" "$2" "$3")" = "$4" ]; }
status_is() { [ "$(mq_get "$PREFIX/$HUB/status")" = "$1" ]; }
conn_is() { [ "$(jconn "$(doc "$1")" "$2")" = "$3" ]; }

# hearth ARGS...: the CLI against this board's broker, with a timeout of its own.
hearth_cli() { _sub=$1; shift; timeout 20 hearth "$_sub" --timeout 8 "$@"; }

# watch_start DEVICE FILE: record every document of DEVICE published from now on (one per line)
# in FILE; returns once the subscription is live (the retained document has arrived).
watch_start() {
    : >"$2"
    # shellcheck disable=SC2086
    mosquitto_sub $MQ -t "$PREFIX/$HUB/devices/$1" -W 300 >"$2" 2>/dev/null &
    WATCH_PID=$!
    wait_for 10 test -s "$2" || fail "subscribing to $1 did not deliver its retained document"
}
watch_stop() { kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null; }

# The hub's own log, for a failing test.
show_log() { echo "# --- hearthd.log (last ${1:-30} lines)"; tail -n "${1:-30}" /var/log/hearthd.log | sed 's/^/# /'; }
