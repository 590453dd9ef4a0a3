#!/usr/bin/env bash
# make soak: a long job (tests/soak/soak.c: point-to-point of every size,
# every collective, nonblocking traffic, module requests, a module that
# faults every FAULT_EVERY seconds), 8 ranks on 2 emulated nodes, with
# every process of the job (knitrun, ranks, agents, switch, module
# processes) sampled every SAMPLE seconds: resident memory, open file
# descriptors, and the job's /dev/shm files.  tests/soak/report.py then
# checks that all of it is flat after the warm-up and draws the curves.
#   soak.sh BUILD SECONDS [OUTDIR]      SAMPLE=10 FAULT_EVERY=60 NP=8 NODES=2
set -u
BUILD=${1:-build}
SECONDS_=${2:-600}
OUTDIR=${3:-$BUILD/soak}
SAMPLE=${SAMPLE:-10}
FAULT_EVERY=${FAULT_EVERY:-60}
NP=${NP:-8}
NODES=${NODES:-2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
mkdir -p "$OUTDIR"
rm -f "$OUTDIR"/*.csv "$OUTDIR"/*.svg "$OUTDIR"/job.*

"$BUILD/bin/knitrun" -n "$NP" --nodes "$NODES" --timeout $((SECONDS_ + 300)) \
    "$BUILD/tests/soak/soak" "$BUILD/modules" "$SECONDS_" "$FAULT_EVERY" \
    >"$OUTDIR/job.out" 2>"$OUTDIR/job.err" &
KR=$!
trap 'kill $KR 2>/dev/null' INT TERM

# every process under knitrun (its children, theirs, ...)
descendants() {
    local all pid ppid
    all=$(for s in /proc/[0-9]*/stat; do
        read -r pid _ _ ppid _ <"$s" 2>/dev/null && echo "$pid $ppid"
    done 2>/dev/null)
    local front=("$1") seen=" $1 "
    while [ ${#front[@]} -gt 0 ]; do
        local p=${front[0]}
        front=("${front[@]:1}")
        echo "$p"
        for c in $(awk -v p="$p" '$2 == p {print $1}' <<<"$all"); do
            [[ "$seen" == *" $c "* ]] && continue
            seen+="$c "
            front+=("$c")
        done
    done
}

echo "t,pid,comm,rss_kb,fds" >"$OUTDIR/procs.csv"
echo "t,shm_kb,files" >"$OUTDIR/shm.csv"
jobid=""
t0=$(date +%s)
while kill -0 "$KR" 2>/dev/null; do
    t=$(( $(date +%s) - t0 ))
    for p in $(descendants "$KR"); do
        comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null)
        fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
        [ -n "$rss" ] && echo "$t,$p,$comm,$rss,$fds" >>"$OUTDIR/procs.csv"
        if [ -z "$jobid" ]; then
            jobid=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^KNIT_JOBID=//p')
        fi
    done
    if [ -n "$jobid" ]; then
        # every /dev/shm file of the job, by name or mapped (the node
        # segments are unlinked once every rank has mapped them, but their
        # pages count as long as they are mapped): allocated size of each
        # distinct inode
        declare -A seen=()
        kb=0 n=0
        for f in /dev/shm/knit-"$jobid"-*; do
            [ -e "$f" ] || continue
            ino=$(stat -c %i "$f")
            [ -n "${seen[$ino]:-}" ] && continue
            seen[$ino]=1
            kb=$((kb + $(stat -c '%b * %B / 1024' "$f")))
            n=$((n + 1))
        done
        for p in $(descendants "$KR"); do
            while read -r range ino; do
                [ -n "${seen[$ino]:-}" ] && continue
                seen[$ino]=1
                b=$(stat -L -c '%b * %B / 1024' "/proc/$p/map_files/$range" 2>/dev/null) || continue
                kb=$((kb + b))
                n=$((n + 1))
            done < <(awk -v j="/dev/shm/knit-$jobid-" 'index($6, j) == 1 {print $1, $5}' "/proc/$p/maps" 2>/dev/null)
        done
        unset seen
        echo "$t,$kb,$n" >>"$OUTDIR/shm.csv"
    fi
    sleep "$SAMPLE"
done
wait "$KR"
rc=$?
echo "soak: job ended with status $rc after $(( $(date +%s) - t0 )) s; $(tail -n 1 "$OUTDIR/job.out")"
python3 tests/soak/report.py "$OUTDIR" "$rc" "$SECONDS_"
