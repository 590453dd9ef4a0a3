#!/usr/bin/env bash
# knitrun's binding (tools/knitrun/bind.c): the default (a core each
# where the ranks fit on the cores, none beyond), --bind-to and --map-by,
# what the runtime is told (KNIT_HOST_CPUS), --report-bindings, and bad
# values.  Checked against /proc/self/status of the ranks themselves.
source "$(dirname "$0")/lib.sh"

NCPU=$(nproc)
ALL=$(grep '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}')
SHOW='echo "$KNIT_RANK $KNIT_HOST_CPUS $(grep ^Cpus_allowed_list: /proc/self/status | cut -f2)"'

# the cpu list of rank r in $OUT
cpus_of() { awk -v r="$1" '$1 == r {print $3}' "$OUT"; }
hostcpus_of() { awk -v r="$1" '$1 == r {print $2}' "$OUT"; }

# --- default, ranks fit: each rank on a core of its own, all different
run "$KNITRUN" -n "$NCPU" sh -c "$SHOW"
ok=1 seen=" "
for ((r = 0; r < NCPU; r++)); do
    c=$(cpus_of $r)
    [[ "$c" =~ ^[0-9]+$ ]] || ok=0           # one cpu (no hyperthreads here)
    [[ "$seen" == *" $c "* ]] && ok=0
    seen+="$c "
    [ "$(hostcpus_of $r)" = "$NCPU" ] || ok=0  # the runtime still sees the host's cpus
done
[ "$RC" -eq 0 ] && [ $ok = 1 ] && pass bind.default.fit ||
    fail bind.default.fit "status $RC: $(tr '\n' '|' <"$OUT") $(head -c 300 "$ERR")"

# expect_wrap NAME K: ranks r and r + K (r < NCPU) are bound to the same
# one cpu: placement went around the cores again, in order
expect_wrap() {
    local ok=1
    for ((r = 0; r < NCPU; r++)); do
        [[ "$(cpus_of $r)" =~ ^[0-9]+$ ]] && [ "$(cpus_of $r)" = "$(cpus_of $((r + $2)))" ] || ok=0
    done
    [ "$RC" -eq 0 ] && [ $ok = 1 ] && pass "$1" || fail "$1" "status $RC: $(tr '\n' '|' <"$OUT")"
}

# --- default, up to twice as many ranks as cores: around again, in order
run "$KNITRUN" -n $((2 * NCPU)) --nodes 2 sh -c "$SHOW"
expect_wrap bind.default.twice "$NCPU"

# --- default, more than twice: not bound
run "$KNITRUN" -n $((2 * NCPU + 1)) --nodes 2 sh -c "$SHOW"
ok=1
for ((r = 0; r <= 2 * NCPU; r++)); do [ "$(cpus_of $r)" = "$ALL" ] || ok=0; done
[ "$RC" -eq 0 ] && [ $ok = 1 ] && pass bind.default.oversubscribed ||
    fail bind.default.oversubscribed "status $RC: $(tr '\n' '|' <"$OUT")"

# --- --bind-to core with more ranks than that: around again, in order
run "$KNITRUN" --bind-to core -n $((3 * NCPU)) sh -c "$SHOW"
expect_wrap bind.core.wrap $((2 * NCPU))

# --- --bind-to none, --bind-to socket (the whole package: all our cpus
# on a one-socket host), --map-by socket
run "$KNITRUN" --bind-to none -n 2 sh -c "$SHOW"
[ "$RC" -eq 0 ] && [ "$(cpus_of 0)" = "$ALL" ] && [ "$(cpus_of 1)" = "$ALL" ] && pass bind.none ||
    fail bind.none "status $RC: $(tr '\n' '|' <"$OUT")"
if [ "$(lscpu -p=socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)" = 1 ]; then
    run "$KNITRUN" --bind-to socket --map-by socket -n 2 sh -c "$SHOW"
    [ "$RC" -eq 0 ] && [ "$(cpus_of 0)" = "$ALL" ] && [ "$(cpus_of 1)" = "$ALL" ] && pass bind.socket ||
        fail bind.socket "status $RC: $(tr '\n' '|' <"$OUT")"
