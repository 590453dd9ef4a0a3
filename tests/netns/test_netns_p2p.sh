#!/usr/bin/env bash
# Point-to-point between "hosts" (network namespaces joined by a bridge)
# over the network transport: 2 hosts (one rank each, then two each: shm
# within a host, net between), 3 hosts; sizes up to 64 MiB byte-checked.
# test-unit: alone (network namespaces, a bridge and addresses of the host's)
source "$(dirname "$0")/../job/lib.sh"
source "$(dirname "$0")/lib.sh"
netns_setup netns.p2p 3 || exit 0
trap 'netns_cleanup; rm -rf "$TMP"' EXIT
export KNIT_LAUNCH='ip netns exec {host}'
H1=${NETNS_HOSTS[0]} H2=${NETNS_HOSTS[1]} H3=${NETNS_HOSTS[2]}
P=$JOBBIN/p2p_test
RUN_LIMIT=120

check() { # name expected-line
    local name=$1 want=$2
    if [ "$RC" -eq 0 ] && grep -qx "$want" "$OUT"; then
        pass "$name"
    else
        fail "$name" "status $RC: $(tail -c 600 "$ERR" | tr '\n' '|')"
    fi
}

# the transport really runs between the namespaces' addresses
run env KNIT_LOG_LEVEL=info "$KNITRUN" --hosts "$H1,$H2" -n 2 "$P" sizes 64m
check netns.p2p.sizes.2hosts "ok sizes"
grep -q "network transport: [^,]*, domain kv" "$ERR" || fail netns.p2p.uses_veth "$(grep 'network transport' "$ERR" | head -2)"
for c in truncate match many probe; do
    run "$KNITRUN" --hosts "$H1,$H2" -n 2 "$P" "$c"
    check "netns.p2p.$c.2hosts" "ok $c"
done
# two ranks per host: shm inside, net across (mixed)
run "$KNITRUN" --hosts "$H1,$H2" -n 4 "$P" sizes 4m
check netns.p2p.sizes.2hosts_mixed "ok sizes"
run "$KNITRUN" --hosts "$H1,$H2" -n 4 "$P" match
check netns.p2p.match.2hosts_mixed "ok match"
# three hosts
run "$KNITRUN" --hosts "$H1,$H2,$H3" -n 3 "$P" sizes 16m
check netns.p2p.sizes.3hosts "ok sizes"
run "$KNITRUN" --hosts "$H1,$H2,$H3" -n 3 "$P" flood 5000
check netns.p2p.flood.3hosts "ok flood"
run "$KNITRUN" --hosts "$H1,$H2,$H3" -n 3 "$P" many
check netns.p2p.many.3hosts "ok many"
# the network between two hosts carries nothing (each sends the other's
# packets to a hardware address nobody has; the store stays reachable):
# start-up ends within KNIT_NET_TIMEOUT naming the silent peer, instead of
# a job that hangs
cut() { # namespace, address to make unreachable from it
    local dev
    dev=$(ip -n "$1" -o link show | sed -n 's/^[0-9]*: \(kv[^@:]*\).*/\1/p' | head -1)
    ip -n "$1" neigh replace "$2" lladdr 02:00:00:00:00:01 dev "$dev" nud permanent
}
if cut "$H1" "${NETNS_ADDRS[1]}" && cut "$H2" "${NETNS_ADDRS[0]}"; then
    RUN_LIMIT=30 run "$KNITRUN" --hosts "$H1,$H2" -n 2 -x KNIT_NET_TIMEOUT=2s "$P" sizes 1k
    if [ "$RC" -ne 0 ] && [ "$MS" -lt 20000 ] &&
        grep -q "no answer from rank [01] over .* within 2 s of start-up (KNIT_NET_TIMEOUT)" "$ERR"; then
        pass netns.p2p.cut_at_start
    else
        fail netns.p2p.cut_at_start "status $RC after $MS ms: $(tail -c 600 "$ERR" | tr '\n' '|')"
    fi
else
    echo "SKIP netns.p2p.cut_at_start: cannot set a neighbour entry"
fi
finish
