# Pulling the sensor (unbinding the si7020 driver from the i2c-stub chip) takes the humidity trait
# offline and its measuredValue to null; binding it again brings it back online.
. "$HIL_TESTS/lib.sh"

bus=$(hil_i2c_bus humidity-1); addr=$(hil_i2c_addr humidity-1)
dev="$bus-$(printf '%04x' "$addr")"
wait_for 20 conn_is bathroom-climate relativeHumidityMeasurement online || bail "the humidity trait is not online"
t0=$(uptime_s)
echo "$dev" >/sys/bus/i2c/drivers/si7020/unbind || bail "unbinding $dev failed"
wait_for 60 conn_is bathroom-climate relativeHumidityMeasurement offline || { show_log; fail "the humidity trait did not go offline"; }
echo "# offline after $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s"
ok "sensor unplugged: humidity offline"
assert_eq null "$(attr bathroom-climate relativeHumidityMeasurement measuredValue)" "measuredValue null while offline"
assert_eq online "$(jconn "$(doc porch-light)" onOff)" "the other devices stay online"

t0=$(uptime_s)
echo "$dev" >/sys/bus/i2c/drivers/si7020/bind || bail "binding $dev again failed"
wait_for 90 conn_is bathroom-climate relativeHumidityMeasurement online || { show_log; fail "the humidity trait did not come back online"; }
echo "# online again after $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s"
ok "sensor back: humidity online"
v=$(attr bathroom-climate relativeHumidityMeasurement measuredValue)
[ -n "$v" ] && [ "$v" != null ] && ok "measuredValue $v again" || fail "measuredValue is '$v'"

done_testing
