#!/usr/bin/env bash
# Dependencies point down only (DESIGN.md, "Layers"): a layer includes only
# headers of its own layer or of layers below it.
set -u
cd "$(dirname "$0")/../.."
# rank of each layer: a layer may include layers of lower or equal rank
declare -A rank=([util]=0 [boot]=1 [tl]=2 [shm]=2 [net]=2 [p2p]=3 [offload]=4 [rma]=5 [coll]=5 [dsm]=6 [core]=7 [mpi]=8 [armci]=8 [omp]=8)
bad=0
for f in src/*/*.[ch]; do
    layer=$(basename "$(dirname "$f")")
    [ -n "${rank[$layer]+x}" ] || { echo "FAIL layers: $f is in unknown layer '$layer'"; bad=1; continue; }
    while read -r inc; do
        dep=${inc%%/*}
        [ -n "${rank[$dep]+x}" ] || continue
        if [ "${rank[$dep]}" -gt "${rank[$layer]}" ]; then
            echo "FAIL layers: $f ($layer) includes $inc ($dep is above it)"
            bad=1
        fi
        # transports are peers that must not know each other
        if { [ "$layer" = shm ] && [ "$dep" = net ]; } || { [ "$layer" = net ] && [ "$dep" = shm ]; }; then
            echo "FAIL layers: $f ($layer) includes $inc (transports must not depend on each other)"
            bad=1
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
for f in agent/*.[ch] switch/*.[ch]; do
    [ -f "$f" ] || continue
    while read -r inc; do
        dep=${inc%%/*}
        case $dep in p2p|rma|coll|dsm|core|mpi)
            echo "FAIL layers: daemon source $f includes $inc (daemons use util, offload and transports only)"; bad=1;;
        esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
for f in modules/*.c; do
    [ -f "$f" ] || continue
    if grep -E '^#include "' "$f" | grep -vq 'knit/module.h'; then
        echo "FAIL layers: module $f includes more than knit/module.h"; bad=1
    fi
done
[ $bad -eq 0 ] && echo "PASS lint.layers"
exit $bad
