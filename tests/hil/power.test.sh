# The power monitor: the real ina2xx hwmon driver reads an INA219 emulated on i2c-stub. Setting the stub's
# registers (SMBus words, MSB first: stored swapped like the si7020's) moves in1_input, curr1_input and
# power1_input the way the driver's LSBs say; writing shunt_resistor rescales current and power, which is
# what a plug's `meter: {shunt: …}` does (Tests/HearthHardwareTests/HardwareHILTests.swift reads it through Hearth).
. "$HIL_TESTS/lib.sh"

dev=power-1
client=/sys/bus/i2c/devices/$(hil_i2c_bus $dev)-$(printf '%04x' "$(hil_i2c_addr $dev)")
[ -d "$client" ] || bail "no I2C client for $dev"
assert_eq ina2xx "$(basename "$(readlink "$client/driver")")" "$dev is bound to the ina2xx driver"
hwmon=""
for h in "$client"/hwmon/hwmon*; do [ -d "$h" ] && hwmon=$h; done
[ -n "$hwmon" ] && ok "its hwmon device ${hwmon##*/} hangs off the I2C client" || bail "no hwmon device under $client"
assert_eq ina219 "$(cat "$hwmon/name")" "hwmon name is the chip's"
assert_eq 10000 "$(cat "$hwmon/shunt_resistor")" "the driver's default shunt: 10 mΩ in µΩ"

# The board file's initial words (set again: a test before this one in the VM may have moved them).
hil_i2c_set_word $dev 0x02 0x5dc0
hil_i2c_set_word $dev 0x03 0x012c
hil_i2c_set_word $dev 0x04 0x01f4
assert_eq 12000 "$(cat "$hwmon/in1_input")" "bus voltage: (0x5dc0 >> 3) × 4 mV"
assert_eq 500 "$(cat "$hwmon/curr1_input")" "current: 500 LSB × 1 mA"
assert_eq 6000000 "$(cat "$hwmon/power1_input")" "power: 300 LSB × 20 mW, in µW"

# The driver's calibration register (0x05) is what it wrote when it bound: 4096 for an INA219.
reg=$(i2cget -f -y "$(hil_i2c_bus $dev)" "$(hil_i2c_addr $dev)" 0x05 w)
assert_eq 0x0010 "$reg" "calibration 4096 (0x1000) stored MSB first"

# New readings: 5 V, −200 mA (two's complement), 1 W.
hil_i2c_set_word $dev 0x02 $(( (5000 / 4) << 3 ))
hil_i2c_set_word $dev 0x04 0xff38
hil_i2c_set_word $dev 0x03 50
assert_eq 5000 "$(cat "$hwmon/in1_input")" "bus voltage 5 V"
assert_eq -200 "$(cat "$hwmon/curr1_input")" "a current flowing backwards is negative"
assert_eq 1000000 "$(cat "$hwmon/power1_input")" "power 1 W (unsigned: the chip's power register has no sign)"

# A 0.1 Ω shunt: the current LSB becomes 100 µA, the power LSB 2 mW.
echo 100000 > "$hwmon/shunt_resistor" || fail "writing shunt_resistor"
assert_eq 100000 "$(cat "$hwmon/shunt_resistor")" "shunt 0.1 Ω"
hil_i2c_set_word $dev 0x04 500
hil_i2c_set_word $dev 0x03 300
assert_eq 50 "$(cat "$hwmon/curr1_input")" "500 LSB × 100 µA"
assert_eq 600000 "$(cat "$hwmon/power1_input")" "300 LSB × 2 mW, in µW"
echo 0 > "$hwmon/shunt_resistor" 2>/dev/null && fail "a 0 Ω shunt was taken" || ok "a 0 Ω shunt is refused (EINVAL)"

# Put the board's state back for whoever reads next.
echo 10000 > "$hwmon/shunt_resistor"
hil_i2c_set_word $dev 0x02 0x5dc0
hil_i2c_set_word $dev 0x03 0x012c
hil_i2c_set_word $dev 0x04 0x01f4
assert_eq 6000000 "$(cat "$hwmon/power1_input")" "restored"

done_testing
