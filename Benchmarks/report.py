"""The page of a benchmark run: DIR/report.html from DIR/results.json, one self-contained file
(inline SVG charts and one style sheet, no script, nothing fetched), to read or send on."""
import hashlib
import html
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLOURS = ["#1f6fb2", "#d9822b", "#2e9e5b", "#a14fb8", "#c23b3b", "#6b6b6b"]
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #1b1b1b; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 16px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { background: #f3f3f3; } tr.step td { background: #fafafa; font-weight: 600; }
.met { color: #1d7a3e; } .missed { color: #b3261e; font-weight: 600; } .mark { color: #8a5a00; }
.failed { color: #b3261e; } .meta { color: #555; } figure { margin: 16px 0 28px; }
figcaption { font-weight: 600; margin-bottom: 4px; } svg text { font: 11px system-ui, sans-serif; fill: #333; }
pre { background: #f6f6f6; padding: 8px; white-space: pre-wrap; font-size: 12px; }
"""


def esc(value):
    return html.escape(str(value), quote=True)


def number(value, unit=""):
    if value is None:
        return "-"
    magnitude = abs(value)
    text = f"{value:,.0f}" if magnitude >= 1000 else f"{value:.3g}" if magnitude < 10 else f"{value:.1f}"
    return f"{text} {unit}".strip()


def spread_mark(figure):
    """A mark when the rounds spread more than the difference to the peer (or when one round
    gives no spread to weigh the difference against)."""
    if figure.get("ratio") is None:
        return ""
    spread = figure.get("ratio_spread")
    if spread is None:
        return "one round"
    if spread > abs(figure["ratio"] - 1):
        return f"spread {spread:.0%} > difference"
    return f"spread {spread:.0%}"


def summary_rows(results):
    rows, by_step = [], {}
    for f in results["figures"]:
        by_step.setdefault(f["step"], []).append(f)
    for step in results["steps"]:
        rows.append(("step", step))
        for f in by_step.get(step["name"], []):
            rows.append(("figure", f))
    return rows


def summary_text(results):
    """The summary table as Markdown (printed at the end of a run, pasted into notes)."""
    lines = ["| figure | attache | peer | peer's | ratio | goal | |", "|---|---|---|---|---|---|---|"]
    for kind, item in summary_rows(results):
        if kind == "step":
            if item["status"] != "ok":
                lines.append(f"| **{item['name']}: failed** | | | | | | {item.get('error', '')[:120]} |")
            continue
        f = item
        met = {True: "met", False: "**missed**", None: ""}[f.get("goal_met")]
        ratio = f"{f['ratio']:.2f}x" if f.get("ratio") is not None else ""
        lines.append(f"| {f['name']} | {number(f['value'], f['unit'])} | {f.get('peer', '')} | "
                     f"{number(f.get('peer_value'), f['unit']) if 'peer' in f else ''} | {ratio} | "
                     f"{f.get('goal', '')} {met} | {spread_mark(f)} |")
    return "\n".join(lines)


def summary_html(results):
    out = ["<table><tr><th>figure</th><th>attache</th><th>peer</th><th>peer's</th><th>ratio</th><th>goal</th>"
           "<th>rounds</th></tr>"]
    for kind, item in summary_rows(results):
        if kind == "step":
            status = "" if item["status"] == "ok" else f" <span class=failed>failed: {esc(item.get('error', ''))}</span>"
            out.append(f"<tr class=step><td colspan=7>{esc(item['name'])}: {esc(item['title'])} "
                       f"<span class=meta>({esc(item['script'])}, {item['seconds']:.0f} s)</span>{status}</td></tr>")
            continue
        f = item
        met = f.get("goal_met")
        goal = esc(f.get("goal", ""))
        if met is True:
            goal += " <span class=met>met</span>"
        elif met is False:
            goal += " <span class=missed>missed</span>"
        ratio = f"{f['ratio']:.2f}×" if f.get("ratio") is not None else ""
        out.append(f"<tr><td>{esc(f['name'])}</td><td class=n>{esc(number(f['value'], f['unit']))}</td>"
                   f"<td>{esc(f.get('peer', ''))}</td>"
                   f"<td class=n>{esc(number(f.get('peer_value'), f['unit'])) if 'peer' in f else ''}</td>"
                   f"<td class=n>{ratio}</td><td>{goal}</td>"
                   f"<td><span class=mark>{esc(spread_mark(f))}</span></td></tr>")
    out.append("</table>")
    return "\n".join(out)


def ratio_bars(figures, title, note):
    """Horizontal bars of Attache's figure over the peer's, with the line at 1.0 (the peer)."""
    if not figures:
        return ""
    height, left, width = 22 * len(figures) + 40, 380, 900
    top = max(2.0, max(f["ratio"] for f in figures) * 1.1)
    x = lambda v: left + (width - left - 250) * v / top  # room after the longest bar for its label
    parts = [f'<svg role="img" aria-label="{esc(title)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" data-chart="ratio">']
    for i, f in enumerate(figures):
        y = 10 + 22 * i
        label = f["name"] if len(f["name"]) <= 58 else f["name"][:56] + "…"
        colour = COLOURS[0] if (f["ratio"] >= 1) == (f["better"] == "higher") else COLOURS[4]
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{esc(label)}</text>'
                     f'<rect x="{left}" y="{y + 2}" width="{max(1.0, x(f["ratio"]) - left):.1f}" height="14" '
                     f'fill="{colour}"><title>{esc(f["name"])}: {f["ratio"]:.2f}× {esc(f["peer"])}</title></rect>'
                     f'<text x="{x(f["ratio"]) + 4:.1f}" y="{y + 13}">{f["ratio"]:.2f}× {esc(f["peer"])}</text>')
    one = x(1.0)
    parts.append(f'<line x1="{one:.1f}" y1="4" x2="{one:.1f}" y2="{height - 24}" stroke="#333" stroke-dasharray="3 3"/>'
                 f'<text x="{one:.1f}" y="{height - 10}" text-anchor="middle">1.0× (the peer)</text></svg>')
    return f"<figure><figcaption>{esc(title)}</figcaption><p class=meta>{esc(note)}</p>{''.join(parts)}</figure>"


def axes(x0, x1, y0, y1, box, x_unit, y_unit, log_x=False):
    """Scales and the axes' ticks for a plot in box = (left, top, right, bottom)."""
    left, top, right, bottom = box
    if log_x:
        lx0, lx1 = math.log10(max(x0, 1e-9)), math.log10(max(x1, x0 * 1.0001, 1e-9))
        sx = lambda v: left + (right - left) * (math.log10(max(v, 1e-9)) - lx0) / ((lx1 - lx0) or 1)
    else:
        sx = lambda v: left + (right - left) * (v - x0) / ((x1 - x0) or 1)
    sy = lambda v: bottom - (bottom - top) * (v - y0) / ((y1 - y0) or 1)
    ticks = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>'
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>']
    for i in range(5):
        xv = (10 ** (lx0 + (lx1 - lx0) * i / 4)) if log_x else x0 + (x1 - x0) * i / 4
        yv = y0 + (y1 - y0) * i / 4
        ticks.append(f'<text x="{sx(xv):.1f}" y="{bottom + 14}" text-anchor="middle">{esc(number(xv))}</text>'
                     f'<text x="{left - 4}" y="{sy(yv) + 4:.1f}" text-anchor="end">{esc(number(yv))}</text>')
    ticks.append(f'<text x="{(left + right) / 2}" y="{bottom + 30}" text-anchor="middle">{esc(x_unit)}</text>'
                 f'<text x="12" y="{(top + bottom) / 2}" transform="rotate(-90 12 {(top + bottom) / 2})" '
                 f'text-anchor="middle">{esc(y_unit)}</text>')
    return sx, sy, "".join(ticks)


def legend(names, x, y):
    return "".join(f'<rect x="{x}" y="{y + 16 * i}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
                   f'<text x="{x + 14}" y="{y + 9 + 16 * i}">{esc(n)}</text>' for i, n in enumerate(names))


def plot(series):
    """A chart of one recorded series: a CDF, lines or a scatter."""
    width, height, box = 760, 300, (60, 16, 520, 256)
    data, kind = series["data"], series["kind"]
    if kind == "cdf":
        points = {k: [[v, (i + 1) / len(vs)] for i, v in enumerate(sorted(vs))] for k, vs in data.items()}
        y_range = (0, 1)
    else:
        points = data
        ys = [p[1] for ps in points.values() for p in ps]
        pad = (max(ys) - min(ys)) * 0.05 or 1
        y_range = (min(ys) - pad if kind == "scatter" else 0, max(ys) + pad)
    xs = [p[0] for ps in points.values() for p in ps]
    log_x = kind == "cdf" and min(xs) > 0 and max(xs) / min(xs) > 20
    sx, sy, ticks = axes(min(xs), max(xs), *y_range, box, series["x_unit"], series["y_unit"], log_x)
    parts = [f'<svg role="img" aria-label="{esc(series["series"])}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" data-chart="{esc(kind)}">', ticks]
    for i, (name, ps) in enumerate(points.items()):
        colour = COLOURS[i % len(COLOURS)]
        if kind == "scatter":
            parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}" fill-opacity="0.75"/>' for x, y in ps]
        else:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in ps)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
    parts.append(legend(list(points), box[2] + 16, box[1] + 4) + "</svg>")
    return f"<figure><figcaption>{esc(series['series'])}</figcaption>{''.join(parts)}</figure>"


def method(script):
    """The comment at the head of a step's script: what it runs and how."""
    try:
        lines = open(os.path.join(HERE, script)).read().splitlines()[1:]
    except OSError:
        return ""
    comment = []
    for line in lines:
        if not line.startswith("#"):
            break
        comment.append(line[1:].strip())
    return " ".join(comment)


def page(results):
    run, m, v = results["run"], results["machine"], results["versions"]
    figures = results["figures"]
    rates = [f for f in figures if f.get("ratio") is not None and f["better"] == "higher"]
    costs = [f for f in figures if f.get("ratio") is not None and f["better"] == "lower"]
    charts = [ratio_bars(rates, "Throughput and scores against each peer (Attache / peer; right of the line is better)",
                         "Each bar is Attache's figure over the peer's from the same run."),
              ratio_bars(costs, "Time, memory and bytes against each peer (Attache / peer; left of the line is better)",
                         "Each bar is Attache's figure over the peer's from the same run.")]
    charts += [plot(s) for s in results.get("series", [])]
    took = run.get("seconds", 0)
    head = (f"{esc(run['started'])} · {esc(run['mode'])} run, {run['rounds']} round(s), {esc(run['build'])} build"
            + (f", slowed by {run['slowdown']:.0%}" if run.get("slowdown") else "")
            + f" · {took / 60:.1f} min · attache {esc(v.get('attache', ''))}")
    machine = (f"{esc(m.get('cpu'))} ({esc(', '.join(m.get('cpu_flags', [])))}), {m.get('cores')} cores, "
               f"{m.get('memory_gib')} GiB, {esc(m.get('os'))}, Linux {esc(m.get('kernel'))}, load before "
               f"{esc(m.get('load_before'))}")
    versions = "".join(f"<tr><td>{esc(k)}</td><td>{esc(val)}</td></tr>"
                       for k, val in [("swift", v.get("swift"))] + list(v.get("libraries", {}).items())
                       + list(v.get("peers", {}).items()))
    methods = "".join(f"<h3>{esc(s['name'])} — {esc(s['title'])}</h3><p>{esc(method(s['script']))} "
                      f"<span class=meta>(<code>bash Benchmarks/{esc(s['script'])}</code>; log: "
                      f"<code>logs/{esc(s['name'])}-1.txt</code>)</span></p>" for s in results["steps"])
    style = STYLE.strip()
    digest = __import__("base64").b64encode(hashlib.sha256(style.encode()).digest()).decode()
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-{digest}'">
<title>Attache benchmarks — {esc(run['started'])}</title>
<style>{style}</style></head><body>
<h1>Attache benchmarks</h1>
<p class=meta>{head}</p>
<p class=meta>{machine}</p>
<h2>Summary</h2>
<p>One row per figure, grouped by comparison: Attache's figure, the peer's from the same run, the ratio, the goal,
and a mark when the rounds spread more than the difference (or when one round gives no spread).</p>
{summary_html(results)}
<h2 id=charts>Charts</h2>
{''.join(charts)}
<h2>Method</h2>
{methods}
<h2>Machine and versions</h2>
<table>{versions}</table>
</body></html>
"""


def write(folder):
    results = json.load(open(os.path.join(folder, "results.json")))
    with open(os.path.join(folder, "report.html"), "w") as sink:
        sink.write(page(results))


if __name__ == "__main__":
    write(sys.argv[1])
