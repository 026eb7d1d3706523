# A mosquitto broker on 127.0.0.1 inside the VM (no network leaves it): publish, subscribe.
. "$HIL_TESTS/lib.sh"

hil_start_broker
broker=$HIL_BROKER_PID
ok "broker listens on 127.0.0.1:1883"

# The subscriber's last topic holds a retained marker, which the broker sends only once it has taken the
# subscriptions before it: when the marker is in the output, what is published from now on reaches the subscriber.
mosquitto_pub -h 127.0.0.1 -t hil/subscribed -m ready -r
mosquitto_sub -h 127.0.0.1 -t 'hearth/#' -t hil/subscribed -C 3 -W 10 -v >/tmp/sub.out 2>&1 &
sub=$!
wait_for 10 grep -qx 'hil/subscribed ready' /tmp/sub.out || bail "the subscriber did not subscribe: $(cat /tmp/sub.out)"
mosquitto_pub -h 127.0.0.1 -t hearth/relay-1/set -m on -q 1
mosquitto_pub -h 127.0.0.1 -t hearth/humidity-1 -m 54.8 -r
wait "$sub"
assert_eq 0 "$?" "subscriber got its messages"
assert_eq "hil/subscribed ready
hearth/relay-1/set on
hearth/humidity-1 54.8" "$(cat /tmp/sub.out)" "messages arrive in order"
assert_eq "hearth/humidity-1 54.8" "$(mosquitto_sub -h 127.0.0.1 -t hearth/humidity-1 -C 1 -W 5 -v)" "retained message"

kill "$broker"; wait "$broker" 2>/dev/null
done_testing
