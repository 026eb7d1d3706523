# The humidity sensor: the real si7020 IIO driver reads an i2c-stub chip. Setting the stub's
# measurement register moves in_humidityrelative_* the way the driver's scale and offset say.
. "$HIL_TESTS/lib.sh"

dev=humidity-1
iio=$(hil_iio_dir $dev)
[ -d "$iio" ] || bail "no IIO device for $dev"
client=/sys/bus/i2c/devices/$(hil_i2c_bus $dev)-$(printf '%04x' "$(hil_i2c_addr $dev)")
assert_eq si7020 "$(basename "$(readlink "$client/driver")")" "$dev is bound to the si7020 driver"
[ -d "$client/${iio##*/}" ] && ok "its IIO device ${iio##*/} hangs off the I2C client" \
    || fail "no ${iio##*/} under $client"
assert_eq -786 "$(cat "$iio/in_humidityrelative_offset")" "humidity offset is the driver's"
assert_near 7.629394531 "$(cat "$iio/in_humidityrelative_scale")" 0.000000001 "humidity scale is 125000/16384"

# The board's initial word 0x7c80: raw = 0x7c80 >> 2 = 7968; (7968 - 786) * 7.6294 = 54795 m%.
assert_eq 7968 "$(cat "$iio/in_humidityrelative_raw")" "initial raw humidity from the board file"
assert_near 54.795 "$(awk -v m="$(hil_iio_value $dev humidityrelative)" 'BEGIN { print m / 1000 }')" 0.01 \
    "initial humidity in %"

# word(RH) = (RH + 6) * 65536 / 125, the Si7020 datasheet's formula.
for rh in 40 65.5 90 12.25; do
    word=$(awk -v rh="$rh" 'BEGIN { printf "%d", (rh + 6) * 65536 / 125 }')
    hil_i2c_set_word $dev 0xe5 "$word" || fail "i2cset for $rh %"
    assert_eq $((word >> 2)) "$(cat "$iio/in_humidityrelative_raw")" "raw after storing $rh %"
    m=$(hil_iio_value $dev humidityrelative)
    assert_near "$rh" "$(awk -v m="$m" 'BEGIN { print m / 1000 }')" 0.01 "humidity reads $rh %"
done

# The driver clamps raw humidity to 786..13893 (0 % .. 100 %).
hil_i2c_set_word $dev 0xe5 0xfffc
assert_eq 13893 "$(cat "$iio/in_humidityrelative_raw")" "raw clamped at 100 %"
hil_i2c_set_word $dev 0xe5 0x0000
assert_eq 786 "$(cat "$iio/in_humidityrelative_raw")" "raw clamped at 0 %"

# Temperature, register 0xe3: degC = word * 175.72 / 65536 - 46.85.
hil_i2c_set_word $dev 0xe3 0x6680
assert_eq $((0x6680 >> 2)) "$(cat "$iio/in_temp_raw")" "raw temperature"
assert_near 23.51 "$(awk -v m="$(hil_iio_value $dev temp)" 'BEGIN { print m / 1000 }')" 0.01 "temperature in degC"

done_testing
