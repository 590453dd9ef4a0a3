# shellcheck shell=bash
# A throwaway single-machine Slurm for knit's launch tests: a test script
# sources this file, calls slurm_start, runs srun, and slurm_stop (also run
# by the EXIT/INT/TERM/HUP trap slurm_start sets) tears everything down.
#
#   . tests/launch/slurm.sh
#   slurm_available || { echo "SKIP x: $SLURM_WHY"; exit 0; }
#   slurm_start     || { echo "SKIP x: $SLURM_WHY"; exit 0; }
#   srun -n 4 hostname
#   slurm_has_mpi pmix || echo "SKIP y: $SLURM_WHY"
#   slurm_stop
#
# What it runs, all as root and all under one temp dir ($SLURM_DIR):
#   munged     its own key, socket, pid, log and seed in $SLURM_DIR/munge, so
#              a system munge (/run/munge) is neither needed nor disturbed:
#              slurm.conf's AuthInfo=socket=... points Slurm (daemons, srun,
#              sinfo: auth/munge and cred/munge both read it) at our socket.
#   slurmctld  and slurmd in the foreground (-D), each in its own session
#              (setsid): a signal to the test's process group does not kill
#              them under a running srun, the trap stops them in order.
#              Ports picked free at random (20000-31999), fresh state, a
#              random FirstJobId, each time.
#   slurm.conf one node = this host (the line `slurmd -C` prints, so CPUs as
#              the machine has), one partition, select/cons_tres with
#              OverSubscribe=FORCE, proctrack/linuxproc, task/none, no
#              accounting, MpiDefault=none, KillOnBadExit=1.  More tasks than
#              CPUs (-n 4 on 2 cores) needs --overcommit: slurm_start exports
#              SLURM_OVERCOMMIT=1, which srun takes as -O.
# A test killed by `timeout` (tests/run.sh) gets SIGTERM, and bash runs the
# trap only once the command it waits for ends: put srun under
# `timeout --foreground SECS srun ...` (a plain `timeout` makes its own
# process group, which the signal to the test's group misses), so srun gets
# the signal too and the trap runs.  A run killed with -9 leaves its
# processes and dir; the next slurm_start removes them.
# Exported after slurm_start: SLURM_CONF (all the client commands need),
# SLURM_OVERCOMMIT=1, SLURM_DIR, SLURM_NODE (this host's node name),
# SLURM_START_SECONDS.  Also set: SLURM_PID_munged, _slurmctld, _slurmd.
# Timings (2-core VM): slurm_start 1.1-1.4 s to an idle node, srun -n 4 true
# 0.13 s, slurm_stop 0.35 s (slurmctld and slurmd need 3 s and more to exit
# on SIGTERM, so they get 0.5 s and then SIGKILL).
#
# Facts about Debian 12's slurm-wlm 22.05.8 (found while building this):
#  - `srun --mpi=list` shows: none, cray_shasta, pmi2, pmix, pmix_v4.  All
#    ship in slurm-wlm-basic-plugins (mpi_pmix.so -> mpi_pmix_v4.so), no
#    separate pmix package.  But mpi_pmix dlopens
#    /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so, the unversioned link
#    only libpmix-dev installs, and the package does not depend on it:
#    without libpmix-dev `srun --mpi=pmix` fails; slurm_has_mpi checks it.
#  - Installing slurmd/slurmctld/munge runs their postinst, which creates
#    /etc/munge/munge.key and asks invoke-rc.d to start the services (a
#    policy-rc.d exiting 101 stops that; scripts/deps.sh slurm makes sure).
#    Without a slurm.conf the system slurmd/slurmctld would not start anyway.
#  - mpi_pmix puts each step's client dir at /tmp/spmix_appdir_UID_JOB.STEP
#    unless mpi.conf says PMIxCliTmpDirBase: two Slurms on one host (tests
#    run at once) or a leftover dir collide ("File exists"), and the step
#    does not launch.  Each instance here has its own base and FirstJobId.
#  - srun exits 0 when a step fails to launch ("task 0 launch failed:
#    Unspecified error", as in the collision above): check the output.
#  - Without SLURM_CONF the client commands look for /etc/slurm/slurm.conf,
#    then DNS SRV records ("Could not establish a configuration source").
#  - What a task sees.  Always: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID,
#    SLURM_NTASKS, SLURM_STEP_NUM_TASKS, SLURM_JOB_ID, SLURM_STEP_ID,
#    SLURM_STEP_NODELIST, SLURM_SRUN_COMM_HOST/PORT, SLURM_MPI_TYPE, ...
#    --mpi=pmi2: PMI_FD (an fd to slurmstepd, 11 13 15 ...), PMI_RANK,
#    PMI_SIZE, PMI_JOBID (JOB.STEP, e.g. "1.0"); no PMI_PORT.
#    --mpi=pmix: PMIX_RANK, PMIX_NAMESPACE (slurm.pmix.JOB.STEP),
#    PMIX_SERVER_URI2/21/3/4/41 ("pmix-server.PID;tcp4://127.0.0.1:PORT",
#    the stepd's PMIx server), PMIX_SERVER_TMPDIR (under SlurmdSpoolDir),
#    PMIX_SYSTEM_TMPDIR=/tmp, PMIX_VERSION=4.2.2rc2, PMIX_SECURITY_MODE=
#    native, PMIX_GDS_MODULE=ds21,ds12,hash, PMIX_DSTORE_*_BASE_PATH,
#    PMIX_HOSTNAME, PMIX_BFROP_BUFFER_TYPE.  --mpi=none: no PMI* at all.
#  - MPICH 4.0.2 (ch4:ucx, built --with-pm=hydra, its simple PMI client
#    reading PMI_FD) runs under srun --mpi=pmi2; under --mpi=none each task
#    is a singleton (rank 0 of 1), and srun still exits 0.  Open MPI 4.1.4
#    runs under --mpi=pmix; under pmi2 it aborts ("OMPI was not built with
#    SLURM's PMI support", no s1/s2 components).
#  - KillOnBadExit=1: kill -9 of one task ends the step at once (the others
#    get SIGTERM), srun exits 143 (128+15, the others' signal, not 137); a
#    task exiting 3 also ends the step, and srun exits 143, not 3.  With
#    srun -K0 the others run on, and srun exits 137 when they are done.

