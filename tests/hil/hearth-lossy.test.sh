# Hearth over a lossy link: hearthd runs in a network namespace of its own and reaches mosquitto over a veth pair
# whose two ends both delay every packet by 200 ms and drop 20 % of them (tc netem on each end: a request and its
# answer cross the link twice, 400 ms at best). The client stays on the broker's side, on loopback, so what is
# measured is the hub's link. N toggles of the porch relay, each with its transaction at QoS 1, one of them sent
# twice as a client that lost its PUBACK would: every request is answered, the relay is toggled exactly N times
# (a toggle run twice would show), and the answer times are printed, with those of 6 toggles on the same link
# without netem for comparison.
. "$HIL_TESTS/lib.sh"

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"
hil_need_iproute
N=${HIL_LOSSY_REQUESTS:-20}

# The link: veth-broker (10.77.0.1, this namespace) <-> veth-hub (10.77.0.2, namespace "hub").
hil_netem_link hub veth-broker 10.77.0.1 veth-hub 10.77.0.2 200ms 20%
assert_contains "$($TC qdisc show dev veth-broker)" "loss 20%" "netem drops 20 % on the broker's end"
assert_contains "$($IP netns exec hub $TC qdisc show dev veth-hub)" "delay 200ms" "netem delays 200 ms on the hub's end"

cat > /tmp/lossy-mosquitto.conf <<'CONF'
listener 1883
set_tcp_nodelay true
allow_anonymous true
persistence false
CONF
mosquitto -c /tmp/lossy-mosquitto.conf >/tmp/lossy-mosquitto.log 2>&1 &
broker=$!
wait_for 10 mosquitto_pub -h 127.0.0.1 -t hil/ping -m ping || bail "broker did not start: $(cat /tmp/lossy-mosquitto.log)"

mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >/tmp/lossy.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/lossy.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

mkdir -p /tmp/lossy
cat > /tmp/lossy/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/lossy/state
mqtt:
  host: 10.77.0.1
  port: 1883
devices:
  - id: porch
    name: Porch
    type: OnOffLight
    binding: {kind: relay, pin: relay-1}
YAML
now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
t0=$(now_ms)
$IP netns exec hub /hil/bin/hearthd run --config /tmp/lossy/hearth.yaml >/tmp/lossy-hearthd.log 2>&1 &
hub=$!
if wait_for 60 grep -qx 'hearth/hil/status online' /tmp/lossy.out; then
    ok "hearthd is online over the lossy link after $(( $(now_ms) - t0 )) ms"
else
    bail "hearthd did not come online over the lossy link: $(cat /tmp/lossy-hearthd.log)"
fi
assert_eq 0 "$(hil_sim_value relay-1)" "relay-1 starts off"

# send TRANSACTION : one toggle at QoS 1 from the broker's side.
send() {
    mosquitto_pub -h 127.0.0.1 -q 1 -t hearth/hil/devices/porch/set \
        -m "{\"transaction\":\"$1\",\"trait\":\"onOff\",\"command\":\"toggle\"}"
}
answered() { grep -q "^hearth/hil/responses {\"transaction\":\"$1\",\"device\":\"porch\",\"ok\":true}$" /tmp/lossy.out; }
# netem LOSS DELAY : what both ends of the link do from now on.
netem() {
    $TC qdisc change dev veth-broker root netem delay "$2" loss "$1"
    $IP netns exec hub $TC qdisc change dev veth-hub root netem delay "$2" loss "$1"
}
# The same request on a clean link first, for comparison (the VM is emulated: its own times are not a board's).
netem 0% 0ms
: >/tmp/lossy-clean
for i in 1 2 3 4 5 6; do
    start=$(now_ms)
    send "clean-$i"
    wait_for 30 answered "clean-$i" && echo $(( $(now_ms) - start )) >>/tmp/lossy-clean
done
sort -n /tmp/lossy-clean | awk '{ t[NR] = $1 } END {
    printf "# answer times on the same link without netem (ms, %d requests): min %d, median %d, max %d\n", NR, t[1], t[int((NR + 1) / 2)], t[NR] }'
netem 20% 200ms
: >/tmp/lossy-times
unanswered=0 resent=0
i=1
while [ "$i" -le "$N" ]; do
    start=$(now_ms)
    send "lossy-$i"
    # Request 1 is sent a second time, as a client that lost its PUBACK publishes it again.
    [ "$i" -eq 1 ] && send "lossy-$i"
    # A client that hears nothing sends the same bytes again, as an application retries: if the hub's link dropped
    # after the request ran and before its answer got through (an answer is QoS 0), the copy gets that answer again
    # without running; if the request never arrived, the copy runs. Either way it runs once.
    attempt=1
    until wait_for 30 answered "lossy-$i"; do
        if [ "$attempt" -ge 3 ]; then
            unanswered=$((unanswered + 1))
            echo "# lossy-$i: no answer within 3 × 30 s"
            break
        fi
        echo "# lossy-$i: no answer within 30 s; sent again"
        send "lossy-$i"
        attempt=$((attempt + 1)) resent=$((resent + 1))
    done
    answered "lossy-$i" && echo $(( $(now_ms) - start )) >>/tmp/lossy-times
    i=$((i + 1))
done
echo "# requests sent again after 30 s of silence: $resent"
assert_eq 0 "$unanswered" "every one of the $N toggles was answered"
# A toggle run twice would leave the relay at the other value, and show as an extra state change.
assert_eq $((N % 2)) "$(hil_sim_value relay-1)" "relay-1 was toggled $N times, not $((N + 1))"
changes=$(awk '
    index($0, "hearth/hil/devices/porch {") == 1 {
        s = index($0, "\"onOff\":true") ? "on" : (index($0, "\"onOff\":false") ? "off" : "")
        if (s != "" && s != last) { if (last != "") n++; last = s }
    }
    END { print n + 0 }' /tmp/lossy.out)
assert_eq "$((N + 6))" "$changes" "the hub published $((N + 6)) changes of the relay (6 on the clean link, $N on the lossy one)"
copies=$(grep -c 'a copy of request "lossy-1"' /tmp/lossy-hearthd.log)
[ "$copies" -ge 1 ] && ok "the copy of lossy-1 was recognised (answered again, not run again)" \
    || fail "the copy of lossy-1 was recognised (answered again, not run again): $copies in the log"
sort -n /tmp/lossy-times | awk '{ t[NR] = $1 } END {
    printf "# answer times over the lossy link (ms, %d requests): min %d, median %d, p90 %d, max %d\n",
        NR, t[1], t[int((NR + 1) / 2)], t[int(NR * 0.9 + 0.5)], t[NR] }'

kill -TERM "$hub"
exited() { [ ! -e "/proc/$1/stat" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat")" = Z ]; }
wait_for 30 exited "$hub" || kill -KILL "$hub"
wait "$hub" 2>/dev/null
kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
$IP link del veth-broker 2>/dev/null
$IP netns del hub 2>/dev/null
done_testing
