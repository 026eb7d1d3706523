# An output line requested through libgpiod (gpioset, v1 or v2) drives gpio-sim's simulated pin:
# sim_gpioN/value follows every output line of the board, named as the board file says.
. "$HIL_TESTS/lib.sh"

ok "libgpiod $HIL_GPIOD tools: $(gpiodetect --version | head -n 1)"

for label in $(awk '{ print $1 }' /run/hil/gpio-chips); do
    assert_contains "$(gpiodetect)" "[$label]" "gpiodetect lists chip $label"
done

for line in $(hil_lines output); do
    chip=$(hil_line_chip "$line"); off=$(hil_line_offset "$line")
    assert_eq "$chip $off" "$(gpio_find "$line")" "gpio_find $line"
    for v in 1 0 1; do
        gpio_hold "$chip" "$off=$v"
        pid=$HIL_PID
        if wait_for 5 hil_line_used "$line" gpioset; then
            assert_eq "$v" "$(hil_sim_value "$line")" "$line driven to $v is $v at gpio-sim"
        else
            fail "$line: gpioset did not request the line"
        fi
        kill "$pid"; wait "$pid" 2>/dev/null
    done
    wait_for 5 eval '! hil_line_used "$line"' && ok "$line released" || fail "$line: not released"
done

# Two lines at once: the simulator sees both, independently.
a=relay-1 b=relay-2
gpio_hold "$(hil_line_chip $a)" "$(hil_line_offset $a)=1" "$(hil_line_offset $b)=0"
pid=$HIL_PID
wait_for 5 hil_line_used "$a" gpioset || fail "gpioset did not request $a and $b"
assert_eq "1 0" "$(hil_sim_value $a) $(hil_sim_value $b)" "$a=1 and $b=0 together"
kill "$pid"; wait "$pid" 2>/dev/null

done_testing
