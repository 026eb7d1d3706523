# The outside world moves an input: writing pull-up/pull-down to gpio-sim's sim_gpioN/pull is
# read by libgpiod (gpioget, v1 or v2) and raises edge events (gpiomon), on every input line of the board.
. "$HIL_TESTS/lib.sh"

for line in $(hil_lines input); do
    chip=$(hil_line_chip "$line"); off=$(hil_line_offset "$line")
    hil_sim_pull "$line" pull-down
    assert_eq 0 "$(gpio_get "$chip" "$off")" "$line reads 0 when pulled down"
    hil_sim_pull "$line" pull-up
    assert_eq 1 "$(gpio_get "$chip" "$off")" "$line reads 1 when pulled up"
    hil_sim_pull "$line" pull-down
    assert_eq 0 "$(gpio_get "$chip" "$off")" "$line reads 0 again"

    # Edge events: a monitor waits for one edge; the simulated pull makes it.
    for edge in rising falling; do
        case $edge in rising) pull=pull-up ;; *) pull=pull-down ;; esac
        ev=/tmp/events.$line.$edge
        gpio_monitor_edge $edge "$chip" "$off" "$ev"
        pid=$HIL_PID
        wait_for 5 hil_line_used "$line" gpiomon || fail "$line: gpiomon did not request the line"
        hil_sim_pull "$line" $pull
        if wait_for 5 eval '! kill -0 $pid'; then
            wait "$pid"; rc=$?
            assert_eq 0 "$rc" "$line: gpiomon exited after one $edge edge"
            assert_contains "$(cat "$ev")" "$(gpio_edge_text $edge "$off")" "$line: $pull raised a $edge edge"
        else
            kill "$pid"; wait "$pid"
            fail "$line: no $edge edge after $pull"
        fi
    done
done

done_testing
