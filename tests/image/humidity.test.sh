# A new humidity in the si7020's i2c-stub register reaches MQTT as measuredValue within one poll
# interval (5 s in this board's hearth.yaml).
. "$HIL_TESTS/lib.sh"

interval=5
wait_for 20 conn_is bathroom-climate relativeHumidityMeasurement online || bail "the humidity trait is not online"
old=$(attr bathroom-climate relativeHumidityMeasurement measuredValue)
# 0x9c40 -> RH = 0x9c40 * 125 / 65536 - 6 = 70.29 %
watch_start bathroom-climate /tmp/humidity-docs
t0=$(uptime_s)
hil_i2c_set_word humidity-1 0xe5 0x9c40 || bail "i2cset failed"
want=$(awk -v m="$(hil_iio_value humidity-1 humidityrelative)" 'BEGIN { printf "%d", m / 10 }')
echo "# register 0xe5 = 0x9c40: the driver says $want (hundredths %RH); published before: $old"
seen=""
check() {
    while IFS= read -r d; do
        v=$(jfield "$d" relativeHumidityMeasurement measuredValue)
        [ -n "$v" ] && [ "$v" != null ] && [ "$v" -ge $((want - 2)) ] && [ "$v" -le $((want + 2)) ] && { seen=$v; return 0; }
    done </tmp/humidity-docs
    return 1
}
wait_for $((interval * 2 + 5)) check
t1=$(uptime_s)
watch_stop
check
lat=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
assert_near "$want" "$seen" 2 "measuredValue published"
# One interval, plus the slack of reading, publishing and this loop under emulation.
awk -v l="$lat" -v i="$interval" 'BEGIN { exit !(l <= i + 1.5) }' && ok "published ${lat} s after the register changed (interval ${interval} s)" \
    || fail "published only ${lat} s after the register changed (interval ${interval} s)"

done_testing
