#!/usr/bin/env bash
# How MPI jobs end when something is wrong: what knitrun and the ranks
# print, and knitrun's exit status.  Each case checks every line of stderr,
# so that a stray line (a second report of the same error, a warning about
# a connection of a process the job's end stopped) fails it too.
# Lines: PASS/FAIL/SKIP.
SUITE=mpi_exits
source "$(dirname "$0")/lib.sh"
TMP=$(mktemp -d /tmp/knit-mpi-exits.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# expect NAME WANT_RC VERDICT_REGEX [OTHER_STDERR_REGEX] -- command...:
# the command exits WANT_RC, its stderr holds exactly one line from
# knitrun, matching VERDICT_REGEX (grep -E, whole line), and every other
# line of stderr matches OTHER_STDERR_REGEX (default: there is none).
# WANT_OUT=regex: a line of stdout must match it too.
expect() {
    local name=$1 want_rc=$2 verdict=$3 other='^$'
    shift 3
    if [ "$1" != -- ]; then other=$1; shift; fi
    shift
    local rc why=""
    timeout -k 2 120 "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    local v n
    v=$(grep '^knitrun: ' "$TMP/err")
    n=$(grep -c '^knitrun: ' "$TMP/err")
    [ "$rc" -eq "$want_rc" ] || why+="exit status $rc, expected $want_rc; "
    [ "$n" -eq 1 ] || why+="$n lines from knitrun; "
    grep -qxE -- "$verdict" <<<"$v" || why+="verdict '$v' does not match '$verdict'; "
    local stray
    stray=$(grep -v '^knitrun: ' "$TMP/err" | grep -vE -- "$other" | head -n 3)
    [ -z "$stray" ] || why+="stray lines on stderr: '$(tr '\n' '|' <<<"$stray")'; "
    if grep -q 'not reached' "$TMP/out"; then why+="the program went on after the error; "; fi
    if [ -n "${WANT_OUT:-}" ] && ! grep -qxE -- "$WANT_OUT" "$TMP/out"; then
        why+="no line of stdout matches '$WANT_OUT' ('$(tr '\n' '|' <"$TMP/out")'); "
    fi
    if [ -z "$why" ]; then
        pass "$name"
    else
        fail "$name" "$why"
        tail -n 6 "$TMP/err"
    fi
}

# Every rank makes a fatal error at once: the first abort is the verdict;
# the others, and the ranks SIGTERMed meanwhile (their bootstrap
# connections closed while knitrun answered them), add nothing.
for i in 1 2 3 4 5; do
    expect "quiet_abort.$i" 1 "knitrun: rank [0-9] on node [01] aborted \(code 1\): MPI_Send: MPI_ERR_RANK: invalid rank: destination 13 not in \[0, 8\) of MPI_COMM_WORLD" \
        -- "$KNITRUN" -n 8 --nodes 2 "$BIN/mpi_fatal" all
done

# A rank that returns from main without MPI_Finalize is reported with
# MPI's name for the call it skipped (the others wait in MPI_Finalize)
expect nofinalize 1 "knitrun: rank 1 on node 0 exited without calling MPI_Finalize" \
    -- "$KNITRUN" -n 3 "$BIN/mpi_exits" nofinalize

# /dev/shm without room: a private mount namespace with a small tmpfs on
# /dev/shm (the machine's own is untouched).  knitrun sees it before it
# starts anything: one line, nothing started.
# MPI_Init fails: the default handler ends the job with the reason, once
# (not a line per rank, nor "called before MPI_Init" from the next call).
# For that, /dev/shm fills up after knitrun's check: rank 0 fills it just
# before it starts (fill); its MPI_Init then finds too little room for
# the node segment (knit_init makes the same check as knitrun, as it must
# under other launchers).  The node's other ranks defer to its report.
# With two emulated nodes sharing the tmpfs, node 1 may take its segment
# first and leave less than the filler asks: the filler then fills what
# is left (its ENOSPC is expected, not a line of the job's), and either
# node's first rank is the one that fails.  Without daemons there: node
# 1's agent would race the filler too and might be the one that fails.
NEED="the job needs [0-9.]+ MiB of shared memory at start \(/dev/shm, [^)]*\), but /dev/shm has [0-9.]+ MiB free: .*"
if unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm' 2>/dev/null; then
    # small_shm SIZE command...
    small_shm=(unshare -m sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"')
    fill=(sh -c 'if [ "$KNIT_RANK" = 0 ]; then head -c "$0" /dev/zero >/dev/shm/filler 2>/dev/null; fi; exec "$@"')
    expect init.shm_full 1 "knitrun: $NEED" \
        -- "${small_shm[@]}" 64k "$KNITRUN" --no-offload -n 3 "$BIN/mpi_exits" init
    expect init.shm_full.mpi_init 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Init: MPI_ERR_NO_MEM: out of memory: $NEED" \
        -- "${small_shm[@]}" 2m "$KNITRUN" --no-offload -n 3 "${fill[@]}" 1800k "$BIN/mpi_exits" init
    expect init.shm_full.mpi_init.offload 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Init: MPI_ERR_NO_MEM: out of memory: $NEED" \
        -- "${small_shm[@]}" 3m "$KNITRUN" -n 4 "${fill[@]}" 2500k "$BIN/mpi_exits" init
    # (the shared tmpfs lets node 1 take the room between a rank's check
    # and its segment: then the creation itself reports the lack of room)
    expect init.shm_full.mpi_init.nodes2 1 "knitrun: rank (0 on node 0|2 on node 1) aborted \(code 1\): MPI_Init: (MPI_ERR_NO_MEM: out of memory: $NEED|MPI_ERR_OTHER: other error: node segment /knit-[^ ]+ of [0-9]+ bytes in /dev/shm: No space left on device)" \
        -- "${small_shm[@]}" 3m "$KNITRUN" --no-offload -n 4 --nodes 2 "${fill[@]}" 2500k "$BIN/mpi_exits" init
else
    skip init.shm_full "cannot mount a private tmpfs on /dev/shm here (unshare -m needs root)"
fi
# KNIT_CMA=on where cross-memory attach is forbidden (a seccomp filter, as
# a container's): every rank fails alike, the job says it once
expect init.cma_on 1 "knitrun: rank [0-2] on node 0 aborted \(code 1\): MPI_Init: MPI_ERR_OTHER: other error: KNIT_CMA=on but cross-memory attach to 2 local peer\(s\) failed: Operation not permitted" \
    -- env KNIT_CMA=on "$KNITRUN" -n 3 "$ROOT/$BUILD/tests/job/nocma" "$BIN/mpi_exits" init

# A bad buffer in a transfer: the job's verdict blames the rank it
# belongs to.  Address 0x1000 (nothing is mapped in the first MiB) is
# caught when the call is made, whatever the protocol (inline and eager
# copies would otherwise fault in the sender's own code); a buffer with no
# access at an ordinary address is found by the rendezvous copy: the
# puller or pusher finds out whose buffer it is and tells the other side
# (NAK / PUSH_FAILED, docs/protocols.md), whose request fails too and
# lets the owner's report end the job.
X=$BIN/mpi_exits
BUF="MPI_ERR_BUFFER: invalid buffer pointer"
ADDR="0x[0-9a-f]+"
expect buf.send.low.eager 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Isend: $BUF: rank 0: send buffer 0x1000 of 4096 bytes is not readable" \
    -- "$KNITRUN" -n 2 "$X" buf send low sendfirst 4096
expect buf.send.low.inline 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Send: $BUF: rank 0: send buffer 0x1000 of 8 bytes is not readable" \
    -- "$KNITRUN" -n 3 --nodes 3 "$X" buf send low recvfirst 8
expect buf.recv.low 1 "knitrun: rank 1 on node 0 aborted \(code 1\): MPI_Recv: $BUF: rank 1: receive buffer 0x1000 of 4096 bytes is not writable" \
    -- "$KNITRUN" -n 2 "$X" buf recv low sendfirst 4096
expect buf.send.pull 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Wait: $BUF: rank 0: send buffer $ADDR of 100000 bytes is not readable" \
    -- "$KNITRUN" -n 2 "$X" buf send prot sendfirst 100000
expect buf.send.pull.coop 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Wait: $BUF: rank 0: send buffer $ADDR of 4000000 bytes is not readable" \
    -- "$KNITRUN" -n 3 "$X" buf send prot sendfirst 4000000
expect buf.recv.pull 1 "knitrun: rank 1 on node 0 aborted \(code 1\): MPI_Recv: $BUF: rank 1: receive buffer $ADDR of 100000 bytes is not writable" \
    -- "$KNITRUN" -n 2 "$X" buf recv prot sendfirst 100000
expect buf.send.push 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Send: $BUF: rank 0: send buffer $ADDR of 100000 bytes is not readable" \
    -- env KNIT_RNDV_PUSH=on "$KNITRUN" -n 2 "$X" buf send prot recvfirst 100000
expect buf.recv.push 1 "knitrun: rank 1 on node 0 aborted \(code 1\): MPI_Wait: $BUF: rank 1: receive buffer $ADDR of 4000000 bytes is not writable" \
    -- env KNIT_RNDV_PUSH=on "$KNITRUN" -n 2 "$X" buf recv prot recvfirst 4000000
# the owner returns its error and goes on: the other rank's request failed
# too (told by NAK / PUSH_FAILED), and its report, made after giving the
# owner's a chance (5 s), blames the owner
WANT_OUT="rank 0 got $BUF" \
expect buf.send.pull.returned 1 "knitrun: rank 1 on node 0 aborted \(code 1\): MPI_Recv: MPI_ERR_OTHER: other error: rank 0's send buffer is not readable: the message from it was not received" \
    -- "$KNITRUN" -n 2 "$X" buf send prot sendfirst 100000 return
WANT_OUT="rank 1 got $BUF" \
expect buf.recv.push.returned 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Send: MPI_ERR_OTHER: other error: rank 1's receive buffer is not writable: the message of 100000 bytes to it was not delivered" \
    -- env KNIT_RNDV_PUSH=on "$KNITRUN" -n 2 "$X" buf recv prot recvfirst 100000 return
# between nodes: a send buffer is checked when it is registered for the
# peer's RDMA read (the net provider never answers a read it cannot
# serve); a push the provider fails with EFAULT is told like a shm one.
# (A receive buffer the provider writes in its own process faults there:
# the rank it belongs to is killed by SIGSEGV, which blames it too.)
if "$KNITRUN" --timeout 60 -n 2 --nodes 2 "$BIN/mpi_exits" nofinalize 2>&1 | grep -q "not supported yet"; then
    skip buf.nodes2 "communication between nodes is not supported yet"
else
    expect buf.send.pull.nodes2 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Isend: $BUF: rank 0: send buffer $ADDR of 200000 bytes is not readable" \
        -- "$KNITRUN" -n 2 --nodes 2 "$X" buf send prot sendfirst 200000
    expect buf.send.push.nodes2 1 "knitrun: rank 0 on node 0 aborted \(code 1\): MPI_Send: $BUF: rank 0: send buffer $ADDR of 200000 bytes is not readable" \
        -- "$KNITRUN" -n 2 --nodes 2 "$X" buf send prot recvfirst 200000
    expect buf.recv.low.nodes2 1 "knitrun: rank 1 on node 1 aborted \(code 1\): MPI_Irecv: $BUF: rank 1: receive buffer 0x1000 of 200000 bytes is not writable" \
        -- "$KNITRUN" -n 2 --nodes 2 "$X" buf recv low recvfirst 200000
fi

exit $((fails > 0))
