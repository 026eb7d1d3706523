# Before the reboot: a user's name and room, startUpOnOff, on/off and levels, all over MQTT; the
# hub keeps them in state.json on the data disk (restore.test.sh checks them after the reboot).
#   porch-light: renamed "Front porch", startUpOnOff=on, left OFF   -> on after the reboot
#   fan:         room "garage", startUpOnOff null (as before), left ON -> on
#   kitchen-lamp: on at level 77, startUpCurrentLevel null           -> on at 77
#   desk-lamp:   startUpCurrentLevel=30, left on at 200              -> level 30
# and a bridge to another site's broker in /etc/hearth/broker/bridge.conf (bridge.test.sh).
. "$HIL_TESTS/lib.sh"

hearth_cli rename porch-light "Front porch" >/dev/null || fail "rename refused"
hearth_cli update porch-light onOff startUpOnOff=on >/dev/null || fail "startUpOnOff=on refused"
hearth_cli set porch-light onOff off >/dev/null || fail "porch off refused"
hearth_cli room fan garage >/dev/null || fail "room refused"
hearth_cli set fan onOff on >/dev/null || fail "fan on refused"
hearth_cli set kitchen-lamp onOff on >/dev/null || fail "kitchen on refused"
hearth_cli set kitchen-lamp levelControl moveToLevel level=77 transitionTime=0 >/dev/null || fail "kitchen 77 refused"
hearth_cli update desk-lamp levelControl startUpCurrentLevel=30 >/dev/null || fail "startUpCurrentLevel=30 refused"
hearth_cli set desk-lamp onOff on >/dev/null || fail "desk on refused"
hearth_cli set desk-lamp levelControl moveToLevel level=200 transitionTime=0 >/dev/null || fail "desk 200 refused"

assert_eq "Front porch" "$(attr porch-light - name)" "porch-light renamed"
assert_eq false "$(attr porch-light onOff onOff)" "porch-light off"
assert_eq 0 "$(hil_sim_value relay-1)" "relay-1 low before the reboot"
assert_eq 1 "$(hil_sim_value relay-2)" "relay-2 high before the reboot"
# state.json is written at most once a second (and again at shutdown): wait for the last change.
saved() { grep -q 'Front porch' /var/lib/hearth/state.json && grep -q garage /var/lib/hearth/state.json; }
wait_for 10 saved && ok "state.json on the data disk has the changes" || fail "state.json lacks the changes"
# A bridge to another site's broker (bridge.test.sh starts that broker after the reboot): the user's file on the
# data disk, which first boot copies into mosquitto's configuration.
cat >/etc/hearth/broker/bridge.conf <<'CONF'
connection house
address 127.0.0.1:1884
remote_clientid image-bridge
topic hearth/# both 1
cleansession true
keepalive_interval 10
restart_timeout 1
CONF
# Remember the credentials: a second boot must keep them.
sha256sum /etc/hearth/mqtt-password /etc/hearth/broker/passwd >/data/test-credentials.sha256
sync

done_testing
