#!/usr/bin/env bash
# Point-to-point between "hosts" (network namespaces joined by a bridge)
# over the network transport: 2 hosts (one rank each, then two each: shm
# within a host, net between), 3 hosts; sizes up to 64 MiB byte-checked.
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
finish
