#!/usr/bin/env python3
"""plot_bench.py: draws themis-bench CSV results as one SVG (standard library only).

    plot_bench.py [--metric busbw|algbw|time|speedup] [--title TEXT] -o OUT.svg IN.csv...
    plot_bench.py --table [--stat avg|median|min] IN.csv...
                                        (Markdown table of times and speedups vs tuned)

One panel per (label, collective) found in the CSV files (the label is themis-bench's
--label, e.g. "np4 dims=2x2"), one line per implementation, message size on a log2 x
axis. busbw/algbw are GB/s (1e9 B/s) as themis-bench reports them; time is the
average in microseconds (log y axis); speedup is t_tuned / t (1 = as fast as tuned).
"""
import argparse
import csv
import math
import sys
from xml.sax.saxutils import escape

COLORS = {
    "themis": "#d62728",
    "themis_baseline": "#ff7f0e",
    "tuned": "#1f77b4",
    "han": "#2ca02c",
}
EXTRA_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
DASHES = {"themis_baseline": "6,3", "han": "2,3"}

METRICS = {
    "busbw": ("busbw_GBps", "bus bandwidth (GB/s)", False),
    "algbw": ("algbw_GBps", "algorithm bandwidth (GB/s)", False),
    "time": ("avg_us", "average time (us)", True),
    "speedup": ("speedup_vs_tuned", "speedup vs tuned (t_tuned / t)", False),
}


def human_bytes(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return "%d%s" % (n // scale, unit)
        if n >= scale:
            return "%.3g%s" % (n / scale, unit)
    return "%d" % n


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                rows.append(row)
    if not rows:
        sys.exit("plot_bench.py: no rows in %s" % ", ".join(paths))
    return rows


def nice_ticks(lo, hi, count=5, log=False):
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        return [10.0 ** e for e in range(a, b + 1)]
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


def fmt_tick(v):
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 0.01:
        return "%.0e" % v
    return ("%.2f" % v).rstrip("0").rstrip(".")


def panel(out, x0, y0, w, h, title, series, metric):
    column, ylabel, logy = METRICS[metric]
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts if not (logy and y <= 0)]
    if not xs or not ys:
        return
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])
    if lx1 == lx0:
        lx0, lx1 = lx0 - 1, lx1 + 1
    if logy:
        ylo, yhi = min(ys) / 1.3, max(ys) * 1.3
        yticks = nice_ticks(ylo, yhi, log=True)
        ylo, yhi = yticks[0], yticks[-1]
    else:
        ylo, yhi = 0.0, max(ys) * 1.1
        if metric == "speedup":
            ylo, yhi = min(0.0, min(ys)), max(1.2, max(ys) * 1.1)
        yticks = nice_ticks(ylo, yhi)
        yhi = max(yhi, yticks[-1])

    ml, mr, mt, mb = 62, 12, 26, 42  # margins inside the panel
    pw, ph = w - ml - mr, h - mt - mb

    def px(x):
        return x0 + ml + (math.log2(x) - lx0) / (lx1 - lx0) * pw

    def py(y):
        if logy:
            v = (math.log10(y) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo))
        else:
            v = (y - ylo) / (yhi - ylo)
        return y0 + mt + ph - v * ph

    out.append('<text x="%.1f" y="%.1f" class="ptitle">%s</text>'
               % (x0 + ml + pw / 2, y0 + 16, escape(title)))
    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="frame"/>'
               % (x0 + ml, y0 + mt, pw, ph))
    for t in yticks:
        if t < ylo or t > yhi:
            continue
        y = py(t)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>'
                   % (x0 + ml, y, x0 + ml + pw, y))
        out.append('<text x="%.1f" y="%.1f" class="ytick">%s</text>'
                   % (x0 + ml - 4, y + 4, fmt_tick(t)))
    if metric == "speedup" and ylo <= 1 <= yhi:
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="ref"/>'
                   % (x0 + ml, py(1), x0 + ml + pw, py(1)))
        if ylo <= 0.9:
            out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="ref90"/>'
                       % (x0 + ml, py(0.9), x0 + ml + pw, py(0.9)))
    step = max(1, len(xs) // 8)
    for i, x in enumerate(xs):
        X = px(x)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>'
                   % (X, y0 + mt, X, y0 + mt + ph))
        if i % step == 0 or i == len(xs) - 1:
            out.append('<text x="%.1f" y="%.1f" class="xtick">%s</text>'
                       % (X, y0 + mt + ph + 14, human_bytes(x)))
    out.append('<text x="%.1f" y="%.1f" class="axis">message size S (bytes)</text>'
               % (x0 + ml + pw / 2, y0 + h - 8))
    out.append('<text transform="translate(%.1f,%.1f) rotate(-90)" class="axis">%s</text>'
               % (x0 + 14, y0 + mt + ph / 2, escape(ylabel)))
    for name, pts in series.items():
        pts = sorted(p for p in pts if not (logy and p[1] <= 0))
        if not pts:
            continue
        color = COLORS.get(name, "#000")
        dash = DASHES.get(name)
        d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", px(x), py(y))
                     for i, (x, y) in enumerate(pts))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                   % (d, color, ' stroke-dasharray="%s"' % dash if dash else ""))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s %s: %.4g</title>'
                       '</circle>' % (px(x), py(y), color, escape(name), human_bytes(x), y))


