#!/usr/bin/env python3
"""The replicated region (bench/dsm.c) under knitrun's defaults, both
protocols side by side, on 2 and 4 emulated nodes (one rank each, and two
each for the patterns).  Every measurement runs REPS times, the two
protocols alternating; each cell is the median of the runs' medians.

    python3 bench/dsm.py [--build build] [--reps 5] [--size 64m]

Prints Markdown tables:
  release latency  rank 0 writes a byte of a page and releases it (the
                   update is in every replica), beside knit_bcast of 4 KiB
                   and knit_barrier on the same layout
  update bandwidth one rank rewrites SIZE bytes and releases them, beside
                   knit's point-to-point bandwidth between the same nodes
  access patterns  onewriter, blocks, migratory (bench/dsm.c), ms per round
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROTOCOLS = ["update", "invalidate"]
PATTERNS = ["onewriter", "blocks", "migratory"]


def run(build, n, nodes, proto, args, limit=300):
    cmd = [os.path.join(ROOT, build, "bin", "knitrun"), "-n", str(n), "--nodes", str(nodes),
           "-x", "KNIT_DSM_PROTOCOL=" + proto, os.path.join(ROOT, build, "bench", "dsm")] + args
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        print("warning: %s took over %d s" % (" ".join(cmd), limit), file=sys.stderr)
        return {}
    if r.returncode != 0:
        print("warning: %s failed: %s" % (" ".join(cmd), r.stderr[-300:]), file=sys.stderr)
        return {}
    res = {}
    for line in r.stdout.splitlines():
        f = line.split()
        for k, v in zip(f[0::2], f[1::2]):
            try:
                res[k] = float(v)
            except ValueError:
                pass
    return res


def med(runs, key):
    v = [r[key] for r in runs if key in r]
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", default="64m")
    a = ap.parse_args()
    size = int(a.size[:-1]) << {"k": 10, "m": 20, "g": 30}[a.size[-1]] if a.size[-1] in "kmg" else int(a.size)

    print("## Release latency (us, median of %d runs)\n" % a.reps)
    print("| nodes | protocol | release | knit_dsm_barrier | bcast 4 KiB | barrier | release / bcast |")
    print("|---|---|---|---|---|---|---|")
    for nodes in (2, 4):
        runs = {p: [] for p in PROTOCOLS}
        for _ in range(a.reps):
            for p in PROTOCOLS:
                runs[p].append(run(a.build, nodes, nodes, p, ["release", "300"]))
        for p in PROTOCOLS:
            r = runs[p]
            print("| %d | %s | %.1f | %.1f | %.1f | %.1f | %.2f |" % (
                nodes, p, med(r, "release_us"), med(r, "dsm_barrier_us"), med(r, "bcast4k_us"),
                med(r, "barrier_us"), med(r, "release_us") / med(r, "bcast4k_us")))

    print("\n## Update bandwidth: one rank rewrites %s, then releases (GB/s, median of %d runs)\n" % (a.size, a.reps))
    print("| nodes | protocol | release | write + release | knit p2p | release / p2p |")
    print("|---|---|---|---|---|---|")
    for nodes in (2, 4):
        runs = {p: [] for p in PROTOCOLS}
        for _ in range(a.reps):
            for p in PROTOCOLS:
                runs[p].append(run(a.build, nodes, nodes, p, ["bw", str(size), "5"]))
        for p in PROTOCOLS:
            r = runs[p]
            print("| %d | %s | %.2f | %.2f | %.2f | %.2f |" % (
                nodes, p, med(r, "release_gbs"), med(r, "write_release_gbs"), med(r, "p2p_gbs"),
                med(r, "release_gbs") / med(r, "p2p_gbs")))

    print("\n## Access patterns (ms per round, median of %d runs)\n" % a.reps)
    print("| layout | pattern | update | invalidate | faster |")
    print("|---|---|---|---|---|")
    for n, nodes in ((2, 2), (4, 4), (4, 2)):
        for pat in PATTERNS:
            runs = {p: [] for p in PROTOCOLS}
            for _ in range(a.reps):
                for p in PROTOCOLS:
                    runs[p].append(run(a.build, n, nodes, p, ["pattern", pat, "5"]))
            u, i = med(runs["update"], pat + "_ms"), med(runs["invalidate"], pat + "_ms")
            print("| %d ranks, %d nodes | %s | %.2f | %.2f | %s %.2fx |" % (
                n, nodes, pat, u, i, "update" if u <= i else "invalidate", max(u, i) / min(u, i)))


if __name__ == "__main__":
    main()
