#!/usr/bin/env bash
# A job across two "hosts" (network namespaces) started through
# KNIT_LAUNCH='ip netns exec {host}': placement, the store over TCP across
# hosts, a hostfile with slots, a failure on a remote host, a host that
# cannot be launched.
# test-unit: alone (network namespaces, a bridge and addresses of the host's)
source "$(dirname "$0")/../job/lib.sh"
source "$(dirname "$0")/lib.sh"
netns_setup netns.job 2 || exit 0
trap 'netns_cleanup; rm -rf "$TMP"' EXIT

H1=${NETNS_HOSTS[0]} H2=${NETNS_HOSTS[1]}
export KNIT_LAUNCH='ip netns exec {host}'

# --- placement and host names: ranks 0,1 on H1 (node 0), 2,3 on H2 (node 1)
run env KNIT_LOG_LEVEL=info "$KNITRUN" --hosts "$H1,$H2" -n 4 "$JOBBIN/hello"
ok=1
for r in 0 1 2 3; do
    node=$((r / 2)); host=$([ $node = 0 ] && echo "$H1" || echo "$H2")
    grep -qx "rank $r of 4 on node $node of 2, local rank $((r % 2)) of 2, host $host" "$OUT" || ok=0
    # the rank reached the store over the bridge, from its own namespace
    grep -q "rank $r connected from 198.18.0.$((node + 1)):" "$ERR" || ok=0
done
[ "$RC" -eq 0 ] && [ $ok = 1 ] && pass netns.placement ||
    fail netns.placement "status $RC: $(tr '\n' '|' <"$OUT") $(head -c 400 "$ERR")"

# --- ranks really run inside their namespace
run "$KNITRUN" --hosts "$H1,$H2" -n 2 --tag-output sh -c 'readlink /proc/self/ns/net'
ns1=$(ip netns exec "$H1" readlink /proc/self/ns/net)
ns2=$(ip netns exec "$H2" readlink /proc/self/ns/net)
[ "$RC" -eq 0 ] && grep -qxF "[0] $ns1" "$OUT" && grep -qxF "[1] $ns2" "$OUT" &&
    pass netns.namespaces || fail netns.namespaces "status $RC: $(tr '\n' '|' <"$OUT")"

# --- binding on hosts: each proxy binds its own ranks; proxies of the
# job sharing a machine (these namespaces) take cores after each other,
# so one rank per host lands on two different cores, not both on the first
if [ "$(nproc)" -ge 2 ]; then
    run "$KNITRUN" --report-bindings --hosts "$H1,$H2" -n 2 sh -c 'echo "$KNIT_RANK $KNIT_HOST_CPUS $(grep ^Cpus_allowed_list: /proc/self/status | cut -f2)"'
    c0=$(awk '$1 == 0 {print $3}' "$OUT") c1=$(awk '$1 == 1 {print $3}' "$OUT")
    [ "$RC" -eq 0 ] && [[ "$c0" =~ ^[0-9]+$ ]] && [[ "$c1" =~ ^[0-9]+$ ]] && [ "$c0" != "$c1" ] &&
        [ "$(awk '{print $2}' "$OUT" | sort -u)" = "$(nproc)" ] &&
        [ "$(grep -cE "^knitrun: rank [01] \(node [01]\) on ($H1|$H2): bound to core [0-9]+ \(cpu [0-9]+\)$" "$ERR")" = 2 ] &&
        pass netns.bind || fail netns.bind "status $RC: $(tr '\n' '|' <"$OUT") $(tr '\n' '|' <"$ERR")"
else
    echo "SKIP netns.bind: one cpu"
fi

# --- put/get/fence across hosts, 8 ranks
run "$KNITRUN" --hosts "$H1,$H2" -n 8 "$JOBBIN/boot_kv"
[ "$RC" -eq 0 ] && [ "$(grep -c '^kv ok' "$OUT")" -eq 8 ] && pass netns.kv8 ||
    fail netns.kv8 "status $RC: $(head -c 400 "$ERR")"

