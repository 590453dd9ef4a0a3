#!/usr/bin/env bash
# knitrun: geometry on emulated nodes, the bootstrap store, cookie
# refusal, singleton, usage errors, -x, --tag-output, environment,
# stale shared-memory files.
source "$(dirname "$0")/lib.sh"

# --- geometry: 1, 2, 4, 8 ranks on 1 and 2 emulated nodes
for n in 1 2 4 8; do
    for m in 1 2; do
        [ "$m" -gt "$n" ] && continue
        name="launch.geometry.n$n.nodes$m"
        run "$KNITRUN" -n "$n" --nodes "$m" "$JOBBIN/hello"
        if [ "$RC" -ne 0 ]; then fail "$name" "exit status $RC: $(head -c 300 "$ERR")"; continue; fi
        # expected: block-wise, first n%m nodes one more
        want=$TMP/want; : >"$want"
        r=0
        for ((node = 0; node < m; node++)); do
            cnt=$(( n / m + (node < n % m ? 1 : 0) ))
            for ((l = 0; l < cnt; l++)); do
                echo "rank $r of $n on node $node of $m, local rank $l of $cnt, host $(hostname)" >>"$want"
                r=$((r + 1))
            done
        done
        if diff <(sort "$want") <(sort "$OUT") >/dev/null; then pass "$name"
        else fail "$name" "got: $(sort "$OUT" | tr '\n' '|')"; fi
    done
done

# --- put/get/fence with 8 ranks
run "$KNITRUN" -n 8 --nodes 2 "$JOBBIN/boot_kv"
if [ "$RC" -eq 0 ] && [ "$(grep -c '^kv ok' "$OUT")" -eq 8 ]; then pass launch.kv8
else fail launch.kv8 "status $RC, $(grep -c '^kv ok' "$OUT") of 8 ok: $(head -c 300 "$ERR")"; fi

# --- wrong cookie and malformed header are refused, logged, and the job goes on
run "$KNITRUN" -n 3 "$JOBBIN/boot_cookie"
refused=$(grep -c 'knit\[knitrun\] warn: refused bootstrap connection from .*: bad cookie' "$ERR")
malformed=$(grep -c 'knit\[knitrun\] warn: refused bootstrap connection from .*: malformed header' "$ERR")
if [ "$RC" -eq 0 ] && [ "$(grep -c '^cookie ok' "$OUT")" -eq 3 ] && [ "$refused" -eq 3 ] && [ "$malformed" -eq 3 ]; then
    pass launch.cookie
else
    fail launch.cookie "status $RC, ok lines $(grep -c '^cookie ok' "$OUT"), refusals logged $refused/3, malformed $malformed/3"
fi

# --- singleton: no knitrun
run env -u KNIT_BOOT_ADDR -u KNIT_RANK -u KNIT_SIZE -u KNIT_COOKIE "$JOBBIN/hello"
if [ "$RC" -eq 0 ] && grep -q "^rank 0 of 1 on node 0 of 1, local rank 0 of 1" "$OUT"; then pass launch.singleton
else fail launch.singleton "status $RC: $(cat "$OUT" "$ERR" | head -c 300)"; fi

# --- usage errors exit 2 with a usage message; help and version exit 0
usage_case() {
    local name=$1; shift
    run "$KNITRUN" "$@"
    if [ "$RC" -eq 2 ] && grep -q . "$ERR"; then pass "launch.usage.$name"
    else fail "launch.usage.$name" "knitrun $* gave status $RC: $(head -c 200 "$ERR")"; fi
}
usage_case noprog
usage_case np0 -n 0 true
usage_case npword -np abc true
usage_case unknown --bogus true
usage_case noval -n
usage_case nodes --nodes 3 -n 2 true
usage_case xname -x 1BAD true
usage_case timeout --timeout -1 true
usage_case hostboth --hosts a --hostfile /dev/null true
usage_case hostfile --hostfile /nonexistent/hosts true
usage_case badhost --hosts 'a,-oProxyCommand=x' true
run "$KNITRUN" --bogus true
grep -q '^usage: knitrun' "$ERR" && pass launch.usage.message || fail launch.usage.message "no usage text"
run "$KNITRUN" --help
[ "$RC" -eq 0 ] && grep -q -- '--tag-output' "$OUT" && pass launch.help || fail launch.help "status $RC"
run "$KNITRUN" --version
[ "$RC" -eq 0 ] && grep -q '^knitrun (knit) [0-9]' "$OUT" && pass launch.version || fail launch.version "status $RC"

