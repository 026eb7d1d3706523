# First boot of a fresh image: the hub came up from init as the user hearth and is online, its log shows
# the Matter pairing code; first boot made the MQTT credentials with the right owners and modes; the
# broker refuses anonymous clients and wrong passwords, and the ACL keeps the hub's credentials to its
# own tree.
. "$HIL_TESTS/lib.sh"

wait_for 30 status_is online || { show_log; bail "the hub is not online"; }
ok "hub '$HUB' online"
started=$(sed -n 's/.*starting hearthd at uptime \([0-9.]*\).*/\1/p' /var/log/hearthd.log | head -n1)
online_ms=$(sed -n 's/.*online \([0-9]*\) ms after exec.*/\1/p' /var/log/hearthd.log | head -n1)
[ -n "$started" ] && [ -n "$online_ms" ] && echo "# boot to online: $(awk -v s="$started" -v m="$online_ms" 'BEGIN { printf "%.1f", s + m / 1000 }') s after the kernel started (hearthd started at ${started} s, online ${online_ms} ms later)"

# The Matter pairing code the hub prints while it belongs to no fabric (once its node listens, which may come
# after "online"), printed here for the record.
pairing_shown() {
    grep -qE 'Matter: pair this hub with the manual code [0-9]{4}-[0-9]{3}-[0-9]{4} or the QR code MT:[0-9A-Z.-]{19,}' /var/log/hearthd.log
}
if wait_for 30 pairing_shown; then
    ok "first boot's log shows the Matter pairing code"
    grep -A16 'Matter: pair this hub' /var/log/hearthd.log | head -n 17 | sed 's/^/# /'
else
    fail "no Matter pairing code in /var/log/hearthd.log"
fi

pid=$(pidof hearthd) || fail "no hearthd process"
assert_eq hearth "$(stat -c %U "/proc/$pid")" "hearthd runs as the user hearth"
grep -q '^Groups:.*997' "/proc/$pid/status" && ok "hearthd has the group gpio" || fail "hearthd lacks the group gpio"

assert_eq "640 root hearth" "$(stat -c '%a %U %G' /etc/hearth/mqtt-password)" "the hub's password: root and the hub only"
assert_eq "600 root root" "$(stat -c '%a %U %G' /etc/hearth/admin-password)" "the admin password: root only"
assert_eq "640 root mosquitto" "$(stat -c '%a %U %G' /etc/hearth/broker/passwd)" "mosquitto's password file"
assert_eq "750 hearth hearth" "$(stat -c '%a %U %G' /var/lib/hearth)" "the state directory"
grep -q "^$HUB:\\\$" /etc/hearth/broker/passwd && ok "password file has a hashed entry for the hub" || fail "no hashed entry for '$HUB'"
grep -q "$(cat /etc/hearth/mqtt-password)" /etc/hearth/broker/passwd && fail "a plain password in mosquitto's file" || ok "no plain password in mosquitto's file"
grep -q '^/dev/vda /var/lib/hearth ext4 ' /proc/mounts && ok "the state directory is on the data disk (/dev/vda)" \
    || fail "/var/lib/hearth is not the data disk: $(grep ' /var/lib/hearth ' /proc/mounts)"

# Anonymous and wrong-password clients are refused.
mosquitto_sub -h 127.0.0.1 -t "$PREFIX/#" -C 1 -W 3 >/dev/null 2>&1 && fail "an anonymous client was let in" || ok "anonymous client refused"
mosquitto_sub -h 127.0.0.1 -u "$HUB" -P wrong -t "$PREFIX/#" -C 1 -W 3 >/dev/null 2>&1 && fail "a wrong password was let in" || ok "wrong password refused"

# The hub's own credentials: its tree and the peers' published topics, never a peer's requests.
hubpw=$(cat /etc/hearth/mqtt-password)
mosquitto_pub -h 127.0.0.1 -u hearth-admin -P "$HEARTH_PASSWORD" -t "$PREFIX/peer/status" -m online -r
got=$(mosquitto_sub -h 127.0.0.1 -u "$HUB" -P "$hubpw" -t "$PREFIX/peer/status" -C 1 -W 3 2>/dev/null)
assert_eq online "$got" "hub credentials read a peer's status"
# The peer's retained status (above), subscribed to last, arrives only once the broker has taken the set
# subscription before it: from then on a request that got through could not be missed.
mosquitto_sub $MQ -t "$PREFIX/peer/devices/lamp/set" -t "$PREFIX/peer/status" -C 2 -W 4 -v >/tmp/peer-set 2>/dev/null &
spid=$!
wait_for 4 grep -qx "$PREFIX/peer/status online" /tmp/peer-set || fail "the admin's subscriber did not subscribe"
mosquitto_pub -h 127.0.0.1 -u "$HUB" -P "$hubpw" -t "$PREFIX/peer/devices/lamp/set" -m '{"get":true}' 2>/dev/null
mosquitto_pub -h 127.0.0.1 -u "$HUB" -P "$hubpw" -t "other/thing" -m x 2>/dev/null
wait "$spid"
assert_eq "$PREFIX/peer/status online" "$(cat /tmp/peer-set)" "hub credentials cannot send requests to a peer"
got=$(mosquitto_sub -h 127.0.0.1 -u "$HUB" -P "$hubpw" -t "$PREFIX/peer/devices/lamp/set" -t "other/#" -C 1 -W 2 2>/dev/null)
assert_eq "" "$got" "hub credentials read no peer's requests"
mosquitto_pub $MQ -t "$PREFIX/peer/status" -r -n

# The CLI on the board, through the admin credentials.
out=$(hearth_cli devices) && ok "hearth devices" || fail "hearth devices failed"
assert_contains "$out" porch-light "the CLI lists porch-light"

done_testing
