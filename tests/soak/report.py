#!/usr/bin/env python3
"""The soak's verdict and curves (tests/soak/soak.sh writes the samples).

    report.py OUTDIR JOB_STATUS SECONDS

Checks, after the warm-up (the first max(60 s, 10 %) of the run):
  - the job ended with status 0 and said "ok soak"; nothing on stderr but
    the faulting module's own messages;
  - every process that lived through the whole run: resident memory grew
    by at most max(2 MiB, 5 %) from the start of the window to its end,
    and its open descriptors ended at the level they started at (median
    of three samples), never more than 1 above it (a rank reading a
    module file it loads) or 3 (a daemon starting or ending a module
    process);
  - the job's /dev/shm use did not change;
  - module processes alive at any sample: at most one per module loaded
    and daemon (2 long-lived modules in every agent and the switch, plus
    the faulting one).
Writes rss.svg, fds.svg, shm.svg and summary.md into OUTDIR; exits 1 when
a check fails.  Standard library only.
"""
import csv
import os
import sys
from collections import defaultdict

out, status, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
warm = max(60.0, 0.1 * seconds)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL soak: " + msg)


# ---------------------------------------------------------------- job
job_out = open(os.path.join(out, "job.out")).read()
if status != 0 or "ok soak" not in job_out:
    fail("the job ended with status %d: %s" % (status, job_out.strip().splitlines()[-1:] or "no output"))
noise = [l for l in open(os.path.join(out, "job.err")).read().splitlines()
         if l.strip() and "module 'fault' disabled" not in l]
if noise:
    fail("stderr says more than the module faults: %s" % " | ".join(noise[:3]))

# ---------------------------------------------------------------- samples
series = defaultdict(list)          # pid -> [(t, rss_kb, fds)]
comm = {}
per_t_hosts = defaultdict(int)
with open(os.path.join(out, "procs.csv")) as f:
    for r in csv.DictReader(f):
        t, pid = float(r["t"]), int(r["pid"])
        series[pid].append((t, int(r["rss_kb"]), int(r["fds"])))
        comm[pid] = r["comm"]
        if r["comm"] == "knit-modhost":
            per_t_hosts[t] += 1
shm = []
with open(os.path.join(out, "shm.csv")) as f:
    for r in csv.DictReader(f):
        shm.append((float(r["t"]), int(r["shm_kb"]), int(r["files"])))

end = max((s[-1][0] for s in series.values()), default=0)
if end < seconds * 0.9:
    fail("samples cover %.0f s of a %.0f s run" % (end, seconds))
daemons = ("knit-agent", "knit-switch")
rows = []
for pid, s in sorted(series.items(), key=lambda kv: (comm[kv[0]], kv[0])):
    post = [x for x in s if x[0] >= warm]
    if len(post) < 4 or s[0][0] > warm or s[-1][0] < end - 30:
        continue  # not alive through the whole window (a faulting module's process)
    first = sum(x[1] for x in post[:3]) / 3
    last = sum(x[1] for x in post[-3:]) / 3
    grow = last - first
    fds = [x[2] for x in post]
    # a leak shows as a level that rises and stays: the median of the first
    # three samples against that of the last three.  A sample may catch a
    # descriptor that lives a moment (a rank reading a module file it
    # loads; a daemon starting or ending a module process): at most slack
    # more than that level, never more.
    fd0, fd1 = sorted(fds[:3])[1], sorted(fds[-3:])[1]
    slack = 3 if comm[pid] in daemons else 1
    rows.append((comm[pid], pid, post[0][1], post[-1][1], grow, min(fds), max(fds)))
    if grow > max(2048, 0.05 * first):
        fail("%s (pid %d): resident memory grew by %.0f KiB (%.0f -> %.0f) after the warm-up"
             % (comm[pid], pid, grow, first, last))
    if fd1 != fd0:
        fail("%s (pid %d): open descriptors went from %d to %d" % (comm[pid], pid, fd0, fd1))
    elif max(fds) - fd0 > slack:
        fail("%s (pid %d): %d open descriptors at once, %d more than its level of %d"
             % (comm[pid], pid, max(fds), max(fds) - fd0, fd0))
post_shm = [x for x in shm if x[0] >= warm]
if not post_shm:
    fail("no /dev/shm samples after the warm-up")
elif max(x[1] for x in post_shm) != min(x[1] for x in post_shm):
    fail("/dev/shm use changed after the warm-up: %d .. %d KiB"
         % (min(x[1] for x in post_shm), max(x[1] for x in post_shm)))
