#!/usr/bin/env bash
# make fuzz: run each fuzz target for a bounded time and report.
#   run.sh FUZZ_DIR SECONDS JOBS TARGET...
# Per target: libFuzzer runs fuzz_<name> on its seed corpus
# (tests/fuzz/corpus/<name>, read only) and a working corpus kept in
# FUZZ_DIR/corpus/<name> (it grows from run to run), niced (FUZZ_NICE, 10)
# so that the machine's other work keeps its cpu; JOBS targets at a time.
# Prints one line per target: runs, coverage (cov: edges, ft: features),
# corpus size, crashes (inputs under FUZZ_DIR/crashes/<name>/; log in
# FUZZ_DIR/log/<name>.log).  Exit status 1 when any target crashed.
# FUZZ_SEED: libFuzzer's -seed (default: a fresh one each run).
set -u
dir=$1 secs=$2 jobs=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
nice_n=${FUZZ_NICE:-10}
mkdir -p "$dir/log"

run_one() {
    local t=$1
    local work="$dir/corpus/$t" crashes="$dir/crashes/$t" log="$dir/log/$t.log"
    mkdir -p "$work" "$crashes"
    rm -f "$crashes"/*  # a crash of an earlier run was reported then
    local seed=()
    [ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
    # -rss_limit_mb: 2 targets at a time stay far from the machine's memory
    nice -n "$nice_n" "$dir/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "${seed[@]}" \
        "$work" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1
    echo $? >"$log.rc"
}

report_one() {
    local t=$1 log="$dir/log/$1.log"
    local rc runs cov ft corp ncrash
    rc=$(cat "$log.rc" 2>/dev/null || echo 1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    corp=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2)
    ncrash=$(find "$dir/crashes/$t" -type f 2>/dev/null | wc -l)
    printf 'fuzz %-8s runs %s, cov %s, ft %s, corpus %s, crashes %s%s\n' "$t" "${runs:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$ncrash" "$([ "$rc" -ne 0 ] && echo " (exit $rc: see $log)")"
    [ "$rc" -eq 0 ] && [ "$ncrash" -eq 0 ]
}

echo "fuzz: ${secs}s per target, $jobs at a time: $*"
running=0
for t in "$@"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
bad=0
for t in "$@"; do
    report_one "$t" || bad=1
done
exit $bad
