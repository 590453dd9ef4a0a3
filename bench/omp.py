#!/usr/bin/env python3
"""OpenMP across nodes (docs/openmp.md): the same program source built twice,
with gcc -fopenmp (libgomp: real shared memory, the machine's limit) and
with knitcc -fopenmp (komp over knit's replicated region), at the same total
thread count: libgomp with 2 threads in one process beside komp on 2
emulated nodes of 1 thread each (knitrun's defaults, daemons and all), under
both protocols of the region.  The runs alternate; each cell is the median
of REPS runs of the program's own timer (its computing part, as the
benchmark reports it); the job's wall time (start-up included) is beside it.

    python3 bench/omp.py [--build build] [--reps 5] [--only ep,mandel,himeno,cg]

Prints Markdown tables: times, komp's speed as a fraction of libgomp's
(libgomp time / komp time), and where komp's time goes (KNIT_STATS of one
more run: the region's faults, pages diffed, bytes released, update frames).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name: (source, arguments, what the issue asks of komp against libgomp)
PROGRAMS = {
    "ep": ("examples/omp/ep.c", ["W"], "EP class W, >= 0.9x"),
    "mandel": ("examples/omp/mandel.c", ["-q", "-s", "2048x2048", "-o", "/dev/null"], "Mandelbrot 2048^2, >= 0.9x"),
    "himeno": ("examples/omp/himeno.c", ["S", "100", "nocheck"], "Himeno S (100 iterations), >= 0.5x"),
    "cg": ("examples/omp/cg.c", ["W"], "CG class W (no target)"),
}
PROTOCOLS = ["update", "invalidate"]


def build(name, src, build_dir, out):
    gomp = os.path.join(out, name + ".gomp")
    komp = os.path.join(out, name + ".komp")
    libs = ["-lm"]
    if name == "mandel":
        libs = subprocess.run(["pkg-config", "--cflags", "--libs", "libmicrohttpd", "libpng"], stdout=subprocess.PIPE,
                              text=True, check=True).stdout.split() + libs
    subprocess.run(["gcc", "-O2", "-fopenmp", "-o", gomp, os.path.join(ROOT, src)] + libs, check=True)
    subprocess.run([os.path.join(ROOT, build_dir, "bin", "knitcc"), "-O2", "-fopenmp", "-o", komp,
                    os.path.join(ROOT, src)] + libs, check=True)
    return gomp, komp


def timed(cmd, env, limit=600):
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=limit, env=env)
    except subprocess.TimeoutExpired:
        print("warning: %s took over %d s" % (" ".join(cmd), limit), file=sys.stderr)
        return None, None, ""
    wall = time.monotonic() - t0
    m = re.search(r"^time\s+([0-9.eE+-]+)\s*s", r.stdout, re.M)
    if r.returncode != 0 or not m:
        print("warning: %s: status %d: %s" % (" ".join(cmd), r.returncode, (r.stdout + r.stderr)[-300:]),
              file=sys.stderr)
        return None, None, r.stderr
    return float(m.group(1)), wall, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    a = ap.parse_args()
    knitrun = os.path.join(ROOT, a.build, "bin", "knitrun")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("OMP_") or k.startswith("KNIT_"):
            del env[k]
    out = tempfile.mkdtemp(prefix="knit-bench-omp.")
    rows, stats = [], []
    for name in a.only.split(","):
        src, args, target = PROGRAMS[name]
        gomp, komp = build(name, src, a.build, out)
        t = {"libgomp": [], "update": [], "invalidate": []}
        w = {"libgomp": [], "update": [], "invalidate": []}
        for _ in range(a.reps):
            e = dict(env, OMP_NUM_THREADS="2")
            s, wall, _ = timed([gomp] + args, e)
            if s is not None:
                t["libgomp"].append(s)
                w["libgomp"].append(wall)
            for p in PROTOCOLS:
                s, wall, _ = timed([knitrun, "-n", "2", "--nodes", "2", "-x", "OMP_NUM_THREADS=1", "-x",
                                    "KNIT_DSM_PROTOCOL=" + p, komp] + args, env)
                if s is not None:
                    t[p].append(s)
                    w[p].append(wall)
        med = {k: statistics.median(v) if v else float("nan") for k, v in t.items()}
        wmed = {k: statistics.median(v) if v else float("nan") for k, v in w.items()}
        rows.append((name, target, med, wmed, {k: len(v) for k, v in t.items()}))
        for p in PROTOCOLS:
            _, _, err = timed([knitrun, "-n", "2", "--nodes", "2", "-x", "OMP_NUM_THREADS=1", "-x",
                               "KNIT_DSM_PROTOCOL=" + p, "-x", "KNIT_STATS=1", komp] + args, env)
            for line in err.splitlines():
                if "dsm:" in line and line.startswith("knit[node"):
                    stats.append((name, p, line.split("dsm:", 1)[1].strip()))
    print("## OpenMP across nodes: libgomp (2 threads, one process) vs komp (2 nodes x 1 thread)\n")
    print("%d runs each, alternating; median of each program's own timer in seconds (job wall time, "
          "start-up included, in parentheses)\n" % a.reps)
    print("| program | libgomp 2 threads | komp update | komp invalidate | update / libgomp | "
          "invalidate / libgomp | target |")
    print("|---|---|---|---|---|---|---|")
    for name, target, med, wmed, n in rows:
        r_u = med["libgomp"] / med["update"] if med["update"] else float("nan")
        r_i = med["libgomp"] / med["invalidate"] if med["invalidate"] else float("nan")
        print("| %s | %.3f (%.2f) | %.3f (%.2f) | %.3f (%.2f) | %.2fx | %.2fx | %s |" %
              (name, med["libgomp"], wmed["libgomp"], med["update"], wmed["update"], med["invalidate"],
               wmed["invalidate"], r_u, r_i, target))
    print("\n(speed as a fraction of libgomp's: libgomp's time / komp's; 1.00x is libgomp's speed)\n")
    print("### Where komp's time goes (KNIT_STATS, one run, node 0's line)\n")
    print("| program | protocol | the region's counters |")
    print("|---|---|---|")
    seen = set()
    for name, p, line in stats:
        if (name, p) in seen:
            continue
        seen.add((name, p))
        print("| %s | %s | %s |" % (name, p, line))


if __name__ == "__main__":
    main()