else
    echo "SKIP bind.socket: more than one socket here"
fi

# --- the runtime on bound ranks: a core each is not oversubscribed (a
# rank judged by its own affinity of one cpu before), and messages flow
run "$KNITRUN" -n "$NCPU" "$ROOT/$BUILD/bin/knit-info"
n=$(grep -cE "^  ranks of the job on this host +$NCPU: not oversubscribed" "$OUT")
b=$(grep -cE '^  this process runs on cpus +[0-9]+ \(bound\)$' "$OUT")
[ "$RC" -eq 0 ] && [ "$n" = "$NCPU" ] && [ "$b" = "$NCPU" ] && pass bind.runtime.view ||
    fail bind.runtime.view "status $RC: $n not oversubscribed, $b bound: $(grep -E 'ranks of|runs on' "$OUT" | tr '\n' '|')"
run "$KNITRUN" -n 2 "$JOBBIN/p2p_test" sizes
expect_ok bind.runtime.p2p sizes

# --- ranks bound by auto widen to the job's cpus once a module works at
# the agent where the host then has more busy processes than cpus (a
# module at the host changes nothing); an explicit binding stays
if [ "$NCPU" -le 4 ]; then
    run "$KNITRUN" -n "$NCPU" "$JOBBIN/offload_test" "$ROOT/$BUILD/modules" affinity
    n=$(grep -cE "^rank [0-9]+ cpus [0-9]+, with a module at the host [0-9]+, at the agent $ALL$" "$OUT")
    [ "$RC" -eq 0 ] && [ "$n" = "$NCPU" ] && pass bind.offload_widens ||
        fail bind.offload_widens "status $RC: $(tr '\n' '|' <"$OUT") $(head -c 300 "$ERR")"
    # stays_bound NAME command...: every rank keeps its one cpu throughout
    stays_bound() {
        local name=$1; shift
        run "$@" -n "$NCPU" "$JOBBIN/offload_test" "$ROOT/$BUILD/modules" affinity
        n=$(grep -cE "^rank [0-9]+ cpus ([0-9]+), with a module at the host \1, at the agent \1$" "$OUT")
        [ "$RC" -eq 0 ] && [ "$n" = "$NCPU" ] && pass "$name" ||
            fail "$name" "status $RC: $(tr '\n' '|' <"$OUT") $(head -c 300 "$ERR")"
    }
    stays_bound bind.explicit_stays "$KNITRUN" --bind-to core
    stays_bound bind.inprocess_stays env KNIT_MODULE_ISOLATION=inprocess "$KNITRUN"
else
    echo "SKIP bind.offload_widens: $NCPU cpus leave the daemons room"
fi

# --- --report-bindings: the policy, a line per rank, the daemons
run "$KNITRUN" --report-bindings -n 2 --nodes 2 true
n=$(grep -cE '^knitrun: rank [01] \(node [01]\) on .*: bound to core [0-9]+ \(cpu [0-9]+\)$' "$ERR")
[ "$RC" -eq 0 ] && [ "$n" = 2 ] && grep -q '^knitrun: bindings on .*: auto: core (2 ranks on this host.s [0-9]* cores)$' "$ERR" &&
    grep -q '^knitrun: daemons on .*: cpus ' "$ERR" && pass bind.report ||
    fail bind.report "status $RC: $(tr '\n' '|' <"$ERR")"

# --- bad values: usage errors that name the option
run "$KNITRUN" --bind-to board -n 1 true
[ "$RC" -eq 2 ] && grep -q '^knitrun: --bind-to board: expected one of auto|none|hwthread|core|l2cache|l3cache|numa|socket$' "$ERR" &&
    pass bind.bad_value || fail bind.bad_value "status $RC: $(head -c 300 "$ERR")"
run env KNIT_MAP_BY=rack "$KNITRUN" -n 1 true
[ "$RC" -eq 2 ] && grep -q 'KNIT_MAP_BY' "$ERR" && pass bind.bad_env ||
    fail bind.bad_env "status $RC: $(head -c 300 "$ERR")"
exit 0
