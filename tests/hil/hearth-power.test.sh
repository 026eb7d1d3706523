# Hearth's metered plug on the simulated board: hearthd (carried in by scripts/test-hil) binds an OnOffPlugInUnit to
# relay-2 with its meter on power-1, the INA219 the real ina2xx driver reads from i2c-stub. The published document
# carries the driver's power, voltage and current in Matter's units; new register words show up in it; the
# energy integrated from them is a snapshot with an event, and a restart of hearthd continues it from the state file.
. "$HIL_TESTS/lib.sh"

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"

hil_start_broker
broker=$HIL_BROKER_PID
mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >/tmp/power.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/power.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

# 12 V, 500 mA, 6 W with the driver's default 10 mΩ shunt (the board file's words).
dev=power-1
hil_i2c_set_word $dev 0x02 0x5dc0
hil_i2c_set_word $dev 0x03 0x012c
hil_i2c_set_word $dev 0x04 0x01f4
mkdir -p /tmp/power
cat > /tmp/power/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/power/state
mqtt:
  host: 127.0.0.1
  port: 1883
devices:
  - id: desk-plug
    type: OnOffPlugInUnit
    binding: {kind: relay, pin: relay-2, meter: {sensor: power-1, interval: 1s, snapshotInterval: 1s}}
YAML
start_hub() {
    /hil/bin/hearthd run --config /tmp/power/hearth.yaml >>/tmp/power/hearthd.log 2>&1 &
    hub=$!
}
start_hub
wait_for 60 grep -qx 'hearth/hil/status online' /tmp/power.out || bail "hearthd did not come online: $(cat /tmp/power/hearthd.log)"

last_doc() { grep "^hearth/hil/devices/$1 {" /tmp/power.out | tail -n 1; }
doc_has() { last_doc "$1" | grep -q "$2"; }
# energy : the energy of the newest cumulativeEnergyImported published (mWh), or nothing.
energy() { last_doc desk-plug | sed -n 's/.*"cumulativeEnergyImported":{"energy":\([0-9]*\),.*/\1/p'; }
energy_at_least() { _e=$(energy); [ -n "$_e" ] && [ "$_e" -ge "$1" ]; }

wait_for 20 doc_has desk-plug '"activePower":6000' && ok "activePower 6000 mW from power1_input" \
    || fail "no activePower 6000: $(last_doc desk-plug)"
doc_has desk-plug '"voltage":12000' && ok "voltage 12000 mV" || fail "voltage: $(last_doc desk-plug)"
doc_has desk-plug '"activeCurrent":500' && ok "activeCurrent 500 mA" || fail "activeCurrent: $(last_doc desk-plug)"
doc_has desk-plug '"powerMode":"dc"' && ok "powerMode dc" || fail "powerMode: $(last_doc desk-plug)"

# The load doubles: the next reading publishes it.
hil_i2c_set_word $dev 0x03 600
hil_i2c_set_word $dev 0x04 1000
wait_for 20 doc_has desk-plug '"activePower":12000' && ok "12 W after the registers changed" \
    || fail "activePower: $(last_doc desk-plug)"

# Energy grows with every snapshot (12 W is 3.3 mWh a second), each with one event.
wait_for 30 energy_at_least 10 && ok "energy $(energy) mWh after a few seconds" \
    || fail "energy does not grow: $(last_doc desk-plug)"
assert_contains "$(grep '^hearth/hil/devices/desk-plug/events ' /tmp/power.out | tail -n 1)" \
    '"trait":"electricalEnergyMeasurement","event":"cumulativeEnergyMeasured","fields":{"energyImported":{"energy":' \
    "a cumulativeEnergyMeasured event"

# A restart continues the total from the state file.
kill -TERM "$hub"
wait "$hub"
assert_eq 0 "$?" "hearthd stops cleanly"
saved=$(sed -n 's/.*"cumulativeEnergyImported":{"endSystime":[0-9]*,"energy":\([0-9]*\)}.*/\1/p' /tmp/power/state/state.json)
[ -n "$saved" ] && [ "$saved" -ge 10 ] && ok "the state file keeps $saved mWh" || fail "state.json: $(cat /tmp/power/state/state.json)"
: >/tmp/power.out
start_hub
wait_for 60 grep -qx 'hearth/hil/status online' /tmp/power.out || bail "hearthd did not come back: $(tail -n 20 /tmp/power/hearthd.log)"
wait_for 20 energy_at_least 0 || fail "no energy after the restart"
first=$(energy)
[ "$first" -ge "$saved" ] && ok "after the restart the total starts at $first mWh (saved $saved)" \
    || fail "the total went back: $first < $saved"

# The chip stops answering: unbinding the driver makes the hwmon device vanish (ENODEV/ENOENT on the next read).
client=/sys/bus/i2c/devices/$(hil_i2c_bus $dev)-$(printf '%04x' "$(hil_i2c_addr $dev)")
echo "$(basename "$client")" > /sys/bus/i2c/drivers/ina2xx/unbind
wait_for 30 doc_has desk-plug '"activePower":null' && ok "the meter's readings go null" || fail "$(last_doc desk-plug)"
grep -q 'desk-plug OnOffPlugInUnit (meter): offline: ' /tmp/power/hearthd.log && ok "offline with a reason in the log" \
    || fail "no offline line: $(tail -n 5 /tmp/power/hearthd.log)"
echo "$(basename "$client")" > /sys/bus/i2c/drivers/ina2xx/bind
wait_for 30 doc_has desk-plug '"activePower":12000' && ok "back by itself once the driver is bound again" \
    || fail "not back: $(last_doc desk-plug)"

kill -TERM "$hub"
wait "$hub"
# The board file's words again, for the tests that run after this one in the same VM.
hil_i2c_set_word $dev 0x03 0x012c
hil_i2c_set_word $dev 0x04 0x01f4
kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
done_testing