def print_table(rows, stat=None):
    """One line per (label, collective, size): each implementation's time (`stat`, by
    default the statistic themis-bench used for its speedups) and, for the others,
    t_tuned / t computed from those times."""
    impls, keys, data = [], [], {}
    for r in rows:
        key = (r.get("label", ""), r["collective"], int(r["bytes"]))
        if key not in data:
            data[key] = {}
            keys.append(key)
        if r["impl"] not in impls:
            impls.append(r["impl"])
        data[key][r["impl"]] = r
    known = ["themis", "themis_baseline", "tuned", "han"]
    impls.sort(key=lambda i: known.index(i) if i in known else len(known))
    stat = stat or rows[0].get("stat", "avg")
    col = {"avg": "avg_us", "median": "median_us", "min": "min_us"}.get(stat, "avg_us")
    others = [i for i in impls if i != "tuned"]
    head = ["config", "collective", "bytes"] + ["%s %s us" % (i, stat) for i in impls]
    if "tuned" in impls:
        head += ["%s t_tuned/t" % i for i in others]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in keys:
        label, coll, nbytes = key
        cells = [label, coll, human_bytes(nbytes)]
        for i in impls:
            r = data[key].get(i)
            v = float(r[col]) if r else None
            cells.append("-" if v is None else "%.0f" % v if v >= 100 else "%.3g" % v)
        if "tuned" in impls:
            tuned = data[key].get("tuned")
            for i in others:
                r = data[key].get(i)
                ok = r and tuned and float(r[col]) > 0
                cells.append("%.2f" % (float(tuned[col]) / float(r[col])) if ok else "-")
        print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="themis-bench --csv files")
    ap.add_argument("-o", "--output", help="SVG file to write")
    ap.add_argument("--table", action="store_true",
                    help="print a Markdown table (time of each implementation, t_tuned/t) "
                         "instead of drawing")
    ap.add_argument("--metric", choices=sorted(METRICS), default="busbw")
    ap.add_argument("--stat", choices=["avg", "median", "min"], default=None,
                    help="--table: which time to show and compare (default: the CSV's stat)")
    ap.add_argument("--title", default=None)
    ap.add_argument("--columns", type=int, default=0, help="panels per row (default: auto)")
    args = ap.parse_args()

    rows = read_rows(args.csv)
    if args.table:
        print_table(rows, args.stat)
        return
    if not args.output:
        ap.error("-o/--output is required unless --table is given")
    column = METRICS[args.metric][0]
    groups = {}  # (label, collective) -> impl -> [(bytes, value)]
    order = []
    impls = []
    for r in rows:
        key = (r.get("label", ""), r["collective"])
        if key not in groups:
            groups[key] = {}
            order.append(key)
        impl = r["impl"]
        if impl not in impls:
            impls.append(impl)
        try:
            value = float(r[column])
        except (KeyError, ValueError):
            continue
        if args.metric == "speedup" and value <= 0:
            continue
        groups[key].setdefault(impl, []).append((int(r["bytes"]), value))
    known = ["themis", "themis_baseline", "tuned", "han"]
    impls.sort(key=lambda i: known.index(i) if i in known else len(known))
    for i, name in enumerate(i for i in impls if i not in COLORS):
        COLORS[name] = EXTRA_COLORS[i % len(EXTRA_COLORS)]

    n = len(order)
    cols = args.columns or (1 if n == 1 else 2 if n <= 4 else 3 if n <= 9 else 4)
    rows_n = (n + cols - 1) // cols
    pw, ph = 460, 300
    top, legend_h = 40, 30
    width, height = cols * pw, top + legend_h + rows_n * ph + 10
    ranks = sorted({r["ranks"] for r in rows})
    title = args.title or "themis-bench: %s vs message size (%s ranks)" % (
        METRICS[args.metric][1], ", ".join(ranks))

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif">'
           % (width, height, width, height),
           "<style>.ptitle{font-size:13px;font-weight:bold;text-anchor:middle}"
           ".title{font-size:16px;font-weight:bold;text-anchor:middle}"
           ".xtick{font-size:10px;text-anchor:middle}.ytick{font-size:10px;text-anchor:end}"
           ".axis{font-size:11px;text-anchor:middle}.legend{font-size:12px}"
           ".frame{fill:none;stroke:#444}.grid{stroke:#ddd;stroke-width:1}"
           ".ref{stroke:#444;stroke-width:1;stroke-dasharray:4,2}"
           ".ref90{stroke:#c00;stroke-width:1;stroke-dasharray:2,3}</style>",
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" class="title">%s</text>' % (width // 2, escape(title))]
    x = 20
    for name in impls:
        color = COLORS[name]
        dash = DASHES.get(name)
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>'
                   % (x, top + 12, x + 28, top + 12, color,
                      ' stroke-dasharray="%s"' % dash if dash else ""))
        out.append('<text x="%d" y="%d" class="legend">%s</text>' % (x + 34, top + 16,
                                                                     escape(name)))
        x += 40 + 8 * len(name) + 20
    if args.metric == "speedup":
        out.append('<text x="%d" y="%d" class="legend">(dashed grey: 1.0 = tuned; red dots: '
                   '0.9 = 10%% slower)</text>' % (x, top + 16))
    for i, key in enumerate(order):
        label, coll = key
        px0, py0 = (i % cols) * pw, top + legend_h + (i // cols) * ph
        panel(out, px0, py0, pw, ph, "%s%s" % (coll, "  [%s]" % label if label else ""),
              groups[key], args.metric)
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
