# Shared helpers for HIL tests. Sourced by every tests/hil/*.test.sh; runs inside the VM under
# busybox sh (POSIX sh: no bash-isms). A test prints "ok - ..." / "not ok - ..." lines and ends
# with `done_testing`, which exits non-zero when an assertion failed.
#
# Hardware lookups read what the guest's board setup recorded in /run/hil/ (see image/board-setup).

HIL_FAILS=0
HIL_CHECKS=0

ok()   { HIL_CHECKS=$((HIL_CHECKS + 1)); echo "ok - $*"; }
fail() { HIL_CHECKS=$((HIL_CHECKS + 1)); HIL_FAILS=$((HIL_FAILS + 1)); echo "not ok - $*"; }
# A known failure, shown on every run (TAP's TODO) without failing the test: say why in the test.
todo() { HIL_CHECKS=$((HIL_CHECKS + 1)); echo "not ok - $* # TODO"; }
# Stop the test at once (setup went wrong, nothing else makes sense).
bail() { echo "not ok - $* (bailing out)"; exit 1; }

# assert_eq EXPECTED ACTUAL DESCRIPTION
assert_eq() {
    if [ "$1" = "$2" ]; then ok "$3"; else fail "$3: expected '$1', got '$2'"; fi
}

# assert_near EXPECTED ACTUAL TOLERANCE DESCRIPTION  (numbers, compared with awk)
assert_near() {
    if awk -v e="$1" -v a="$2" -v t="$3" 'BEGIN { d = e - a; if (d < 0) d = -d; exit !(a != "" && d <= t) }'; then
        ok "$4 ($2)"
    else
        fail "$4: expected $1 +/- $3, got '$2'"
    fi
}

# assert_contains HAYSTACK NEEDLE DESCRIPTION
assert_contains() {
    case "$1" in *"$2"*) ok "$3" ;; *) fail "$3: '$2' not in '$1'" ;; esac
}

# wait_for SECONDS COMMAND... : run COMMAND every 0.05 s until it succeeds; fails after SECONDS
# (wall time inside the VM: under emulation starting a process alone takes tens of ms).
wait_for() {
    _deadline=$(awk -v s="$1" '{ printf "%d", ($1 + s) * 100 }' /proc/uptime); shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$(awk '{ printf "%d", $1 * 100 }' /proc/uptime)" -ge "$_deadline" ] && return 1
        sleep 0.05
    done
    return 0
}

# --- the libgpiod tools, 1.x or 2.x ---------------------------------------------------------
# The VM carries Debian 12's libgpiod 1.6 tools or (scripts/test-gpiod2) trixie's 2.2, whose command lines and
# output differ; tests call these wrappers, which speak both.
HIL_GPIOD=$(gpiodetect --version 2>/dev/null | sed -n 's/.*(libgpiod) v\([0-9]*\)\..*/\1/p' | head -n 1)
case "$HIL_GPIOD" in
    1|2) ;;
    *) echo "not ok - cannot tell the libgpiod tools' version from 'gpiodetect --version' (bailing out)"; exit 1 ;;
esac

# gpio_hold CHIP OFFSET=VALUE... : drive lines from a gpioset in the background until it is killed; its pid in
# HIL_PID.
gpio_hold() {
    _chip=$1; shift
    if [ "$HIL_GPIOD" = 2 ]; then gpioset --chip "$_chip" "$@" & else gpioset --mode=signal "$_chip" "$@" & fi
    HIL_PID=$!
}

# gpio_get CHIP OFFSET : the line's value as 0 or 1 (gpioget requests it as an input).
gpio_get() {
    if [ "$HIL_GPIOD" = 2 ]; then gpioget --numeric --chip "$1" "$2"; else gpioget "$1" "$2"; fi
}

# gpio_find NAME : "CHIP OFFSET" of the line named NAME.
gpio_find() {
    if [ "$HIL_GPIOD" = 2 ]; then gpioinfo "$1" | cut -f 1; else gpiofind "$1"; fi
}

