#!/usr/bin/env python3
"""The Fortran 3-D stencil (bench/stencil3d.f90) or the CG kernel
(bench/cg3d.f90, --prog cg3d) side by side: the same source built with knit's knitfort, Open MPI's mpif90.openmpi and MPICH's
mpif90.mpich (the same flags), run alternately (knit, Open MPI, MPICH,
knit, ...) --reps times at each rank count; each cell is the median of the
runs' time per iteration (the slowest rank's loop time / iterations, as the
program prints it).  Every run checks its result against a serial run; a
run that fails or prints no "ok" is reported and left out.

  knit       knitrun -n P (its defaults)
  Open MPI   mpirun.openmpi -n P --oversubscribe
  MPICH      mpiexec.mpich -n P

    python3 bench/fortran.py [--prog stencil3d|cg3d] [--build build] [--reps 5] [--n 64] [--iters 100]
                             [--ranks 2,4]

Prints a Markdown table, with the ratio of knit to the faster of the others.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_base_warn_component_unused": "0"}
# The same flags for every MPI.  Branches kept within 32-byte blocks and
# loops aligned: this Intel CPU's jump-condition erratum mitigation makes a
# loop that straddles a 32-byte boundary 10-20 % slower, and where each
# binary's loops fall depends on everything linked before them; without
# this the same cg3d loop measured 148 us in knit's build and 129 in
# MPICH's, single rank, no communication at all (docs/perf/fortran.md).
FFLAGS = ["-O2", "-g", "-Wa,-mbranches-within-32B-boundaries", "-falign-loops=64"]
IMPLS = ["knit", "Open MPI", "MPICH"]
TIME = re.compile(r"time per iteration\s+([0-9.]+) us.* ok\s*$", re.M)


WHAT = {
    "stencil3d": ("Fortran 3-D stencil", "halo exchange of six faces (Irecv/Isend/Waitall) + 7-point sweep + "
                  "Allreduce of the residual"),
    "cg3d": ("Fortran CG kernel (NAS CG's communication)", "conjugate gradient on the 3-D Poisson problem: "
             "a matrix-vector product with two plane exchanges (Sendrecv) + two dot products (Allreduce)"),
}


def build(tmp, prog, knitfort, log):
    progs = {}
    src = os.path.join(HERE, prog + ".f90")
    for name, fc in (("knit", knitfort), ("Open MPI", "mpif90.openmpi"), ("MPICH", "mpif90.mpich")):
        out = os.path.join(tmp, prog + "_" + name.replace(" ", ""))
        mod = out + ".mod.d"
        os.makedirs(mod, exist_ok=True)
        try:
            subprocess.run([fc] + FFLAGS + ["-J", mod, "-o", out, src], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
            progs[name] = out
        except (OSError, subprocess.CalledProcessError) as e:
            log("no %s column: %s" % (name, getattr(e, "stderr", b"") or e))
    return progs


def command(impl, prog, np, knitrun, args):
    if impl == "knit":
        return [knitrun, "-n", str(np), prog] + args, {}
    if impl == "Open MPI":
        return ["mpirun.openmpi", "-n", str(np), "--oversubscribe", prog] + args, OMPI_ENV
    return ["mpiexec.mpich", "-n", str(np), prog] + args, {}


def run(cmd, env, log, limit=600):
    e = dict(os.environ)
    e.update(env)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=limit)
    except subprocess.TimeoutExpired:
        log("%s took over %d s" % (" ".join(cmd[:4]), limit))
        return None
    m = TIME.search(r.stdout)
    if r.returncode != 0 or not m:
        log("%s failed (exit %d): %s %s" % (" ".join(cmd[:4]), r.returncode, r.stdout[-300:], r.stderr[-300:]))
        return None
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", default="stencil3d", choices=sorted(WHAT))
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=64, help="grid points per dimension")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--ranks", default="2,4")
    a = ap.parse_args()
    if a.reps < 1:
        sys.exit("fortran.py: --reps must be at least 1")
    ranks = [int(x) for x in a.ranks.split(",")]
    bdir = os.path.join(ROOT, a.build)
    knitrun, knitfort = os.path.join(bdir, "bin", "knitrun"), os.path.join(bdir, "bin", "knitfort")
    log = lambda m: print("# " + m, file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="knit-fortran-")
    progs = build(tmp, a.prog, knitfort, log)
    if "knit" not in progs:
        sys.exit("fortran.py: %s does not build with knitfort" % a.prog)
    args = [str(a.n), str(a.iters)]
    med = {}
    for np in ranks:
        runs = {i: [] for i in progs}
        for rep in range(a.reps):
            for impl, prog in progs.items():
                log("%d ranks: %s, run %d of %d" % (np, impl, rep + 1, a.reps))
                cmd, env = command(impl, prog, np, knitrun, args)
                v = run(cmd, env, log)
                if v is not None:
                    runs[impl].append(v)
        for impl in progs:
            if runs[impl]:
                med[(impl, np)] = (statistics.median(runs[impl]), len(runs[impl]))
    impls = [i for i in IMPLS if i in progs]
    title, what = WHAT[a.prog]
    print("### %s, %d^3 grid, %d iterations (`python3 bench/fortran.py --prog %s --reps %d --n %d "
          "--iters %d`)\n" % (title, a.n, a.iters, a.prog, a.reps, a.n, a.iters))
    print("Time per iteration in us (median of %d runs; lower is better), %s.\n" % (a.reps, what))
    print("| ranks | " + " | ".join(impls) + " | knit / faster of the others |")
    print("|---|" + "---|" * (len(impls) + 1))
    for np in ranks:
        cells, others = [], []
        for impl in impls:
            if (impl, np) in med:
                v, k = med[(impl, np)]
                cells.append("%.1f" % v + ("" if k == a.reps else " (%d runs)" % k))
                if impl != "knit":
                    others.append(v)
            else:
                cells.append("failed")
        ratio = "%.2f" % (med[("knit", np)][0] / min(others)) if ("knit", np) in med and others else "-"
        print("| %d | %s | %s |" % (np, " | ".join(cells), ratio))


if __name__ == "__main__":
    main()
