# After the reboot (the same data disk): names, rooms, startUpOnOff and levels are restored as the
# spec says, first boot kept the credentials, and neither relay line showed a glitch while the hub
# came up: /hil/early (early-sampler.sh) sampled the lines from before hearthd requested them,
# with the wire pulled up, so a line requested at its restored value (on = high) never reads 0.
. "$HIL_TESTS/lib.sh"

wait_for 30 status_is online || { show_log; bail "the hub is not online"; }
wait_for 10 hil_line_used relay-1 hearthd || fail "hearthd does not hold relay-1"
wait_for 10 hil_line_used relay-2 hearthd || fail "hearthd does not hold relay-2"
# The sampler watches the held lines half a second more (a glitch right after the request would show there):
# an observation window, not a wait for anything.
sleep 0.5
: >/run/sampler.stop
wait_for 5 test -e /run/sampler.done || fail "the sampler did not stop"
for l in relay-1 relay-2; do
    seen=$(tr '\n' ' ' </run/sampler.$l)
    echo "# $l values in order: $seen($(cat /run/sampler.count) samples)"
    assert_eq "1 " "$seen" "$l: no glitch while booting (went straight to on)"
done
[ "$(cat /run/sampler.count)" -ge 100 ] && ok "the sampler took $(cat /run/sampler.count) samples" || fail "too few samples: $(cat /run/sampler.count)"

assert_eq "Front porch" "$(attr porch-light - name)" "porch-light's name restored"
assert_eq true "$(attr porch-light onOff onOff)" "porch-light on (startUpOnOff=on, was off)"
assert_eq on "$(attr porch-light onOff startUpOnOff)" "porch-light's startUpOnOff restored"
assert_eq 1 "$(hil_sim_value relay-1)" "relay-1 high"
assert_eq garage "$(attr fan - roomId)" "fan's room restored"
assert_eq true "$(attr fan onOff onOff)" "fan on (startUpOnOff null: as before)"
assert_eq 1 "$(hil_sim_value relay-2)" "relay-2 high"
assert_eq true "$(attr kitchen-lamp onOff onOff)" "kitchen-lamp on (as before)"
assert_eq 77 "$(attr kitchen-lamp levelControl currentLevel)" "kitchen-lamp at 77 (startUpCurrentLevel null: as before)"
assert_eq 30 "$(attr desk-lamp levelControl startUpCurrentLevel)" "desk-lamp's startUpCurrentLevel restored"
assert_eq 30 "$(attr desk-lamp levelControl currentLevel)" "desk-lamp at 30 (startUpCurrentLevel=30)"

sha256sum -c /data/test-credentials.sha256 >/dev/null 2>&1 && ok "first boot kept the credentials" || fail "the credentials changed at the second boot"

# Everything still works after the reboot.
hearth_cli set porch-light onOff off >/dev/null || fail "off refused"
assert_eq 0 "$(hil_sim_value relay-1)" "relay-1 follows commands after the reboot"

done_testing
