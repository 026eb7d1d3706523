# A mosquitto broker on 127.0.0.1 inside the VM (no network leaves it): publish, subscribe.
. "$HIL_TESTS/lib.sh"

hil_start_broker
broker=$HIL_BROKER_PID
ok "broker listens on 127.0.0.1:1883"

mosquitto_sub -h 127.0.0.1 -t 'hearth/#' -C 2 -W 10 -v >/tmp/sub.out 2>&1 &
sub=$!
sleep 0.5
mosquitto_pub -h 127.0.0.1 -t hearth/relay-1/set -m on -q 1
mosquitto_pub -h 127.0.0.1 -t hearth/humidity-1 -m 54.8 -r
wait "$sub"
assert_eq 0 "$?" "subscriber got its messages"
assert_eq "hearth/relay-1/set on
hearth/humidity-1 54.8" "$(cat /tmp/sub.out)" "messages arrive in order"
assert_eq "hearth/humidity-1 54.8" "$(mosquitto_sub -h 127.0.0.1 -t hearth/humidity-1 -C 1 -W 5 -v)" "retained message"

kill "$broker"; wait "$broker" 2>/dev/null
done_testing
