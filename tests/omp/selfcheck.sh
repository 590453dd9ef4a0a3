#!/usr/bin/env bash
# Checks test_omp.sh itself, not komp: runs it against a stand-in "knit"
# made of libgomp.  Its knitcc is gcc -fopenmp plus a GOMP_target_ext and a
# GOMP_cancel (under OMP_CANCELLATION=true) that refuse with "... is not
# supported"; its knitrun runs the program once with OMP_NUM_THREADS =
# nodes x threads (what komp's team would be) and the -x variables.  Every
# line should be PASS.  Arguments and environment go to test_omp.sh.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKE=$(mktemp -d /tmp/knit-omp-fake.XXXXXX)
trap 'rm -rf "$FAKE"' EXIT

cat >"$FAKE/refuse.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void GOMP_target_ext(void)
{
    fprintf(stderr, "stand-in komp: target offloading is not supported\n");
    exit(3);
}
int GOMP_cancel(int which, int do_cancel)
{
    (void)which;
    const char *c = getenv("OMP_CANCELLATION");
    if (do_cancel && c && strcmp(c, "true") == 0) {
        fprintf(stderr, "stand-in komp: cancellation is not supported\n");
        exit(3);
    }
    return 0;
}
EOF
gcc -O2 -c -o "$FAKE/refuse.o" "$FAKE/refuse.c" || exit 1

cat >"$FAKE/knitcc" <<EOF
#!/bin/sh
# stand-in: gcc with the refusals linked in (unless only compiling)
for a in "\$@"; do case \$a in -c|-S|-E) exec gcc "\$@" ;; esac; done
exec gcc "\$@" "$FAKE/refuse.o"
EOF
cat >"$FAKE/knitrun" <<'EOF'
#!/usr/bin/env bash
# stand-in: knitrun -n N --nodes M -x VAR[=VAL] --timeout S prog args...
nodes=1 threads=1 limit=60 vars=()
while [ $# -gt 0 ]; do
    case $1 in
    -n | -np) shift ;;
    --nodes) nodes=$2; shift ;;
    --timeout) limit=$2; shift ;;
    -x)
        case $2 in
        OMP_NUM_THREADS=*) threads=${2#*=} ;;
        *=*) vars+=("$2") ;;
        *) vars+=("$2=${!2}") ;;
        esac
        shift ;;
    -*) echo "stand-in knitrun: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
exec env OMP_NUM_THREADS=$((nodes * threads)) "${vars[@]}" timeout "$limit" "$@"
EOF
chmod +x "$FAKE/knitcc" "$FAKE/knitrun"
BIN_DIR=$FAKE bash "$HERE/test_omp.sh" "$@"