SLURM_LIBDIR=${SLURM_LIBDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
SLURM_START_TIMEOUT=${SLURM_START_TIMEOUT:-30}
SLURM_WHY=
SLURM_DIR=
SLURM_START_SECONDS=
SLURM_PID_munged='' SLURM_PID_slurmctld='' SLURM_PID_slurmd=''
_slurm_pids=()
_slurm_last=

_slurm_log() { echo "slurm.sh: $*" >&2; }

# slurm_available: 0 when the daemons, clients and munged are installed.
# SLURM_WHY says what is missing otherwise.
slurm_available() {
    local b missing=
    for b in slurmctld slurmd slurmstepd srun sinfo munged; do
        command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing="$missing $b"
    done
    if [ -n "$missing" ]; then
        SLURM_WHY="slurm not installed (missing:$missing; scripts/deps.sh slurm installs slurm-wlm)"
        return 1
    fi
    if [ "$(id -u)" != 0 ]; then
        SLURM_WHY="the single-machine slurm needs root (slurmd runs tasks as any user)"
        return 1
    fi
    return 0
}

# slurm_has_mpi NAME: 0 when srun --mpi=NAME can work here (pmi2, pmix, ...)
slurm_has_mpi() {
    local name=$1
    if [ -n "${SLURM_CONF:-}" ] && [ -n "$SLURM_DIR" ]; then
        if ! srun --mpi=list 2>&1 | grep -qw -- "$name"; then
            SLURM_WHY="srun --mpi=list has no $name"
            return 1
        fi
    elif [ ! -e "$SLURM_LIBDIR/mpi_$name.so" ]; then
        SLURM_WHY="no $SLURM_LIBDIR/mpi_$name.so"
        return 1
    fi
    case $name in
    pmix*)
        # the plugin dlopens this path (Debian: only libpmix-dev has it)
        if [ ! -e /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so ]; then
            SLURM_WHY="mpi_pmix needs /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so (install libpmix-dev)"
            return 1
        fi ;;
    esac
    return 0
}

# a TCP port nobody listens on (random, checked with ss)
_slurm_free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768-)
        [ "$p" = "${1:-}" ] && continue
        if command -v ss >/dev/null 2>&1; then
            [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] && { echo "$p"; return 0; }
        else
            (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
        fi
    done
    return 1
}

# _slurm_spawn NAME CMD...: start CMD in the background, remember its pid
_slurm_spawn() {
    local name=$1; shift
    setsid "$@" >"$SLURM_DIR/$name.out" 2>&1 &
    _slurm_pids+=("$!")
    _slurm_last=$!
}

