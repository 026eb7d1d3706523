# A bouncing press on the wall switch (gpio-sim pull flips faster than the 20 ms debounce) toggles
# the light it controls exactly once, moves its relay, and the new state is published.
. "$HIL_TESTS/lib.sh"

wait_for 30 hil_line_used wall-switch-1 hearthd || bail "hearthd does not watch wall-switch-1"
before=$(attr porch-light onOff onOff)
[ "$before" = true ] && want=false || want=true
watch_start porch-light /tmp/switch-docs
# Press: three contact bounces, then closed (active-low: pulled down). Release the same way. The
# flips are shell builtins writing gpio-sim's pull file: far inside the 20 ms debounce.
pull="$(hil_sim_dir wall-switch-1)/pull"
t0=$(uptime_s)
for p in pull-down pull-up pull-down pull-up pull-down pull-up pull-down; do echo "$p" >"$pull"; done
echo "# press: 7 flips in $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
wait_for 10 attr_is porch-light onOff onOff "$want" || fail "porch-light did not toggle to $want"
# The switch is held closed 0.3 s (the input's timing, not a wait: the toggle is published).
sleep 0.3
for p in pull-up pull-down pull-up pull-down pull-up; do echo "$p" >"$pull"; done
# An observation window, not a wait: a second toggle from the release's bounces would be published within it.
sleep 1.5
watch_stop
assert_eq "$want" "$(attr porch-light onOff onOff)" "porch-light toggled once to $want"
[ "$want" = true ] && line=1 || line=0
assert_eq "$line" "$(hil_sim_value relay-1)" "relay-1 follows"
states=$(while IFS= read -r d; do jfield "$d" onOff onOff; done </tmp/switch-docs | uniq | tr '\n' ' ')
assert_eq "$before $want " "$states" "published states: one change"
assert_eq 0 "$(attr hall-switch switch currentPosition)" "the switch is released again"
# Back off for the tests after this one.
hearth_cli set porch-light onOff off >/dev/null

done_testing
