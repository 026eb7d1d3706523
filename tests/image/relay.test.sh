# onOff commands over MQTT move the relays' GPIO lines (gpio-sim's sim_gpioN/value), and the hub
# publishes each new state.
. "$HIL_TESTS/lib.sh"

wait_for 30 hil_line_used relay-1 hearthd || bail "hearthd does not hold relay-1"
for dev_line in porch-light:relay-1 fan:relay-2; do
    dev=${dev_line%%:*} line=${dev_line#*:}
    hearth_cli set "$dev" onOff on >/dev/null || fail "$dev: on refused"
    assert_eq 1 "$(hil_sim_value "$line")" "$dev on: $line high"
    assert_eq true "$(attr "$dev" onOff onOff)" "$dev on: published"
    hearth_cli set "$dev" onOff off >/dev/null || fail "$dev: off refused"
    assert_eq 0 "$(hil_sim_value "$line")" "$dev off: $line low"
    assert_eq false "$(attr "$dev" onOff onOff)" "$dev off: published"
done
# A raw request with mosquitto_pub, answered on the responses topic.
# The hub's retained status, subscribed to last, arrives only once the broker has taken the responses
# subscription before it: then the answer cannot be missed.
mosquitto_sub $MQ -t "$PREFIX/$HUB/responses" -t "$PREFIX/$HUB/status" -C 2 -W 10 -v >/tmp/relay-resp 2>/dev/null &
spid=$!
wait_for 10 grep -qx "$PREFIX/$HUB/status online" /tmp/relay-resp || fail "the subscriber did not subscribe"
mq_pub "$PREFIX/$HUB/devices/porch-light/set" '{"transaction":"r1","trait":"onOff","command":"toggle"}'
wait "$spid"
assert_contains "$(cat /tmp/relay-resp)" '"transaction":"r1"' "toggle answered"
assert_contains "$(cat /tmp/relay-resp)" '"ok":true' "toggle succeeded"
wait_for 5 test "$(hil_sim_value relay-1)" = 1 && ok "toggle: relay-1 high" || fail "toggle: relay-1 is $(hil_sim_value relay-1)"
hearth_cli set porch-light onOff off >/dev/null
assert_eq 0 "$(hil_sim_value relay-1)" "relay-1 back off"

done_testing
