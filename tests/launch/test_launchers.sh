#!/usr/bin/env bash
# knit programs under the launchers clusters use (docs/knitrun.md, Other
# launchers): Open MPI's mpirun (PMIx), MPICH's mpiexec (hydra: PMI-2, and
# PMI-1 when asked), Slurm's srun --mpi=pmix and --mpi=pmi2 (a Slurm of
# the test's own, tests/launch/slurm.sh), and fake_pmi.py, a PMI server
# that places ranks on two "nodes" of this machine and can misbehave.
# Under each: point-to-point, collectives and offload modules; a rank that
# is killed, aborts or exits early ends the job through the launcher, and
# nothing of the job is left running.
# test-unit: long
source "$(dirname "$0")/../job/lib.sh"
set -u
LAUNCH=$ROOT/tests/launch
J=$JOBBIN
M=$ROOT/$BUILD/modules
export PATH="$ROOT/$BUILD/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# every process of a job carries the mark: nothing with it may outlive the job
export LAUNCH_MARK=$$.$RANDOM

PROG=$TMP/launch_mpi
if ! "$ROOT/$BUILD/bin/knitcc" -O2 -o "$PROG" "$LAUNCH/launch_mpi.c" 2>"$TMP/cc"; then
    fail launch.build "$(tr '\n' '|' <"$TMP/cc")"
    exit 1
fi