# gpio_monitor_edge rising|falling CHIP OFFSET FILE : a gpiomon in the background that exits after one such edge,
# writing it to FILE as gpio_edge_text prints it; its pid in HIL_PID.
gpio_monitor_edge() {
    if [ "$HIL_GPIOD" = 2 ]; then
        gpiomon --num-events=1 --edges="$1" --format='%E offset: %o' --chip "$2" "$3" >"$4" 2>&1 &
    else
        gpiomon --num-events=1 --"$1"-edge "$2" "$3" >"$4" 2>&1 &
    fi
    HIL_PID=$!
}

# gpio_edge_text rising|falling OFFSET : what gpio_monitor_edge's file contains for that edge.
gpio_edge_text() {
    if [ "$HIL_GPIOD" = 2 ]; then echo "$1 offset: $2"; else echo "$(echo "$1" | tr a-z A-Z) EDGE offset: $2"; fi
}

# hil_line_used NAME [CONSUMER] : the line is requested (by CONSUMER, when given), says gpioinfo.
hil_line_used() {
    if [ "$HIL_GPIOD" = 2 ]; then
        # v2: '<TAB>line   0:<TAB>"relay-1"<TAB>output consumer="gpioset"'; the consumer only when used.
        gpioinfo --chip "$(hil_line_chip "$1")" | grep "\"$1\"" | grep -q "consumer=${2:+\"$2\"}"
    else
        gpioinfo "$(hil_line_chip "$1")" | grep "\"$1\"" | grep "${2:+\"$2\"}" | grep -q '\[used'
    fi
}

done_testing() {
    echo "# $HIL_CHECKS checks, $HIL_FAILS failed"
    [ "$HIL_FAILS" -eq 0 ]
    exit $?
}

# --- the simulated board -------------------------------------------------------------------
# /run/hil/gpio-lines: NAME CHIP_LABEL GPIOCHIP OFFSET DIRECTION USE

_hil_field() {  # FILE KEY COLUMN
    awk -v k="$2" -v c="$3" '$1 == k { print $c; found = 1; exit } END { exit !found }' "$1" \
        || bail "nothing named '$2' in $1"
}
hil_line_chip()   { _hil_field /run/hil/gpio-lines "$1" 3; }   # relay-1 -> gpiochip0
hil_line_offset() { _hil_field /run/hil/gpio-lines "$1" 4; }   # relay-1 -> 0
hil_chip_of_label() { _hil_field /run/hil/gpio-chips "$1" 2; } # hearth-sim-main -> gpiochip0
# Names of the board's lines with DIRECTION (input|output).
hil_lines() { awk -v d="$1" '$5 == d { print $1 }' /run/hil/gpio-lines; }
# The gpio-sim directory of a line's simulated pin: .../sim_gpioN with files value and pull.
hil_sim_dir() { echo "/sys/bus/gpio/devices/$(hil_line_chip "$1")/sim_gpio$(hil_line_offset "$1")"; }
# What the line drives, as the simulator sees it (0/1).
hil_sim_value() { cat "$(hil_sim_dir "$1")/value"; }
# hil_sim_pull NAME pull-up|pull-down : what the outside world does to an input line.
hil_sim_pull() { echo "$2" > "$(hil_sim_dir "$1")/pull"; }

