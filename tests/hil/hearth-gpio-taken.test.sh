# A GPIO line taken by another program while hearthd runs, on the real kernel: hearthd drives relay-1; the gpio-sim
# chip goes away and comes back (as an unplugged expander or a reloaded overlay does), and gpioset requests relay-1
# on the new chip before hearthd can. Nothing is commanded: hearthd's probe (it reads its line back every 5 s) finds
# its old line dead (ENODEV), the relay goes offline and, while gpioset holds the line, says who holds it; commands
# on it are answered `unavailable` and one on another device (the humidity sensor) is answered meanwhile; once
# gpioset lets go, hearthd takes the line back by itself. Detection and recovery times are printed.
. "$HIL_TESTS/lib.sh"

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"

hil_start_broker
broker=$HIL_BROKER_PID
mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >/tmp/taken.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/taken.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

mkdir -p /tmp/taken
cat > /tmp/taken/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/taken/state
mqtt:
  host: 127.0.0.1
  port: 1883
devices:
  - id: porch
    name: Porch
    type: OnOffLight
    binding: {kind: relay, pin: relay-1}
  - id: bath
    name: Bath
    type: HumiditySensor
    binding: {kind: humiditySensor, sensor: humidity-1, interval: 5s}
YAML
/hil/bin/hearthd run --config /tmp/taken/hearth.yaml >/tmp/taken/hearthd.log 2>&1 &
hub=$!
wait_for 60 grep -qx 'hearth/hil/status online' /tmp/taken.out || bail "hearthd did not come online: $(cat /tmp/taken/hearthd.log)"
now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# request DEVICE TRANSACTION BODY : publishes it; answer TRANSACTION prints its response once it came.
request() { mosquitto_pub -h 127.0.0.1 -q 1 -t "hearth/hil/devices/$1/set" -m "{\"transaction\":\"$2\",$3}"; }
response() { grep "^hearth/hil/responses {\"transaction\":\"$1\"" /tmp/taken.out | head -n 1; }
answered() { [ -n "$(response "$1")" ]; }

request porch t1 '"trait":"onOff","command":"on"'
wait_for 20 answered t1 && assert_contains "$(response t1)" '"ok":true' "porch switched on"
assert_eq 1 "$(hil_sim_value relay-1)" "relay-1 is driven high"

# The chip goes away and comes back with a new number; gpioset takes relay-1 at once.
cfs=/sys/kernel/config/gpio-sim/hearth-sim-main
old=$(hil_line_chip relay-1)
down=$(now_ms)
echo 0 > "$cfs/live" || bail "cannot take the gpio-sim chip down"
echo 1 > "$cfs/live" || bail "cannot bring the gpio-sim chip back"
new=$(cat "$cfs/gpio-bank0/chip_name")
# Record the new chip as the board setup did, for this test and the ones after it.
sed -i "s/ $old / $new /" /run/hil/gpio-lines /run/hil/gpio-chips
ok "the chip came back as $new (was $old)"
gpio_hold "$new" "$(hil_line_offset relay-1)=0"
holder=$HIL_PID
wait_for 10 hil_line_used relay-1 gpioset || bail "gpioset did not take relay-1"

if wait_for 30 grep -q "porch OnOffLight (relay): offline: " /tmp/taken/hearthd.log; then
    ok "porch went offline by itself $(( $(now_ms) - down )) ms after the chip went away"
else
    fail "porch did not go offline: $(grep porch /tmp/taken/hearthd.log | tail -n 3)"
fi
grep -q "porch OnOffLight (relay): offline: the relay's line stopped answering: " /tmp/taken/hearthd.log \
    && ok "the reason: its line stopped answering" || fail "no reason: $(grep porch /tmp/taken/hearthd.log | tail -n 3)"
wait_for 30 grep -q "porch OnOffLight (relay): offline: requesting relay-1 .* is busy: another program ('gpioset') holds it" \
    /tmp/taken/hearthd.log && ok "then offline naming the holder" \
    || fail "no 'busy ... gpioset' line: $(grep porch /tmp/taken/hearthd.log | tail -n 3)"
request bath t3 '"get":true'
wait_for 20 answered t3 && assert_contains "$(response t3)" '"ok":true' "the humidity sensor answers meanwhile"
request porch t4 '"trait":"onOff","command":"on"'
wait_for 20 answered t4 && assert_contains "$(response t4)" '"code":"unavailable"' "porch answers unavailable while the line is taken"

kill "$holder"
wait "$holder" 2>/dev/null
t=$(now_ms)
if wait_for 90 grep -q 'porch OnOffLight (relay): back online' /tmp/taken/hearthd.log; then
    ok "porch is back by itself $(( $(now_ms) - t )) ms after gpioset let go"
else
    fail "porch did not come back: $(grep porch /tmp/taken/hearthd.log | tail -n 3)"
fi
request porch t5 '"trait":"onOff","command":"on"'
wait_for 20 answered t5 && assert_contains "$(response t5)" '"ok":true' "porch takes commands again"
assert_eq 1 "$(hil_sim_value relay-1)" "relay-1 on the new chip follows"
if hil_line_used relay-1 hearthd; then ok "hearthd holds relay-1 again"; else fail "relay-1 is not hearthd's"; fi

kill -TERM "$hub"
wait "$hub"
kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
done_testing
