# After the reboot: the bridge written to /etc/hearth/broker/bridge.conf before it (prepare-reboot.test.sh) is in
# mosquitto's configuration, readable by mosquitto only, and carries the hub to another site's broker: a broker on
# 127.0.0.1:1884 (the house's) sees the hub online, and a request sent there for one of the hub's devices runs and
# is answered there.
. "$HIL_TESTS/lib.sh"

bridge=/etc/mosquitto/conf.d/hearth-bridge.conf
assert_eq "640 root mosquitto" "$(stat -c '%a %U %G' "$bridge" 2>/dev/null)" "first boot copied the bridge into mosquitto's configuration"
cmp -s /etc/hearth/broker/bridge.conf "$bridge" && ok "the copy is the user's file" || fail "the copy differs from bridge.conf"

cat >/tmp/house.conf <<'CONF'
listener 1884 127.0.0.1
allow_anonymous true
persistence false
CONF
mosquitto -c /tmp/house.conf >/tmp/house.log 2>&1 &
house=$!
online_at_house() { [ "$(mosquitto_sub -h 127.0.0.1 -p 1884 -t "$PREFIX/$HUB/status" -C 1 -W 2 2>/dev/null)" = online ]; }
wait_for 30 online_at_house && ok "the house's broker sees the hub online across the bridge" \
    || fail "the hub's status never reached the house's broker: $(tail -n 5 /tmp/house.log)"

# The hub's status, retained at the house's broker (above) and subscribed to last, arrives only once that broker
# has taken the responses subscription before it: then the answer cannot be missed.
mosquitto_sub -h 127.0.0.1 -p 1884 -t "$PREFIX/$HUB/responses" -t "$PREFIX/$HUB/status" -W 20 -v \
    >/tmp/house-responses 2>/dev/null &
sub=$!
wait_for 10 grep -qx "$PREFIX/$HUB/status online" /tmp/house-responses || fail "the subscriber at the house did not subscribe"
mosquitto_pub -h 127.0.0.1 -p 1884 -q 1 -t "$PREFIX/$HUB/devices/fan/set" -m '{"transaction":"from-house","trait":"onOff","command":"off"}'
answered() { grep -q '"transaction":"from-house","device":"fan","ok":true' /tmp/house-responses; }
wait_for 20 answered && ok "a request sent at the house's broker ran and was answered there" \
    || fail "no answer at the house's broker: $(cat /tmp/house-responses)"
wait_for 10 attr_is fan onOff onOff false && ok "the fan is off" || fail "the fan did not switch off"
kill "$sub" "$house" 2>/dev/null
wait "$sub" "$house" 2>/dev/null
rm -f /etc/hearth/broker/bridge.conf
sync

done_testing