# --- environment of non-knit programs, and -x
run env FOO=old BAZ=qux "$KNITRUN" -n 5 --nodes 2 -x FOO=bar -x BAZ sh -c \
    'echo "$KNIT_RANK $KNIT_SIZE $KNIT_NODE $KNIT_NNODES $KNIT_LOCAL_RANK $KNIT_LOCAL_SIZE $KNIT_NODE_SIZES $FOO $BAZ ${KNIT_JOBID:+jobid} ${KNIT_COOKIE:+cookie}"'
line=$(grep '^3 ' "$OUT")
if [ "$RC" -eq 0 ] && [ "$line" = "3 5 1 2 0 2 3,2 bar qux jobid cookie" ] && [ "$(wc -l <"$OUT")" -eq 5 ]; then
    pass launch.env
else
    fail launch.env "status $RC, rank 3 saw '$line'"
fi

# --- --tag-output, and lines written in pieces never mix
run "$KNITRUN" -n 3 --tag-output sh -c \
    'printf "first-$KNIT_RANK "; sleep 0.3; printf "second-$KNIT_RANK\n"; echo "err-$KNIT_RANK" >&2'
ok=1
for r in 0 1 2; do
    grep -qx "\[$r\] first-$r second-$r" "$OUT" || ok=0
    grep -qx "\[$r\] err-$r" "$ERR" || ok=0
done
[ "$(wc -l <"$OUT")" -eq 3 ] || ok=0
[ "$RC" -eq 0 ] && [ $ok = 1 ] && pass launch.tag_output || fail launch.tag_output "status $RC, stdout: $(tr '\n' '|' <"$OUT")"
run "$KNITRUN" -n 2 sh -c 'printf "a$KNIT_RANK"; sleep 0.3; echo "b$KNIT_RANK"'
[ "$RC" -eq 0 ] && grep -qx a0b0 "$OUT" && grep -qx a1b1 "$OUT" && pass launch.whole_lines ||
    fail launch.whole_lines "stdout: $(tr '\n' '|' <"$OUT")"

# --- a program that cannot be started
run "$KNITRUN" -n 2 /nonexistent/program
[ "$RC" -eq 127 ] && verdicts | grep -qx 'knitrun: rank [01] on node 0 exited with status 127' &&
    pass launch.noexec || fail launch.noexec "status $RC: $(head -c 300 "$ERR")"

# --- stale shared-memory files of a knitrun that is gone are removed at start
tag=$(hostname | tr -cd 'A-Za-z0-9' | cut -c1-24)
[ -n "$tag" ] || tag=host
sh -c 'exit 0' & dead=$!; wait $dead
stale=/dev/shm/knit-$tag.$dead.beef-n0-stale
reused=/dev/shm/knit-$tag.$$.beef-n0-notknitrun   # alive, but not a knitrun
other=/dev/shm/knit-otherhost.$dead.beef-n0-keep
touch "$stale" "$reused" "$other"
run "$KNITRUN" -n 1 true
if [ ! -e "$stale" ] && [ ! -e "$reused" ] && [ -e "$other" ]; then pass launch.stale_shm
else fail launch.stale_shm "stale: $(ls "$stale" "$reused" "$other" 2>/dev/null | tr '\n' ' ')"; fi
rm -f "$stale" "$reused" "$other"

finish
