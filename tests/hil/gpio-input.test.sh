# The outside world moves an input: writing pull-up/pull-down to gpio-sim's sim_gpioN/pull is
# read by libgpiod (gpioget) and raises edge events (gpiomon), on every input line of the board.
. "$HIL_TESTS/lib.sh"

used_by_gpiomon() { gpioinfo "$(hil_line_chip "$1")" | grep "\"$1\"" | grep -q '"gpiomon"'; }

for line in $(hil_lines input); do
    chip=$(hil_line_chip "$line"); off=$(hil_line_offset "$line")
    hil_sim_pull "$line" pull-down
    assert_eq 0 "$(gpioget "$chip" "$off")" "$line reads 0 when pulled down"
    hil_sim_pull "$line" pull-up
    assert_eq 1 "$(gpioget "$chip" "$off")" "$line reads 1 when pulled up"
    hil_sim_pull "$line" pull-down
    assert_eq 0 "$(gpioget "$chip" "$off")" "$line reads 0 again"

    # Edge events: a monitor waits for one rising then one falling edge.
    ev=/tmp/events.$off
    gpiomon --num-events=2 "$chip" "$off" >"$ev" 2>&1 &
    pid=$!
    wait_for 5 used_by_gpiomon "$line" || fail "$line: gpiomon did not request the line"
    hil_sim_pull "$line" pull-up
    wait_for 5 grep -q 'RISING EDGE' "$ev" && ok "$line: pull-up raised a rising edge" \
        || fail "$line: no rising edge after pull-up ($(cat "$ev"))"
    hil_sim_pull "$line" pull-down
    wait_for 5 grep -q 'FALLING EDGE' "$ev" && ok "$line: pull-down raised a falling edge" \
        || fail "$line: no falling edge after pull-down ($(cat "$ev"))"
    if wait_for 5 sh -c "! kill -0 $pid"; then
        wait "$pid"; assert_eq 0 "$?" "$line: gpiomon saw its 2 events and exited 0"
    else
        kill "$pid"; fail "$line: gpiomon still running"
    fi
    assert_eq 2 "$(grep -c 'EDGE' "$ev")" "$line: exactly two events"
done

done_testing
