# The second boot's /hil/early hook (run by rcS before mosquitto and hearthd start): pull the relay
# wires up (as a relay module's input pull-up would) and sample both lines' gpio-sim value in a
# tight loop, keeping every distinct value in order, until restore.test.sh says stop.
HIL_TESTS=/hil/tests
. "$HIL_TESTS/hil-lib.sh"
for l in relay-1 relay-2; do hil_sim_pull "$l" pull-up; done
f1="$(hil_sim_dir relay-1)/value" f2="$(hil_sim_dir relay-2)/value"
(
    p1="" p2="" n=0
    while [ ! -e /run/sampler.stop ]; do
        read -r v1 <"$f1"; read -r v2 <"$f2"
        [ "$v1" != "$p1" ] && { echo "$v1" >>/run/sampler.relay-1; p1=$v1; }
        [ "$v2" != "$p2" ] && { echo "$v2" >>/run/sampler.relay-2; p2=$v2; }
        n=$((n + 1))
    done
    echo "$n" >/run/sampler.count
    : >/run/sampler.done
) </dev/null >/dev/null 2>&1 &
# The first sample is taken before this returns (before any service starts).
n=0; while [ ! -s /run/sampler.relay-1 ] || [ ! -s /run/sampler.relay-2 ]; do n=$((n + 1)); [ $n -gt 1000 ] && exit 1; done
exit 0
