# init restarts hearthd when it dies: after a SIGKILL the broker publishes the hub's last will
# (`offline`), and a new hearthd is online again within a few seconds.
. "$HIL_TESTS/lib.sh"

old=$(pidof hearthd) || bail "no hearthd"
mosquitto_sub $MQ -t "$PREFIX/$HUB/status" -W 40 >/tmp/status-log 2>/dev/null &
spid=$!
wait_for 10 test -s /tmp/status-log || fail "no retained status"
t0=$(uptime_s)
kill -KILL "$old"
restarted() { p=$(pidof hearthd) && [ "$p" != "$old" ]; }
wait_for 20 restarted && ok "hearthd restarted (pid $old -> $(pidof hearthd))" || fail "hearthd was not restarted"
wait_for 30 grep -q offline /tmp/status-log && ok "last will: offline published" || fail "no offline after the kill"
back() { tail -n 1 /tmp/status-log | grep -qx online; }
wait_for 30 back && ok "online again after $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s" || fail "not online again"
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
wait_for 20 hil_line_used relay-1 hearthd && ok "the new hearthd holds relay-1" || fail "relay-1 not held after the restart"

done_testing