# Processes still carrying this run's mark, other than this script's own.
marked() { # (in a subshell: the mark leaves its environment, not the script's)
    local f pid out="" want="LAUNCH_MARK=$LAUNCH_MARK"
    unset LAUNCH_MARK
    for f in /proc/[0-9]*/environ; do
        pid=${f#/proc/}; pid=${pid%/environ}
        [ "$pid" = $$ ] && continue
        if { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF "$want"; then
            out="$out $pid($(cat "/proc/$pid/comm" 2>/dev/null))"
        fi
    done
    echo "$out"
}

# left NAME: after a job, nothing of it runs (2 s for the launcher's kill).
left() {
    local i s
    for i in $(seq 20); do
        s=$(marked)
        [ -z "$s" ] && return 0
        sleep 0.1
    done
    fail "$1.nothing_left" "still running:$s"
    for p in $s; do kill -9 "${p%%(*}" 2>/dev/null; done
}

# ok_lines NAME N NODES: the job printed N "ok" lines saying NODES nodes.
ok_lines() {
    local name=$1 n=$2 nodes=$3 got
    got=$(grep -c "^ok .* of $n on $nodes nodes$" "$OUT")
    if [ "$RC" -eq 0 ] && [ "$got" -eq "$n" ]; then
        pass "$name"
    else
        fail "$name" "status $RC, $got of $n ok lines, stderr '$(tail -n 5 "$ERR" | tr '\n' '|')'"
    fi
}

# works NAME LAUNCHER...: the MPI program, the job tests' point-to-point,
# collectives and offload programs
works() {
    local name=$1; shift
    run "$@" "$PROG" ok
    ok_lines "launch.$name.mpi" 4 1
    run "$@" "$J/offload_test" "$M" roundtrip switch
    expect_ok "launch.$name.offload" roundtrip
    left "launch.$name"
}

# fails NAME LAUNCHER...: a rank killed, aborting, exiting early, and rank
# 0 (which runs knit's store) killed: the launcher ends the job, nonzero
fails() {
    local name=$1 how; shift
    for how in "kill 1" "abort 2" "exit 3" "kill 0"; do
        local d=$TMP/fail
        rm -rf "$d"; mkdir -p "$d"
        LAUNCH_DIR=$d RUN_LIMIT=40 run "$@" "$PROG" $how
        local t=${how// /_}
        local started
        started=$(ls "$d" | grep -c '^pid\.')
        if [ "$started" -eq 4 ] && [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$MS" -lt 30000 ]; then
            pass "launch.$name.fail.$t"
        else
            fail "launch.$name.fail.$t" "$started of 4 ranks started, status $RC after $MS ms, stderr '$(tail -n 4 "$ERR" | tr '\n' '|')'"
        fi
        left "launch.$name.fail.$t"
    done
}

# ---------------------------------------------------------------- detection
check_says() { # name pattern env... : knit_init refuses with this line
    local name=$1 pat=$2; shift 2
    run env "$@" "$PROG" ok
    if [ "$RC" -ne 0 ] && grep -q -- "$pat" "$ERR"; then pass "launch.detect.$name"
    else fail "launch.detect.$name" "status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"; fi
}
check_says pmix_half "PMIX_NAMESPACE is not set" PMIX_RANK=0
check_says pmi_half "PMI_FD is not set" PMI_RANK=0 PMI_SIZE=2
check_says pmi_port "not supported yet" PMI_PORT=localhost:1 PMI_RANK=0 PMI_SIZE=2
check_says forced_pmix "KNIT_BOOTSTRAP=pmix" KNIT_BOOTSTRAP=pmix
check_says forced_knitrun "not started by knitrun" KNIT_BOOTSTRAP=knitrun
run mpiexec.mpich -n 1 knit-info
if grep -q "started by *PMI" "$OUT"; then pass launch.detect.knit_info; else fail launch.detect.knit_info "$(grep 'started by' "$OUT")"; fi

# ---------------------------------------------------------------- Open MPI
OMPI=(mpirun.openmpi --oversubscribe -x LAUNCH_MARK -n 4)
works ompi "${OMPI[@]}"
run "${OMPI[@]}" "$J/p2p_test" sizes 1m
expect_ok launch.ompi.p2p sizes
run "${OMPI[@]}" "$J/coll_test" suite 64k
expect_ok launch.ompi.coll suite
fails ompi "${OMPI[@]}"

# ---------------------------------------------------------------- MPICH's hydra
HYDRA=(mpiexec.mpich -n 4)
works hydra "${HYDRA[@]}"
run "${HYDRA[@]}" "$J/coll_test" suite 64k
expect_ok launch.hydra.coll suite
for v in pmi1 pmi2; do
    run "${HYDRA[@]}" -genv KNIT_BOOTSTRAP $v "$PROG" ok
    ok_lines "launch.hydra.$v.mpi" 4 1
done
fails hydra "${HYDRA[@]}"

# ---------------------------------------------------------------- two nodes
# fake_pmi.py places ranks 0-1 and 2-3 on two nodes: the network between
# them, an agent each, the switch
for v in 1 2; do
    FAKE=(python3 "$LAUNCH/fake_pmi.py" -n 4 --pmi $v --mapping "(vector,(0,2,2))" --)
    run "${FAKE[@]}" "$PROG" ok
    ok_lines "launch.fake_pmi$v.two_nodes.mpi" 4 2
    run "${FAKE[@]}" "$J/offload_test" "$M" roundtrip switch
    expect_ok "launch.fake_pmi$v.two_nodes.offload" roundtrip
    left "launch.fake_pmi$v"
done
# the offload, one-sided and replicated-memory tests across the two nodes
FAKE=(python3 "$LAUNCH/fake_pmi.py" -n 4 --mapping "(vector,(0,2,2))" --)
for c in "paths switch" equiv; do
    run "${FAKE[@]}" "$J/offload_test" "$M" $c
    expect_ok "launch.fake_pmi.two_nodes.offload_${c// /_}" "${c%% *}"
done
KNIT_MODULE_BUDGET=200ms run "${FAKE[@]}" "$J/offload_test" "$M" faults switch
expect_ok launch.fake_pmi.two_nodes.offload_faults faults
run "${FAKE[@]}" "$J/rma_test"
expect_ok launch.fake_pmi.two_nodes.rma sweep
run "${FAKE[@]}" "$J/dsm_test"
expect_ok launch.fake_pmi.two_nodes.dsm same
# OpenMP across the two nodes (komp: one process per node, two threads each)
if "$ROOT/$BUILD/bin/knitcc" -fopenmp -O2 -o "$TMP/omp_critical" "$ROOT/tests/omp/omp_critical.c" 2>"$TMP/cc"; then
    run python3 "$LAUNCH/fake_pmi.py" -n 2 --mapping "(vector,(0,2,1))" -- env OMP_NUM_THREADS=2 "$TMP/omp_critical"
    if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$OUT")" = ok ]; then pass launch.fake_pmi.two_nodes.openmp
    else fail launch.fake_pmi.two_nodes.openmp "status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"; fi
else
    fail launch.fake_pmi.two_nodes.openmp "knitcc -fopenmp: $(tr '\n' '|' <"$TMP/cc")"
fi
left launch.fake_pmi.two_nodes
fails fake_pmi2 python3 "$LAUNCH/fake_pmi.py" -n 4 --mapping "(vector,(0,2,2))" --
# KNIT_BOOT_TIMEOUT bounds each process's own waits at start, never the
# job: a rank that calls MPI_Init 2.5 s after the others, and a job that
# runs 2.5 s, with a bound of 1 s
for m in late long; do
    KNIT_BOOT_TIMEOUT=1s run "${FAKE[@]}" "$PROG" $m 2.5
    ok_lines "launch.fake_pmi.boot_timeout_$m" 4 2
done
run python3 "$LAUNCH/fake_pmi.py" -n 4 --mapping "(vector,(0,2,1))" -- "$PROG" ok
if [ "$RC" -ne 0 ] && grep -q "numbered consecutively" "$ERR"; then pass launch.fake_pmi.cyclic_refused
else fail launch.fake_pmi.cyclic_refused "status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"; fi
# a server that misbehaves: a clear line, and the job ends
for bad in init:"does not speak" kvsname:"get_my_kvsname failed" fence:"knit's store" \
    mapping:"cannot read PMI_process_mapping" value:"knit's store"; do
    RUN_LIMIT=30 run python3 "$LAUNCH/fake_pmi.py" -n 2 --pmi 1 --bad "${bad%%:*}" -- "$PROG" ok
    if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -q "${bad#*:}" "$ERR"; then pass "launch.fake_pmi.bad_${bad%%:*}"
    else fail "launch.fake_pmi.bad_${bad%%:*}" "status $RC, stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"; fi
    left "launch.fake_pmi.bad_${bad%%:*}"
done

# ---------------------------------------------------------------- Slurm
source "$LAUNCH/slurm.sh"
if ! slurm_available; then
    echo "SKIP launch.slurm: $SLURM_WHY"
elif ! { export -n LAUNCH_MARK; slurm_start 2>"$TMP/slurm.err"; }; then
    echo "SKIP launch.slurm: $SLURM_WHY"
else
    export LAUNCH_MARK # srun passes it to the tasks; the Slurm daemons lack it
    for m in pmi2 pmix; do
        if [ $m = pmix ] && ! slurm_has_mpi pmix; then
            echo "SKIP launch.slurm.pmix: $SLURM_WHY"
            continue
        fi
        # srun in the foreground of timeout: a stopped test stops it too
        SRUN=(timeout --foreground 40 srun --mpi=$m -n 4)
        works "srun_$m" "${SRUN[@]}"
        fails "srun_$m" "${SRUN[@]}"
    done
    slurm_stop
fi
exit $FAILED