# every daemon (agents and the switch) has an instance of every module:
# the two the job keeps loaded, and the faulting one while it is loaded
daemons_n = sum(1 for p in comm if comm[p] in daemons)
most_hosts = max(per_t_hosts.values(), default=0)
if most_hosts > 3 * daemons_n:
    fail("%d module processes alive at once (at most %d expected)" % (most_hosts, 3 * daemons_n))


# ---------------------------------------------------------------- curves
COLORS = {"soak": "#1f77b4", "knit-agent": "#d62728", "knit-switch": "#9467bd",
          "knit-modhost": "#2ca02c", "knitrun": "#7f7f7f"}


def svg(path, title, ylabel, lines, ymax=None):
    """lines: [(label, color, [(t, y)])]"""
    W, H, L, R, T, B = 760, 320, 70, 170, 30, 40
    xs = [t for _, _, pts in lines for t, _ in pts] or [0, 1]
    ys = [y for _, _, pts in lines for _, y in pts] or [0, 1]
    x1 = max(xs) or 1
    y1 = ymax or (max(ys) * 1.1 or 1)
    sx = lambda t: L + (W - L - R) * t / x1
    sy = lambda y: H - B - (H - T - B) * y / y1
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="18" font-size="13">%s</text>' % (L, title)]
    for i in range(5):
        y = y1 * i / 4
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, sy(y), sy(y)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (L - 5, sy(y) + 4, y))
    for i in range(6):
        t = x1 * i / 5
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f s</text>' % (sx(t), H - B + 15, t))
    o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999" stroke-dasharray="4"/>'
             % (sx(warm), sx(warm), T, H - B))
    o.append('<text x="%.1f" y="%d" fill="#999">warm-up</text>' % (sx(warm) + 3, T + 10))
    o.append('<text x="12" y="%d" transform="rotate(-90 12 %d)">%s</text>' % ((H) / 2, (H) / 2, ylabel))
    seen = []
    for label, color, pts in lines:
        if len(pts) > 1:
            o.append('<polyline fill="none" stroke="%s" stroke-width="1.2" points="%s"/>'
                     % (color, " ".join("%.1f,%.1f" % (sx(t), sy(y)) for t, y in pts)))
        if label not in seen:
            seen.append(label)
    for i, label in enumerate(seen):
        color = next(c for l, c, _ in lines if l == label)
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>'
                 % (W - R + 10, W - R + 30, T + 15 * i + 5, T + 15 * i + 5, color))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 35, T + 15 * i + 9, label))
    o.append("</svg>")
    open(path, "w").write("\n".join(o) + "\n")


def label(pid):
    c = comm[pid]
    return {"soak": "ranks", "knit-modhost": "module processes"}.get(c, c)


svg(os.path.join(out, "rss.svg"), "Resident memory of every process of the soak job", "MiB",
    [(label(p), COLORS.get(comm[p], "#000"), [(t, r / 1024) for t, r, _ in s]) for p, s in series.items()])
svg(os.path.join(out, "fds.svg"), "Open file descriptors of every process", "descriptors",
    [(label(p), COLORS.get(comm[p], "#000"), [(t, d) for t, _, d in s]) for p, s in series.items()])
svg(os.path.join(out, "shm.svg"), "The job's /dev/shm files", "MiB",
    [("allocated", "#1f77b4", [(t, kb / 1024) for t, kb, _ in shm])])

with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("| process | pid | RSS after warm-up (KiB) | at the end | growth (KiB) | fds |\n")
    f.write("|---|---|---|---|---|---|\n")
    for c, pid, a, b, g, lo, hi in rows:
        f.write("| %s | %d | %d | %d | %+.0f | %s |\n" % (c, pid, a, b, g, lo if lo == hi else "%d-%d" % (lo, hi)))
    if post_shm:
        f.write("\n/dev/shm: %d KiB in %d files throughout; module processes alive at once: at most %d.\n"
                % (post_shm[-1][1], post_shm[-1][2], most_hosts))
print("soak: %d processes checked over %.0f s (warm-up %.0f s): %s" %
      (len(rows), end, warm, "all flat" if not failures else "%d failure(s)" % len(failures)))
print("soak: curves and table in %s/{rss,fds,shm}.svg, summary.md" % out)
sys.exit(1 if failures else 0)
