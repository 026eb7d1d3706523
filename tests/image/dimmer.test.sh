# moveToLevel with a transition over MQTT: the level moves through the transition and reaches the
# target, reported as Matter says (remainingTime at the start, currentLevel at most once a second
# and at the end). This board has no PWM: kitchen-lamp runs on the engine alone; the PWM output
# path is covered by the sysfs-tree tests (Tests/HearthHardwareTests, PWMDimmer).
. "$HIL_TESTS/lib.sh"

hearth_cli set kitchen-lamp onOff on >/dev/null || fail "on refused"
hearth_cli set kitchen-lamp levelControl moveToLevel level=50 transitionTime=0 >/dev/null || fail "moveToLevel 50 refused"
assert_eq 50 "$(attr kitchen-lamp levelControl currentLevel)" "instant move to 50"

watch_start kitchen-lamp /tmp/dimmer-docs
t0=$(uptime_s)
hearth_cli set kitchen-lamp levelControl moveToLevel level=200 transitionTime=30 >/dev/null || fail "moveToLevel 200 over 3 s refused"
wait_for 15 attr_is kitchen-lamp levelControl currentLevel 200 || fail "the level did not reach 200"
t1=$(uptime_s)
watch_stop
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
awk -v t="$took" 'BEGIN { exit !(t >= 2.5) }' && ok "the transition took ${took} s (3 s asked)" || fail "200 reached after ${took} s, before the 3 s transition could end"
levels=$(while IFS= read -r d; do jfield "$d" levelControl currentLevel; done </tmp/dimmer-docs | tr '\n' ' ')
remaining=$(while IFS= read -r d; do jfield "$d" levelControl remainingTime; done </tmp/dimmer-docs | tr '\n' ' ')
echo "# currentLevel published: $levels; remainingTime: $remaining"
between=0
for l in $levels; do [ "$l" -gt 50 ] && [ "$l" -lt 200 ] && between=$((between + 1)); done
[ "$between" -ge 1 ] && ok "intermediate levels published ($between)" || fail "no level between 50 and 200 was published: $levels"
echo "$remaining" | tr ' ' '\n' | grep -qE '^[1-9][0-9]*$' && ok "remainingTime published at the start" || fail "no remainingTime > 0 published: $remaining"
assert_eq true "$(attr kitchen-lamp onOff onOff)" "still on"

done_testing
