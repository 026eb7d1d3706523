# Hearth's door contact and PIR on the simulated board: hearthd (carried in by scripts/test-hil) binds a
# ContactSensor to door-contact and an OccupancySensor to motion-sensor; pulling the gpio-sim lines (a bouncing
# reed, a PIR pulse) moves stateValue and occupancy in the published documents, each change is one event on the
# events topic, the occupancy holds until holdTime after the pulse, and a holdTime out of its limits is refused.
. "$HIL_TESTS/lib.sh"
uptime_s() { cut -d' ' -f1 /proc/uptime; }

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"

hil_start_broker
broker=$HIL_BROKER_PID
mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >/tmp/sensors.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/sensors.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

# The door starts open (the pull-up, as the contact binding requests it); the PIR's output low.
hil_sim_pull door-contact pull-up
hil_sim_pull motion-sensor pull-down
mkdir -p /tmp/sensors
cat > /tmp/sensors/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/sensors/state
mqtt:
  host: 127.0.0.1
  port: 1883
devices:
  - id: front-door
    type: ContactSensor
    binding: {kind: contact, pin: door-contact}
  - id: hall-motion
    type: OccupancySensor
    traits:
      occupancySensing: {holdTime: 3, holdTimeLimits: {holdTimeMin: 1, holdTimeMax: 600, holdTimeDefault: 30}}
    binding: {kind: pir, pin: motion-sensor}
YAML
/hil/bin/hearthd run --config /tmp/sensors/hearth.yaml >/tmp/sensors/hearthd.log 2>&1 &
hub=$!
wait_for 60 grep -qx 'hearth/hil/status online' /tmp/sensors.out || bail "hearthd did not come online: $(cat /tmp/sensors/hearthd.log)"
if hil_line_used door-contact hearthd && hil_line_used motion-sensor hearthd; then
    ok "hearthd watches door-contact and motion-sensor"
else
    fail "the lines are not requested by hearthd"
fi

# last_doc DEVICE : the newest document of DEVICE the subscriber saw.
last_doc() { grep "^hearth/hil/devices/$1 {" /tmp/sensors.out | tail -n 1; }
doc_has() { last_doc "$1" | grep -q "$2"; }
events_of() { grep -c "^hearth/hil/devices/$1/events " /tmp/sensors.out; }

wait_for 10 doc_has front-door '"stateValue":false' || fail "front-door does not start open"
wait_for 10 doc_has hall-motion '"occupancy":{"occupied":false}' || fail "hall-motion does not start clear"
doc_has hall-motion '"holdTimeLimits":{"holdTimeMin":1,"holdTimeMax":600,"holdTimeDefault":30}' \
    && ok "holdTimeLimits is published as a struct" || fail "holdTimeLimits: $(last_doc hall-motion)"

# The door closes with reed bounce: five flips far inside the 20 ms debounce, ending closed (to ground).
pull="$(hil_sim_dir door-contact)/pull"
for p in pull-down pull-up pull-down pull-up pull-down; do echo "$p" >"$pull"; done
wait_for 10 doc_has front-door '"stateValue":true' && ok "closed: stateValue true" || fail "front-door not closed"
# The door stays shut half a second: the input's timing, not a wait (the hub has published the close).
sleep 0.5
echo pull-up >"$pull"
wait_for 10 doc_has front-door '"stateValue":false' && ok "open again: stateValue false" || fail "front-door not open"
wait_for 10 test "$(events_of front-door)" -ge 2
assert_eq 2 "$(events_of front-door)" "one stateChange per move, none for the bounce"
assert_contains "$(grep '^hearth/hil/devices/front-door/events ' /tmp/sensors.out | head -n 1)" \
    '{"type":"ContactSensor","trait":"booleanState","event":"stateChange","fields":{"stateValue":true}}' "the close event"

# A PIR pulse: occupied at once, and still occupied when the pulse has ended, until holdTime (3 s) after it.
hil_sim_pull motion-sensor pull-up
wait_for 10 doc_has hall-motion '"occupancy":{"occupied":true}' && ok "motion: occupied" || fail "hall-motion not occupied"
before=$(uptime_s)  # taken before the pulse ends, so the hold measured from here can only be longer
hil_sim_pull motion-sensor pull-down
wait_for 20 doc_has hall-motion '"occupancy":{"occupied":false}' && ok "clear after the hold time" || fail "hall-motion stays occupied"
held=$(awk -v a="$before" -v b="$(uptime_s)" 'BEGIN { printf "%d", (b - a) * 1000 }')
# A lower bound (the hold cannot end early), never an upper one: emulation is slow.
[ "$held" -ge 3000 ] && ok "held $held ms after the pulse ended (holdTime 3 s)" || fail "cleared after only $held ms"
assert_contains "$(grep '^hearth/hil/devices/hall-motion/events ' /tmp/sensors.out | tail -n 1)" \
    '"event":"occupancyChanged","fields":{"occupancy":{"occupied":false}}' "the clear event"

# holdTime: written within its limits, refused outside with nothing changed.
request() {
    mosquitto_pub -h 127.0.0.1 -q 1 -t hearth/hil/devices/hall-motion/set \
        -m "{\"transaction\":\"$1\",\"trait\":\"occupancySensing\",\"update\":{\"holdTime\":$2}}"
    wait_for 20 grep -q "^hearth/hil/responses {\"transaction\":\"$1\"" /tmp/sensors.out
}
request h1 45 || fail "no response to holdTime 45"
wait_for 10 doc_has hall-motion '"holdTime":45' && ok "holdTime written" || fail "holdTime not 45"
request h2 0 || fail "no response to holdTime 0"
assert_contains "$(grep '^hearth/hil/responses {"transaction":"h2"' /tmp/sensors.out)" \
    '"status":"constraintError","message":"holdTime 0 is out of range; allowed: 1…600 (holdTimeLimits)"' "holdTime 0 refused"
doc_has hall-motion '"holdTime":45' && ok "holdTime still 45" || fail "holdTime changed: $(last_doc hall-motion)"

kill -TERM "$hub"
wait "$hub"
assert_eq 0 "$?" "hearthd stops cleanly"
if hil_line_used door-contact || hil_line_used motion-sensor; then fail "a line is still requested"; else ok "lines released"; fi
kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
done_testing