# /run/hil/i2c-devices: NAME DRIVER BUS ADDRESS IIO_DEVICE WORD_ORDER
hil_i2c_bus()  { _hil_field /run/hil/i2c-devices "$1" 3; }
hil_i2c_addr() { _hil_field /run/hil/i2c-devices "$1" 4; }
hil_iio_dir()  { echo "/sys/bus/iio/devices/$(_hil_field /run/hil/i2c-devices "$1" 5)"; }
# hil_i2c_set_word NAME REG WORD : store WORD (as the chip sends it) in the i2c-stub register REG.
hil_i2c_set_word() {
    _w=$(($3))
    if [ "$(_hil_field /run/hil/i2c-devices "$1" 6)" = msb-first ]; then
        _w=$(( ((_w & 0xff) << 8) | ((_w >> 8) & 0xff) ))
    fi
    # -f: the kernel driver is bound to the address.
    i2cset -f -y "$(hil_i2c_bus "$1")" "$(hil_i2c_addr "$1")" "$2" "$(printf '0x%04x' "$_w")" w
}
# hil_iio_value NAME CHANNEL : (raw + offset) * scale, from the driver's own sysfs attributes.
hil_iio_value() {
    _d=$(hil_iio_dir "$1")
    _off=0; [ -f "$_d/in_$2_offset" ] && _off=$(cat "$_d/in_$2_offset")
    awk -v r="$(cat "$_d/in_$2_raw")" -v o="$_off" -v s="$(cat "$_d/in_$2_scale")" \
        'BEGIN { printf "%.3f", (r + o) * s }'
}

# --- a broker ------------------------------------------------------------------------------
# hil_start_broker : mosquitto on 127.0.0.1:1883 (nothing leaves the VM), its pid in HIL_BROKER_PID and its
# log in /tmp/mosquitto.log; bails out when it does not come up.
hil_start_broker() {
    cat > /tmp/mosquitto.conf <<'CONF'
listener 1883 127.0.0.1
set_tcp_nodelay true
allow_anonymous true
persistence false
CONF
    mosquitto -c /tmp/mosquitto.conf >/tmp/mosquitto.log 2>&1 &
    HIL_BROKER_PID=$!
    wait_for 10 mosquitto_pub -h 127.0.0.1 -t hil/ping -m ping || bail "broker did not start: $(cat /tmp/mosquitto.log)"
}

# --- a lossy link between network namespaces (the lossy-link tests) -----------------------------------
# hil_need_iproute: iproute2's ip and tc in $IP and $TC (busybox's know neither namespaces nor netem). A VM whose
# programs come from a Debian root without iproute2 (scripts/test-gpiod2's) skips the test, saying so.
hil_need_iproute() {
    _real() { for p in /usr/sbin/$1 /sbin/$1 /usr/bin/$1 /bin/$1; do [ -x "$p" ] && [ ! -L "$p" ] && { echo "$p"; return 0; }; done; return 1; }
    [ -e /var/run ] || ln -s /run /var/run  # where ip netns keeps its names
    if ! IP=$(_real ip) || ! TC=$(_real tc); then
        echo "ok - # SKIP no iproute2 ip and tc in this VM (scripts/test-hil carries the machine's)"
        done_testing
    fi
}

# hil_netem_link NS HERE_IF HERE_ADDR THERE_IF THERE_ADDR DELAY LOSS: a veth pair from this namespace (HERE_IF,
# HERE_ADDR/24) to a new namespace NS (THERE_IF, THERE_ADDR/24, its loopback up), whose two ends both delay every
# packet by DELAY and drop LOSS of them (tc netem).
hil_netem_link() {
    $IP netns add "$1" || bail "ip netns add failed (CONFIG_NET_NS?)"
    $IP link add "$2" type veth peer name "$4" || bail "no veth pair (CONFIG_VETH?)"
    $IP link set "$4" netns "$1"
    $IP addr add "$3/24" dev "$2"
    $IP link set "$2" up
    $IP netns exec "$1" $IP addr add "$5/24" dev "$4"
    $IP netns exec "$1" $IP link set "$4" up
    $IP netns exec "$1" $IP link set lo up
    $TC qdisc add dev "$2" root netem delay "$6" loss "$7" || bail "tc netem failed (CONFIG_NET_SCH_NETEM?)"
    $IP netns exec "$1" $TC qdisc add dev "$4" root netem delay "$6" loss "$7" || bail "tc netem in the namespace failed"
}
