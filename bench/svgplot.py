"""svgplot: a small SVG line-plot writer (Python standard library only).

    from svgplot import Series, line_plot
    line_plot("lat.svg", "ping-pong latency", "message size (bytes)",
              "latency (us)", [Series("knit", [(8, 0.3), (64, 0.35)])],
              xlog=True, ylog=True, vlines=[(4096, "eager max")])

X values on a log axis are labelled as byte sizes (1, 16, 256, 4K, 1M);
points with x <= 0 or y <= 0 are left out of log axes.
"""

import math
from xml.sax.saxutils import escape

PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
           "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


class Series:
    def __init__(self, name, points, color=None, dash=None, width=2.0,
                 markers=True):
        self.name = name
        self.points = sorted(points)
        self.color = color
        self.dash = dash          # e.g. "6,4" for a dashed line
        self.width = width
        self.markers = markers


def size_label(v):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= div and v % div == 0:
            return "%d%s" % (v // div, unit)
    return "%g" % v


def num_label(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        e = int(math.floor(math.log10(abs(v))))
        m = v / 10 ** e
        return ("%g" % m if m != 1 else "") + ("e%d" % e if m != 1 else "1e%d" % e)
    return "%g" % v


class Axis:
    def __init__(self, lo, hi, log, sizes=False):
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        if hi <= lo:
            hi = lo + 1
        self.lo, self.hi, self.log, self.sizes = lo, hi, log, sizes

    def frac(self, v):
        x = math.log10(v) if self.log else v
        return (x - self.lo) / (self.hi - self.lo)

    def ticks(self):
        """(value, label, major) tuples inside the axis range."""
        out = []
        if self.log and self.sizes:
            lo2 = math.floor(self.lo / math.log10(2))
            hi2 = math.ceil(self.hi / math.log10(2))
            span = hi2 - lo2
            step = 1 if span <= 12 else 2 if span <= 24 else 4
            for e in range(int(lo2), int(hi2) + 1):
                v = 2 ** e
                if self.frac(v) < -1e-9 or self.frac(v) > 1 + 1e-9:
                    continue
                major = e % step == 0
                out.append((v, size_label(v) if major else "", major))
        elif self.log:
            for e in range(int(math.floor(self.lo)), int(math.ceil(self.hi)) + 1):
                for m in (1, 2, 5):
                    v = m * 10.0 ** e
                    if -1e-9 <= self.frac(v) <= 1 + 1e-9:
                        label = num_label(v) if (m == 1 or self.hi - self.lo < 2.5) else ""
                        out.append((v, label, m == 1))
        else:
            span = self.hi - self.lo
            step = 10 ** math.floor(math.log10(span / 5)) if span > 0 else 1
            for mult in (1, 2, 5, 10):
                if span / (step * mult) <= 8:
                    step *= mult
                    break
            v = math.ceil(self.lo / step) * step
            while v <= self.hi + 1e-9:
                out.append((v, num_label(round(v, 10)), True))
                v += step
        return out


def _range(vals, log):
    vals = [v for v in vals if (v > 0 or not log)]
    if not vals:
        return (1, 10) if log else (0, 1)
    lo, hi = min(vals), max(vals)
    if log:
        # pad to whole decades' neighbourhoods so lines do not touch the frame
        return lo / 1.3, hi * 1.3
    pad = (hi - lo) * 0.05 or abs(hi) * 0.1 or 1
    return min(0, lo - pad) if lo >= 0 else lo - pad, hi + pad


def line_plot(path, title, xlabel, ylabel, series, xlog=True, ylog=True,
              vlines=(), width=860, height=520, note=None):
    ml, mr, mt, mb = 78, 190, 46, 62
    pw, ph = width - ml - mr, height - mt - mb
    pts = [(x, y) for s in series for (x, y) in s.points
           if (x > 0 or not xlog) and (y > 0 or not ylog)]
    xs = [p[0] for p in pts] + [v for v, _ in vlines]
    xa = Axis(*_range(xs, xlog), log=xlog, sizes=True)
    ya = Axis(*_range([p[1] for p in pts], ylog), log=ylog)

    def X(v):
        return ml + xa.frac(v) * pw

    def Y(v):
        return mt + (1 - ya.frac(v)) * ph

    o = []
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" '
             'font-size="12">' % (width, height, width, height))
    o.append('<rect width="100%" height="100%" fill="white"/>')
    o.append('<text x="%g" y="26" font-size="16" font-weight="bold">%s</text>'
             % (ml, escape(title)))
    # grid and ticks
    for v, label, major in xa.ticks():
        x = X(v)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>'
                 % (x, mt, x, mt + ph, "#dddddd" if major else "#f0f0f0"))
        if label:
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                     % (x, mt + ph + 18, escape(label)))
    for v, label, major in ya.ticks():
        y = Y(v)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>'
                 % (ml, y, ml + pw, y, "#dddddd" if major else "#f0f0f0"))
        if label:
            o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                     % (ml - 6, y + 4, escape(label)))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>'
             % (ml, mt, pw, ph))
    o.append('<text x="%g" y="%d" text-anchor="middle">%s</text>'
             % (ml + pw / 2, height - 18, escape(xlabel)))
    o.append('<text transform="translate(18,%g) rotate(-90)" text-anchor="middle">%s</text>'
             % (mt + ph / 2, escape(ylabel)))
    # vertical markers (protocol thresholds)
    for i, (v, label) in enumerate(vlines):
        if v <= 0 and xlog:
            continue
        x = X(v)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" '
                 'stroke-dasharray="3,3"/>' % (x, mt, x, mt + ph))
        o.append('<text x="%.1f" y="%d" font-size="10" fill="#555" '
                 'transform="rotate(-90 %.1f %d)" text-anchor="end">%s</text>'
                 % (x - 3, mt + 4 + 0 * i, x - 3, mt + 4, escape(label)))
    # series
    o.append('<g clip-path="url(#plot)">')
    o.append('<clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>'
             % (ml, mt, pw, ph))
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        p = [(X(x), Y(y)) for x, y in s.points
             if (x > 0 or not xlog) and (y > 0 or not ylog)]
        if not p:
            continue
        dash = ' stroke-dasharray="%s"' % s.dash if s.dash else ""
        o.append('<polyline fill="none" stroke="%s" stroke-width="%g"%s points="%s"/>'
                 % (color, s.width, dash, " ".join("%.1f,%.1f" % q for q in p)))
        if s.markers:
            for q in p:
                o.append('<circle cx="%.1f" cy="%.1f" r="2.6" fill="%s"/>'
                         % (q[0], q[1], color))
    o.append('</g>')
    # legend
    lx, ly = ml + pw + 16, mt + 8
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        y = ly + i * 20
        dash = ' stroke-dasharray="%s"' % s.dash if s.dash else ""
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%g"%s/>'
                 % (lx, y, lx + 26, y, color, s.width, dash))
        o.append('<text x="%d" y="%d">%s</text>' % (lx + 32, y + 4, escape(s.name)))
    if note:
        o.append('<text x="%d" y="%d" font-size="10" fill="#666">%s</text>'
                 % (ml, height - 3, escape(note)))
    o.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
