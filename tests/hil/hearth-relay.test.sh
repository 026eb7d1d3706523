# Hearth itself on the simulated board: hearthd (carried in by scripts/test-hil, with the board file) binds a light
# to relay-1, and a client's commands over MQTT move the gpio-sim line; the state is published before the
# response, and a stop leaves the relay at its safe state with the line released.
. "$HIL_TESTS/lib.sh"

[ -x /hil/bin/hearthd ] || bail "no /hil/bin/hearthd (scripts/test-hil carries the built one in)"
[ -f /hil/board.yaml ] || bail "no /hil/board.yaml (scripts/test-hil carries the board file in)"

hil_start_broker
broker=$HIL_BROKER_PID

# Everything the hub publishes, from before it starts.
mosquitto_sub -h 127.0.0.1 -t 'hearth/hil/#' -v >/tmp/hub.out 2>&1 &
sub=$!
subscribed() { mosquitto_pub -h 127.0.0.1 -t hearth/hil/barrier -m ready && grep -q '^hearth/hil/barrier ready$' /tmp/hub.out; }
wait_for 10 subscribed || bail "the subscriber is not subscribed"

mkdir -p /tmp/hearth
cat > /tmp/hearth/hearth.yaml <<'YAML'
hub:
  id: hil
  board: /hil/board.yaml
  stateDirectory: /tmp/hearth/state
mqtt:
  host: 127.0.0.1
  port: 1883
devices:
  - id: porch
    name: Porch
    type: OnOffLight
    binding: {kind: relay, pin: relay-1}
YAML
/hil/bin/hearthd run --config /tmp/hearth/hearth.yaml >/tmp/hearthd.log 2>&1 &
hub=$!
if wait_for 60 grep -qx 'hearth/hil/status online' /tmp/hub.out; then
    ok "hearthd is online"
else
    bail "hearthd did not come online: $(cat /tmp/hearthd.log)"
fi
assert_eq 0 "$(hil_sim_value relay-1)" "relay-1 starts off"
if hil_line_used relay-1 hearthd; then ok "hearthd holds relay-1"; else fail "relay-1 is not requested by hearthd"; fi

# request TRANSACTION COMMAND : sends it to the porch light and waits for its response.
request() {
    mosquitto_pub -h 127.0.0.1 -q 1 -t hearth/hil/devices/porch/set \
        -m "{\"transaction\":\"$1\",\"trait\":\"onOff\",\"command\":\"$2\"}"
    wait_for 20 grep -q "^hearth/hil/responses {\"transaction\":\"$1\",\"device\":\"porch\",\"ok\":true}$" /tmp/hub.out
}
# published_before_response AFTER_LINE STATE TRANSACTION : after line AFTER_LINE of the subscriber's output, a
# document of the porch light with onOff STATE comes before the response to TRANSACTION.
published_before_response() {
    awk -v after="$1" -v state="\"onOff\":$2" -v response="hearth/hil/responses {\"transaction\":\"$3\"" '
        NR > after && !doc && index($0, "hearth/hil/devices/porch {") == 1 && index($0, state) { doc = NR }
        NR > after && index($0, response) == 1 { ordered = doc > 0; exit }
        END { exit !ordered }' /tmp/hub.out
}
previous=0 n=0
for step in on:1:true off:0:false on:1:true; do
    command=${step%%:*} rest=${step#*:}; value=${rest%%:*} state=${rest#*:}
    # A transaction of its own for each request: the same bytes again within a minute are taken for a QoS 1 copy
    # and answered, not run (docs/mqtt-api.md).
    n=$((n + 1)); t="$command-$n"
    if request "$t" "$command"; then ok "'$command' answered ok"; else fail "no ok response to '$command'"; fi
    assert_eq "$value" "$(hil_sim_value relay-1)" "after '$command' relay-1 is $value at gpio-sim"
    if published_before_response "$previous" "$state" "$t"; then
        ok "the state (onOff $state) was published before the response"
    else
        fail "no document with onOff $state before the response to '$command': $(tail -n 5 /tmp/hub.out)"
    fi
    previous=$(wc -l </tmp/hub.out)
done

# exited PID : the process has ended (a zombie until this shell waits for it).
exited() { [ ! -e "/proc/$1/stat" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat")" = Z ]; }
kill -TERM "$hub"
if wait_for 20 exited "$hub"; then
    wait "$hub"
    assert_eq 0 "$?" "hearthd stops cleanly on SIGTERM"
else
    fail "hearthd still runs 20 s after SIGTERM: $(tail -n 5 /tmp/hearthd.log)"
    kill -KILL "$hub"
fi
assert_eq 0 "$(hil_sim_value relay-1)" "a stopped hub leaves relay-1 at its safe state (off)"
if hil_line_used relay-1; then fail "relay-1 is still requested"; else ok "relay-1 is released"; fi
if wait_for 10 grep -qx 'hearth/hil/status offline' /tmp/hub.out; then ok "the hub said offline"; else fail "no offline"; fi

kill "$sub" "$broker" 2>/dev/null
wait "$sub" "$broker" 2>/dev/null
done_testing
