# A window covering on two relays (relay-3 up, relay-4 down) on gpio-sim: never both lines high while hearthd runs
# them, a SIGKILL in the middle of a run and both lines then left high (pulled up from outside) until a new hearthd
# requests them both low, the position kept in the state directory across the kill, and a move after the restart.
. "$HIL_TESTS/lib.sh"

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"

hil_start_broker
broker=$HIL_BROKER_PID
# Appended (O_APPEND): start_hub empties the file under the subscriber, and a plain write would then land at its old
# offset, past a hole of NULs that would begin the line of the restarted hub's first document (the only one it
# publishes until something changes), which no '^topic' pattern then matches.
: >/tmp/hub.out
mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >>/tmp/hub.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/hub.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

mkdir -p /tmp/hearth
cat > /tmp/hearth/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/hearth/state
mqtt:
  host: 127.0.0.1
  port: 1883
devices:
  - id: blind
    name: Blind
    type: WindowCovering
    binding: {kind: relayCover, up: relay-3, down: relay-4, openTime: 6s, closeTime: 6s, reversePause: 500ms}
YAML

start_hub() {
    : >/tmp/hub.out
    /hil/bin/hearthd run --config /tmp/hearth/hearth.yaml >>/tmp/hearthd.log 2>&1 &
    hub=$!
    wait_for 60 grep -qx 'hearth/hil/status online' /tmp/hub.out || bail "hearthd did not come online: $(tail /tmp/hearthd.log)"
}
n=0
command() {  # COMMAND [ARGS]
    n=$((n + 1))
    mosquitto_pub -h 127.0.0.1 -q 1 -t hearth/hil/devices/blind/set \
        -m "{\"transaction\":\"c$n\",\"trait\":\"windowCovering\",\"command\":\"$1\"${2:+,\"args\":$2}}"
    wait_for 20 grep -q "^hearth/hil/responses {\"transaction\":\"c$n\",\"device\":\"blind\",\"ok\":true}$" /tmp/hub.out
}
both_high=0
# watch SECONDS : samples both lines every 20 ms; counts the samples with both high.
watch_lines() {
    end=$(( $(date +%s) + $1 ))
    while [ "$(date +%s)" -lt "$end" ]; do
        if [ "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" = 11 ]; then both_high=$((both_high + 1)); fi
        sleep 0.02
    done
}
# The value is the attribute's, not attributeInfo's entry of the same name further on.
position() {
    grep '^hearth/hil/devices/blind {' /tmp/hub.out | tail -n 1 \
        | sed -n -e 's/"attributeInfo".*//' -e 's/.*"currentPositionLiftPercent100ths":\([0-9]*\).*/\1/p'
}

start_hub
assert_eq 00 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "both relays start off"
command upOrOpen || fail "no ok response to upOrOpen"
watch_lines 8
assert_eq 00 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "open: the run has ended"
command downOrClose || fail "no ok response to downOrClose"
watch_lines 1
command upOrOpen || fail "no ok response to upOrOpen (reversing)"
watch_lines 1
command downOrClose || fail "no ok response to downOrClose"
watch_lines 3
assert_eq 01 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "closing: only relay-4 is on"
assert_eq 0 "$both_high" "the two relays were never seen on together"

kill -KILL "$hub"; wait "$hub" 2>/dev/null
# What a crash can leave: both lines high (here the simulated outside pulls them up once released).
hil_sim_pull relay-3 pull-up
hil_sim_pull relay-4 pull-up
assert_eq 11 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "after the kill both lines are high"
saved=$(sed -n 's/.*"currentPositionLiftPercent100ths":\([0-9]*\).*/\1/p' /tmp/hearth/state/state.json)

start_hub
assert_eq 00 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "the restarted hub requested both relays off"
# The outside lets go again, so that a line the hub releases falls low.
hil_sim_pull relay-3 pull-down
hil_sim_pull relay-4 pull-down
# The restarted hub published the blind's document before `online`.
between_ends() { kept=$(position); [ -n "$kept" ] && [ "$kept" -gt 0 ] && [ "$kept" -lt 10000 ]; }
if wait_for 10 between_ends; then
    assert_eq "$saved" "$kept" "the position saved before the kill is the restarted hub's"
else
    fail "no position between the ends after the restart: '$kept' (saved: '$saved')"
fi
watch_lines 2
assert_eq 00 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "nothing moves after the restart until asked"
command upOrOpen || fail "no ok response to upOrOpen after the restart"
watch_lines 8
assert_eq 0 "$both_high" "the two relays were never seen on together after the restart"
wait_for 10 eval '[ "$(position)" = 0 ]' && ok "fully open after the restart" || fail "position $(position), not 0"

kill -TERM "$hub"; wait "$hub"
assert_eq 0 "$?" "hearthd stops cleanly on SIGTERM"
assert_eq 00 "$(hil_sim_value relay-3)$(hil_sim_value relay-4)" "a stopped hub leaves both relays off"
kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
done_testing
