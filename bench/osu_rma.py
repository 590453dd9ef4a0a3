#!/usr/bin/env python3
"""MPI one-sided as the OSU micro-benchmarks measure it, side by side:
bench/osu_rma.c built with knit's knitcc, Open MPI's and MPICH's mpicc (the
same source and flags), run alternately (knit, Open MPI, MPICH, knit, ...)
--reps times with 2 ranks, on one node and on two emulated nodes; each cell
is the median of the runs (each run's value is itself a median of 5).

  knit       knitrun's defaults (agents and all): -n 2 [--nodes 2]
  Open MPI   mpirun -n 2; two nodes: --mca btl self,tcp over lo and
             --mca osc pt2pt (its osc/sm and osc/rdma reach the peer's memory
             directly whenever both ranks share a host, which two real nodes
             would not let them do)
  MPICH      mpirun -n 2; two nodes: MPIR_CVAR_NOLOCAL=1 with UCX_TLS=tcp,self
             on lo (the network path; UCX would otherwise pick its shared
             memory transports)

    python3 bench/osu_rma.py [--build build] [--reps 5] [--quick]

Prints Markdown tables: latency at 8 B (us) and bandwidth at 1 MiB (MB/s)
per operation x synchronization x window flavor, MPI_Put of a vector type
(1024 x 8 B), and the ratio to the faster of the other two MPIs.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_base_warn_component_unused": "0"}
CFLAGS = ["-std=gnu11", "-O2", "-g", "-D_GNU_SOURCE"]
IMPLS = ["knit", "Open MPI", "MPICH"]


def build(tmp, knitcc, log):
    progs = {}
    src = os.path.join(HERE, "osu_rma.c")
    for name, cc in (("knit", knitcc), ("Open MPI", "mpicc.openmpi"), ("MPICH", "mpicc.mpich")):
        out = os.path.join(tmp, "osu_rma_" + name.replace(" ", ""))
        try:
            subprocess.run([cc] + CFLAGS + ["-o", out, src], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
            progs[name] = out
        except (OSError, subprocess.CalledProcessError) as e:
            log("no %s column: %s" % (name, e))
    return progs


def parse(out):
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 6 and not line.startswith("#"):
            try:
                res[tuple(f[:5])] = float(f[5])
            except ValueError:
                pass
    return res


def run(cmd, env, log, limit=900):
    e = dict(os.environ)
    e.update(env)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=limit)
    except subprocess.TimeoutExpired:
        log("%s took over %d s" % (" ".join(cmd[:4]), limit))
        return {}
    if r.returncode != 0:
        log("%s failed: %s" % (" ".join(cmd[:6]), r.stderr[-400:]))
    return parse(r.stdout)


def command(impl, prog, nodes, knitrun, args):
    if impl == "knit":
        return [knitrun, "-n", "2", "--nodes", str(nodes), prog] + args, {}
    if impl == "Open MPI":
        extra = ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                 "--mca", "osc", "pt2pt"] if nodes > 1 else []
        return ["mpirun.openmpi", "-n", "2", "--oversubscribe"] + extra + [prog] + args, OMPI_ENV
    env = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"} if nodes > 1 else {}
    return ["mpirun.mpich", "-n", "2", prog] + args, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="fewer combinations (allocate windows only)")
    a = ap.parse_args()
    bdir = os.path.join(ROOT, a.build)
    knitrun, knitcc = os.path.join(bdir, "bin", "knitrun"), os.path.join(bdir, "bin", "knitcc")
    log = lambda m: print("# " + m, file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="knit-osu-rma-")
    progs = build(tmp, knitcc, log)
    args = ["--reps", "5", "--time-ms", "20"] + (["--wins", "allocate"] if a.quick else [])
    results = {}
    for lname, nodes in (("1 node", 1), ("2 nodes", 2)):
        runs = {i: [] for i in progs}
        for rep in range(a.reps):
            for impl, prog in progs.items():
                log("%s: %s, run %d of %d" % (lname, impl, rep + 1, a.reps))
                cmd, env = command(impl, prog, nodes, knitrun, args)
                runs[impl].append(run(cmd, env, log))
        keys = sorted({k for rs in runs.values() for r in rs for k in r})
        med = {}
        for impl in progs:
            for k in keys:
                v = [r[k] for r in runs[impl] if k in r]
                if v:
                    med[(impl, k)] = statistics.median(v)
        results[lname] = (med, keys)
    impls = [i for i in IMPLS if i in progs]
    print("### MPI one-sided, OSU method, 2 ranks (`python3 bench/osu_rma.py --reps %d%s`)\n"
          % (a.reps, " --quick" if a.quick else ""))
    for lname, (med, keys) in results.items():
        print("**%s** (medians of %d runs; latency and vector put in us, lower is better; bandwidth in MB/s, "
              "higher is better)\n" % (lname, a.reps))
        print("| test | op | sync | window | bytes | " + " | ".join(impls) + " | knit vs faster other |")
        print("|---|---|---|---|---|" + "---|" * (len(impls) + 1))
        for k in keys:
            vals = [med.get((i, k)) for i in impls]
            others = [med[(i, k)] for i in impls if i != "knit" and (i, k) in med]
            kv = med.get(("knit", k))
            ratio = "-"
            if kv and others:
                if k[0] == "bw":
                    ratio = "%.2fx" % (kv / max(others))
                else:
                    ratio = "%.2fx" % (min(others) / kv)  # >1: knit faster
            f = lambda v: ("%.0f" % v if k[0] == "bw" else "%.2f" % v) if v is not None else "-"
            print("| %s |" % " | ".join(k) + " %s | %s |" % (" | ".join(f(v) for v in vals), ratio))
        print()
    print("Ratios above 1 mean knit is faster (for latency: the faster other's time / knit's).")


if __name__ == "__main__":
    main()