_slurm_fail() {
    SLURM_WHY=$1
    _slurm_log "$SLURM_WHY"
    local f
    for f in slurmctld.log slurmd.log slurmctld.out slurmd.out munged.out; do
        [ -s "$SLURM_DIR/$f" ] && { _slurm_log "---- $f"; tail -n 8 "$SLURM_DIR/$f" >&2; }
    done
    slurm_stop
    return 1
}

# _slurm_id PID: "PID STARTTIME", which names one process for good
_slurm_id() {
    local st pid=$1
    { st=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    st=${st##*) }
    # shellcheck disable=SC2086
    set -- $st
    # a zombie is gone (init here may take its time to reap it)
    [ "$1" = Z ] || [ "$1" = X ] && return 1
    echo "$pid ${20}"
}

# _slurm_reap_stale: what an earlier run left when it was killed before its
# trap could run (SIGKILL): a knit-slurm.* dir whose owner (the shell that
# called slurm_start, in $d/owner) is gone; its processes (daemons, stepd,
# tasks, srun) are killed and the dir removed.  The instance of a test
# running at the same time is left alone.
_slurm_reap_stale() {
    local d owner pid
    for d in "${TMPDIR:-/tmp}"/knit-slurm.*; do
        [ -d "$d" ] || continue
        owner=$(cat "$d/owner" 2>/dev/null)
        if [ -z "$owner" ]; then
            # being made this moment, or made before owner files: by age
            [ -n "$(find "$d" -maxdepth 0 -mmin +10 2>/dev/null)" ] || continue
        else
            pid=${owner%% *}
            [ "$(_slurm_id "$pid" | cut -d' ' -f2)" = "${owner#* }" ] && continue
        fi
        _slurm_log "removing what a killed run left: $d"
        for pid in $(_slurm_leftovers "$d"); do
            kill -KILL "$pid" 2>/dev/null
        done
        rm -rf "$d"
    done
}

# slurm_start: munged, slurmctld, slurmd with a generated slurm.conf; waits
# (at most SLURM_START_TIMEOUT s) for sinfo to show the node idle.
slurm_start() {
    slurm_available || { _slurm_log "$SLURM_WHY"; return 1; }
    [ -n "$SLURM_DIR" ] && slurm_stop
    _slurm_reap_stale
    # on a signal the daemons (in the test's process group) got it too: no
    # point asking slurmctld to cancel, just kill what is left
    trap slurm_stop EXIT
    trap 'slurm_stop signal; exit 130' INT
    trap 'slurm_stop signal; exit 143' TERM
    trap 'slurm_stop signal; exit 129' HUP
    SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/knit-slurm.XXXXXX") || { SLURM_WHY="mktemp failed"; return 1; }
    chmod 755 "$SLURM_DIR"
    _slurm_id "${BASHPID:-$$}" >"$SLURM_DIR/owner"
    local d=$SLURM_DIR t0=$SECONDS
    mkdir -p "$d/munge" "$d/state" "$d/spool" || { _slurm_fail "cannot make $d"; return 1; }
    chmod 700 "$d/munge"

    # munge: own key and socket
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$d/munge/munge.key" >/dev/null 2>&1
    fi
    [ -s "$d/munge/munge.key" ] || dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$d/munge/munge.key"
    local sock=$d/munge/munge.socket
    _slurm_spawn munged munged -F --force --socket="$sock" --key-file="$d/munge/munge.key" \
        --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
        --seed-file="$d/munge/munged.seed"
    SLURM_PID_munged=$_slurm_last
    for _ in $(seq 1 50); do
        [ -S "$sock" ] && break
        _slurm_alive "$SLURM_PID_munged" || break
        sleep 0.1
    done
    [ -S "$sock" ] || { _slurm_fail "munged did not start"; return 1; }

    # slurm.conf
    local node_line node cport dport
    node_line=$(slurmd -C 2>/dev/null | head -n 1)
    node=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node_line")
    [ -n "$node" ] || { node=$(hostname -s); node_line="NodeName=$node CPUs=$(nproc)"; }
    # slurmd -C reports RealMemory; keep CPUs and topology, drop memory
    # shellcheck disable=SC2001
    node_line=$(sed "s/ RealMemory=[0-9]*//" <<<"$node_line")
    if ! cport=$(_slurm_free_port) || ! dport=$(_slurm_free_port "$cport"); then
        _slurm_fail "no free TCP port"; return 1
    fi
    SLURM_NODE=$node
    cat >"$d/slurm.conf" <<EOF
# generated by tests/launch/slurm.sh
ClusterName=knit
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$d/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
KillOnBadExit=1
ReturnToService=2
MinJobAge=2
FirstJobId=$(( (RANDOM % 30000 + 1) * 1000 ))
InactiveLimit=0
KillWait=2
MailProg=/bin/true
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=knit Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
    : >"$d/plugstack.conf"
    # mpi_pmix makes its clients' dir under /tmp by default, named by uid
    # and job id only: two instances (or a killed run's leftover) collide
    mkdir -p "$d/pmix"
    echo "PMIxCliTmpDirBase=$d/pmix" >"$d/mpi.conf"
    export SLURM_CONF=$d/slurm.conf SLURM_OVERCOMMIT=1 SLURM_DIR SLURM_NODE

    _slurm_spawn slurmctld slurmctld -D -i -f "$SLURM_CONF"
    SLURM_PID_slurmctld=$_slurm_last
    _slurm_spawn slurmd slurmd -D -f "$SLURM_CONF" -N "$node"
    SLURM_PID_slurmd=$_slurm_last

    # bounded wait for the node to be idle
    local deadline=$((SECONDS + SLURM_START_TIMEOUT)) state=
    while [ "$SECONDS" -lt "$deadline" ]; do
        _slurm_alive "$SLURM_PID_slurmctld" || { _slurm_fail "slurmctld exited"; return 1; }
        _slurm_alive "$SLURM_PID_slurmd" || { _slurm_fail "slurmd exited"; return 1; }
        state=$(sinfo -h -N -n "$node" -o %t 2>/dev/null | head -n 1)
        [ "$state" = idle ] && break
        sleep 0.2
    done
    [ "$state" = idle ] || { _slurm_fail "node $node not idle after ${SLURM_START_TIMEOUT}s (state '${state}')"; return 1; }
    export SLURM_START_SECONDS=$((SECONDS - t0))
    return 0
}

# _slurm_alive PID: running (kill -0 is true of a zombie child too)
_slurm_alive() {
    local st
    { st=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    [[ $st =~ \)\ ([A-Za-z]) ]] || return 1
    [ "${BASH_REMATCH[1]}" != Z ] && [ "${BASH_REMATCH[1]}" != X ]
}

# slurm_stop [signal]: kills the daemons (and any slurmstepd of our steps),
# removes the temp dir; safe to call twice.
slurm_stop() {
    local p d=$SLURM_DIR
    # steps outlive a slurmd that is stopped (by design), so cancel our jobs
    # first while slurmctld still answers (not when a signal stops us)
    if [ "${1:-}" != signal ] && [ -n "$d" ] && [ -n "${SLURM_CONF:-}" ] &&
        [ -n "${SLURM_PID_slurmctld:-}" ] && _slurm_alive "$SLURM_PID_slurmctld"; then
        local jobs
        jobs=$(timeout 3 squeue -h -o %i 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$jobs" ] && timeout 3 scancel $jobs 2>/dev/null
    fi
    for p in "${_slurm_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    # slurmctld and slurmd take 3 s and more to exit on SIGTERM; their state
    # is thrown away, so they get half a second before SIGKILL
    local alive
    for _ in 1 2 3 4 5; do
        alive=
        for p in "${_slurm_pids[@]}"; do
            _slurm_alive "$p" && alive=1
        done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    for p in "${_slurm_pids[@]}"; do
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    _slurm_pids=()
    unset SLURM_CONF SLURM_OVERCOMMIT
    # whatever is left that carries our conf in its environment (slurmstepd,
    # tasks): it was started by this harness
    if [ -n "$d" ]; then
        for p in $(_slurm_leftovers "$d"); do
            kill -KILL "$p" 2>/dev/null
        done
    fi
    [ -n "$d" ] && [ -d "$d" ] && rm -rf "$d"
    SLURM_DIR='' SLURM_PID_munged='' SLURM_PID_slurmctld='' SLURM_PID_slurmd=''
    return 0
}

# _slurm_leftovers DIR: pids of processes (not this shell) whose environment
# names DIR's slurm.conf or whose command line names DIR
_slurm_leftovers() {
    local d=$1 e pid
    for e in /proc/[0-9]*; do
        pid=${e#/proc/}
        [ "$pid" = "$$" ] || [ "$pid" = "${BASHPID:-}" ] && continue
        if grep -qzxF "SLURM_CONF=$d/slurm.conf" "$e/environ" 2>/dev/null ||
            grep -qzF "$d/" "$e/cmdline" 2>/dev/null; then
            echo "$pid"
        fi
    done
}