# --- hostfile with slots, -x to remote ranks
printf '# two hosts\n%s slots=1\n\n%s slots=3   # the big one\n' "$H1" "$H2" >"$TMP/hosts"
run "$KNITRUN" --hostfile "$TMP/hosts" -n 4 -x FOO=bar sh -c 'echo "$KNIT_RANK $KNIT_NODE $KNIT_HOSTNAME $FOO"'
[ "$RC" -eq 0 ] && [ "$(sort "$OUT" | tr '\n' '|')" = "0 0 $H1 bar|1 1 $H2 bar|2 1 $H2 bar|3 1 $H2 bar|" ] &&
    pass netns.hostfile || fail netns.hostfile "status $RC: $(sort "$OUT" | tr '\n' '|')"

# --- a rank on the second host segfaults: the whole job ends, nothing left
dir=$TMP/segv; mkdir -p "$dir"
run env FAIL_DIR="$dir" "$KNITRUN" --hosts "$H1,$H2" -n 4 "$JOBBIN/fail" segv 3
why=""
[ "$RC" -eq 139 ] || why+="status $RC; "
[ "$(verdicts)" = "knitrun: rank 3 on node 1 killed by SIGSEGV" ] || why+="verdict '$(verdicts)'; "
[ "$MS" -le 5000 ] || why+="took $MS ms; "
[ "$(ls "$dir"/pid.* 2>/dev/null | wc -l)" -eq 4 ] || why+="not every rank started; "
alive=$(alive_pids "$dir"/pid.* "$dir"/gpid.*)
[ -z "$alive" ] || why+="left running: $alive; "
left=$(shm_left "$(cat "$dir/jobid" 2>/dev/null)"); [ -z "$left" ] || why+="left in /dev/shm: $left; "
inns=$(ip netns pids "$H1"; ip netns pids "$H2")
[ -z "$inns" ] || why+="processes left in the namespaces: $inns; "
[ -z "$why" ] && pass netns.remote_failure || fail netns.remote_failure "$why"

# --- a host that cannot be launched
run "$KNITRUN" --hosts "$H1,nosuch$$" -n 2 true
[ "$RC" -ne 0 ] && verdicts | grep -q "^knitrun: cannot start node 1 on host nosuch$$: the launch command exited with status" &&
    pass netns.bad_host || fail netns.bad_host "status $RC: $(head -c 300 "$ERR")"

# --- hosts whose /dev/shm (a private 2 MiB tmpfs each) cannot hold what 8
# ranks allocate at start: each proxy checks its host before it starts
# anything there, and the job ends with one line
if unshare -m true 2>/dev/null; then
    cat > "$TMP/smallshm" <<'SH'
#!/bin/sh
host=$1; shift
exec ip netns exec "$host" unshare -m sh -c 'mount -t tmpfs -o size=2m tmpfs /dev/shm && exec "$@"' sh "$@"
SH
    chmod +x "$TMP/smallshm"
    rm -f "$TMP"/started.*
    run env KNIT_LAUNCH="$TMP/smallshm {host}" "$KNITRUN" --hosts "$H1,$H2" -n 16 \
        sh -c "touch $TMP/started.\$KNIT_RANK"
    line="knitrun: node [01] on host ($H1|$H2): the job needs [0-9.]+ MiB of shared memory at start \(/dev/shm, 8 ranks; .*\), but /dev/shm has 2 MiB free: set KNIT_SHM_BUFFER=[0-9]+k or less, or free space in /dev/shm"
    [ "$RC" -ne 0 ] && [ "$(verdicts | wc -l)" = 1 ] && verdicts | grep -Eqx "$line" &&
        ! ls "$TMP"/started.* >/dev/null 2>&1 && pass netns.shm_refused_by_proxy ||
        fail netns.shm_refused_by_proxy "status $RC: $(head -c 400 "$ERR")"
else
    echo "SKIP netns.shm_refused_by_proxy: no mount namespace here (unshare -m)"
fi

finish
