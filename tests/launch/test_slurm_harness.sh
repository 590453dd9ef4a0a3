#!/usr/bin/env bash
# The single-machine Slurm of tests/launch/slurm.sh: it starts, srun runs 4
# tasks on this host (more than its cores), --mpi=pmi2 and --mpi=pmix give
# each task its rank, a task killed with -9 ends the step (KillOnBadExit=1),
# MPICH (pmi2) and Open MPI (pmix) programs run under srun when their
# compilers are installed, and slurm_stop leaves no daemon and no temp dir.
# SKIPs everything, with the reason, where Slurm is not installed or can't
# start.  Each line: PASS/FAIL/SKIP <name>.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/launch/slurm.sh
. "$HERE/slurm.sh"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
t_all=$SECONDS

if ! slurm_available; then
    skip slurm.harness "$SLURM_WHY"
    exit 0
fi
if ! slurm_start 2>"${TMPDIR:-/tmp}/knit-slurm-start.$$"; then
    # installed but cannot start here (no munge, ports, a container that
    # forbids it): the tests that need Slurm skip, this one says why
    skip slurm.harness "slurm_start failed: $SLURM_WHY"
    sed 's/^/  /' "${TMPDIR:-/tmp}/knit-slurm-start.$$"
    rm -f "${TMPDIR:-/tmp}/knit-slurm-start.$$"
    exit 0
fi
rm -f "${TMPDIR:-/tmp}/knit-slurm-start.$$"
pass slurm.harness.start
echo "slurm: started in ${SLURM_START_SECONDS}s, conf $SLURM_CONF"
D=$SLURM_DIR

# --- srun -n 4 hostname: 4 lines, this host
out=$(timeout --foreground 20 srun -n 4 hostname 2>"$D/err")
rc=$?
n=$(grep -cx "$(hostname)" <<<"$out")
[ "$rc" = 0 ] && [ "$n" = 4 ] && pass slurm.harness.hostname ||
    fail slurm.harness.hostname "status $rc, $n lines of $(hostname): $(tr '\n' '|' <<<"$out") $(head -c 300 "$D/err")"

# ranks NAME VAR: srun --mpi=NAME -n 4 env shows VAR=0..3, one each
ranks() {
    local mpi=$1 var=$2 out rc
    out=$(timeout --foreground 20 srun --mpi="$mpi" -n 4 env 2>"$D/err")
    rc=$?
    local got
    got=$(grep "^$var=" <<<"$out" | sort | tr '\n' ' ')
    [ "$rc" = 0 ] && [ "$got" = "$var=0 $var=1 $var=2 $var=3 " ] && pass "slurm.harness.${mpi}_env" ||
        fail "slurm.harness.${mpi}_env" "status $rc, got '$got' $(head -c 300 "$D/err")"
}
ranks pmi2 PMI_RANK
if slurm_has_mpi pmix; then
    ranks pmix PMIX_RANK
else
    skip slurm.harness.pmix_env "$SLURM_WHY"
fi

# --- kill -9 of one task ends the step (KillOnBadExit=1), srun fails
t0=$SECONDS
timeout --foreground 30 srun -n 4 bash -c 'echo "task $SLURM_PROCID pid $$"; exec sleep 25' >"$D/kill.out" 2>"$D/kill.err" &
srun_pid=$!
for _ in $(seq 1 100); do
    [ "$(grep -c '^task ' "$D/kill.out")" = 4 ] && break
    sleep 0.1
done
victim=$(awk '$2 == 2 {print $4}' "$D/kill.out")
others=$(awk '$2 != 2 {print $4}' "$D/kill.out")
if [ -z "$victim" ]; then
    fail slurm.harness.kill_one_task "tasks did not start: $(tr '\n' '|' <"$D/kill.out") $(head -c 300 "$D/kill.err")"
    kill "$srun_pid" 2>/dev/null
    wait "$srun_pid" 2>/dev/null
else
    kill -9 "$victim"
    for _ in $(seq 1 100); do
        kill -0 "$srun_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$srun_pid" 2>/dev/null; then
        fail slurm.harness.kill_one_task "srun still running 10 s after task 2 was killed"
        kill "$srun_pid" 2>/dev/null
        wait "$srun_pid" 2>/dev/null
    else
        wait "$srun_pid"
        rc=$?
        left=
        for p in $others; do _slurm_alive "$p" && left="$left $p"; done
        # the others are sent SIGTERM: srun exits 128+15
        if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ -z "$left" ]; then
            pass slurm.harness.kill_one_task
            echo "slurm: step ended $((SECONDS - t0))s after start, srun status $rc"
        else
            fail slurm.harness.kill_one_task "srun status $rc, tasks left:$left $(tr '\n' '|' <"$D/kill.err")"
        fi
    fi
fi

# mpi_hello NAME MPICC MPI: a 4-rank allreduce under srun --mpi=MPI
mpi_hello() {
    local name=$1 cc=$2 mpi=$3
    if ! command -v "$cc" >/dev/null; then
        skip "$name" "$cc not installed"
        return
    fi
    if ! slurm_has_mpi "$mpi"; then
        skip "$name" "$SLURM_WHY"
        return
    fi
    if ! "$cc" -o "$D/$name" "$HERE/mpi_hello.c" 2>"$D/err"; then
        fail "$name" "$cc failed: $(head -c 300 "$D/err")"
        return
    fi
    local out rc
    out=$(timeout --foreground 30 srun --mpi="$mpi" -n 4 "$D/$name" 2>"$D/err")
    rc=$?
    if [ "$rc" = 0 ] && [ "$(grep -c '^hello [0-3]/4 sum=6$' <<<"$out")" = 4 ]; then
        pass "$name"
    else
        fail "$name" "status $rc: $(tr '\n' '|' <<<"$out") $(head -c 300 "$D/err" | tr '\n' '|')"
    fi
}
mpi_hello slurm.harness.mpich_pmi2 mpicc.mpich pmi2
mpi_hello slurm.harness.openmpi_pmix mpicc.openmpi pmix

# --- slurm_stop: no daemon, no step, no temp dir; twice is fine
pids="$SLURM_PID_munged $SLURM_PID_slurmctld $SLURM_PID_slurmd"
slurm_stop
left=
for p in $pids; do _slurm_alive "$p" && left="$left $p"; done
rest=$(_slurm_leftovers "$D" | tr '\n' ' ')
if [ -z "$left" ] && [ -z "$rest" ] && [ ! -e "$D" ] && [ -z "${SLURM_CONF:-}" ]; then
    pass slurm.harness.stop
else
    fail slurm.harness.stop "daemons left:$left, processes of $D: $rest, dir $( [ -e "$D" ] && echo left || echo gone)"
fi
slurm_stop && pass slurm.harness.stop_twice || fail slurm.harness.stop_twice "status $?"
echo "slurm: test took $((SECONDS - t_all))s"
