#!/usr/bin/env python3
"""Strided one-sided put (or get) side by side: knit's four methods under
knitrun's defaults, Open MPI and MPICH (bench/rma.c built with their
mpicc: MPI_Put of an MPI_Type_create_hvector under MPI_Win_fence), and the
limits (within a node: bench/cma_limit, one process_vm_writev per 1024
blocks with both sides' iovecs; between nodes: knit's direct put of the
same bytes as one contiguous block, one fi_write).  Rows alternate, REPS
times; each cell is the median of the runs' medians.

    python3 bench/rma.py [--build build] [--reps 5] [--get]
                         [--sizes 8,64,512,4096,65536] [--counts 1,16,256,1024,4096]
                         [--publish]        (writes docs/perf/rma_*.svg too)

Prints Markdown tables (us per transfer and fence) with the ratios the
issue asks about, and a heat map per layout of which method was fastest.
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
METHODS = ["direct", "agent", "pack", "auto"]
COLORS = {"direct": "#1f77b4", "agent": "#2ca02c", "pack": "#ff7f0e"}


def parse(out):
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 5 and not line.startswith("#"):
            try:
                res[(int(f[0]), int(f[1]))] = float(f[2])
            except ValueError:
                pass
    return res


def run(cmd, env=None, limit=300):
    e = dict(os.environ)
    e.update(env or {})
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=limit)
    except subprocess.TimeoutExpired:
        print("warning: %s took over %d s" % (" ".join(cmd[:4]), limit), file=sys.stderr)
        return {}
    if r.returncode != 0:
        print("warning: %s failed: %s" % (" ".join(cmd[:6]), r.stderr[-300:]), file=sys.stderr)
    return parse(r.stdout)


def build_mpi(tmp, log):
    progs = {}
    src = [os.path.join(HERE, f) for f in ("rma.c", "common.c", "bp_mpi.c")]
    for name, cc in (("openmpi", "mpicc.openmpi"), ("mpich", "mpicc.mpich")):
        out = os.path.join(tmp, "rma_" + name)
        try:
            subprocess.run([cc] + CFLAGS + ['-DBP_IMPL_NAME="%s"' % name, "-o", out] + src, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            progs[name] = out
        except (OSError, subprocess.CalledProcessError) as e:
            log("no %s row: %s" % (name, e))
    return progs


def heatmap(path, title, sizes, counts, cell):
    """cell(bsize, nblk) -> (winner, text): one rectangle per shape."""
    cw, ch, left, top = 96, 34, 70, 46
    w, h = left + cw * len(counts) + 20, top + ch * len(sizes) + 60
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="11">' % (w, h), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="18" font-size="13">%s</text>' % (left, title)]
    for j, n in enumerate(counts):
        s.append('<text x="%d" y="%d" text-anchor="middle">%d blocks</text>' % (left + cw * j + cw // 2, top - 6, n))
    for i, b in enumerate(sizes):
        s.append('<text x="%d" y="%d" text-anchor="end">%s</text>' %
                 (left - 6, top + ch * i + ch // 2 + 4, "%d B" % b if b < 1024 else "%d KiB" % (b // 1024)))
        for j, n in enumerate(counts):
            win, text = cell(b, n)
            s.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="white"/>' %
                     (left + cw * j, top + ch * i, cw, ch, COLORS.get(win, "#dddddd")))
            s.append('<text x="%d" y="%d" text-anchor="middle" fill="white">%s</text>' %
                     (left + cw * j + cw // 2, top + ch * i + ch // 2 + 4, text))
    y = top + ch * len(sizes) + 20
    for k, (m, c) in enumerate(COLORS.items()):
        s.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s fastest</text>' %
                 (left + 110 * k, y, c, left + 110 * k + 16, y + 10, m))
    s.append('<text x="%d" y="%d">cell: auto / the fastest method (1.00 = auto matched it)</text>' % (left, y + 30))
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--get", action="store_true")
    ap.add_argument("--sizes", default="8,64,512,4096,65536")
    ap.add_argument("--counts", default="1,16,256,1024,4096")
    ap.add_argument("--publish", action="store_true")
    a = ap.parse_args()
    build = os.path.join(ROOT, a.build)
    knitrun, prog = os.path.join(build, "bin", "knitrun"), os.path.join(build, "bench", "rma")
    sizes = [int(x) for x in a.sizes.split(",")]
    counts = [int(x) for x in a.counts.split(",")]
    shapes = [(b, n) for b in sizes for n in counts if 2 * b * n <= (64 << 20)]
    totals = sorted({b * n for b, n in shapes})
    common = ["--sizes", a.sizes, "--counts", a.counts, "--reps", "5", "--time-ms", "20"] + (["--get"] if a.get else [])
    log = lambda m: print("# " + m, file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="knit-rma-")
    mpi = build_mpi(tmp, log)
    layouts = [("1 node", 1), ("2 nodes", 2)]
    results = {}
    for lname, nodes in layouts:
        rows = {}
        for m in METHODS:
            rows[m] = ([knitrun, "-n", "2", "--nodes", str(nodes), prog, "--method", m] + common, {})
        if "openmpi" in mpi:
            # osc pt2pt: osc sm / rdma would reach the peer's memory directly on one host
            extra = ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                     "--mca", "osc", "pt2pt"] if nodes > 1 else []
            rows["Open MPI"] = (["mpirun.openmpi", "-n", "2", "--oversubscribe"] + extra + [mpi["openmpi"]] + common,
                                OMPI_ENV)
        if "mpich" in mpi:
            env = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"} if nodes > 1 else {}
            rows["MPICH"] = (["mpirun.mpich", "-n", "2", mpi["mpich"]] + common, env)
        if nodes == 1 and not a.get:
            rows["limit"] = ([os.path.join(build, "bench", "cma_limit"), "--sizes", a.sizes, "--counts", a.counts], {})
        elif nodes > 1:
            rows["limit"] = ([knitrun, "-n", "2", "--nodes", "2", prog, "--method", "direct", "--sizes",
                              ",".join(map(str, totals)), "--counts", "1", "--reps", "5", "--time-ms", "20"]
                             + (["--get"] if a.get else []), {})
        runs = {r: [] for r in rows}
        for rep in range(a.reps):
            for r, (cmd, env) in rows.items():
                log("%s: %s, run %d of %d" % (lname, r, rep + 1, a.reps))
                runs[r].append(run(cmd, env))
        med = {}
        for r in rows:
            for shape in shapes:
                key = (shape[0] * shape[1], 1) if r == "limit" and nodes > 1 else shape
                v = [x[key] for x in runs[r] if key in x]
                if v:
                    med[(r, shape)] = statistics.median(v)
        results[lname] = (med, list(rows))
    op = "get" if a.get else "put"
    cmd = "python3 bench/rma.py --reps %d%s" % (a.reps, " --get" if a.get else "")
    print("### Strided %s, 2 ranks (`%s`)\n" % (op, cmd))
    for lname, (med, rows) in results.items():
        print("**%s** (us per transfer and fence; median of %d runs, each the median of 5)\n" % (lname, a.reps))
        print("| block | blocks | " + " | ".join(rows) + " | auto / best method | auto / direct | best MPI / auto |")
        print("|---|---|" + "---|" * (len(rows) + 3))
        for b, n in shapes:
            vals = [med.get((r, (b, n))) for r in rows]
            best = min((med[(m, (b, n))] for m in METHODS[:3] if (m, (b, n)) in med), default=None)
            auto = med.get(("auto", (b, n)))
            direct = med.get(("direct", (b, n)))
            mpis = [med[(r, (b, n))] for r in ("Open MPI", "MPICH") if (r, (b, n)) in med]
            f = lambda v: "%.2f" % v if v is not None else "-"
            print("| %d | %d | %s | %s | %s | %s |" % (
                b, n, " | ".join(f(v) for v in vals), f(auto / best if auto and best else None),
                f(auto / direct if auto and direct else None), f(min(mpis) / auto if mpis and auto else None)))
        print()
        if a.publish:
            def cell(b, n, med=med):
                have = {m: med[(m, (b, n))] for m in METHODS[:3] if (m, (b, n)) in med}
                if not have or ("auto", (b, n)) not in med:
                    return None, "-"
                win = min(have, key=have.get)
                return win, "%s %.2f" % (win, med[("auto", (b, n))] / have[win])
            path = os.path.join(ROOT, "docs", "perf", "rma_%s_%s.svg" % (op, lname.replace(" ", "")))
            heatmap(path, "strided %s, %s: the fastest method per shape" % (op, lname),
                    [s for s in sizes if any((s, n) in shapes for n in counts)], counts, cell)
            log("wrote " + path)


if __name__ == "__main__":
    main()
