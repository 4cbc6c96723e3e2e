"""Goals and regressions: `bash Benchmarks/run.sh --compare A B`.

A figure moved from run A to run B when its change is larger than the spread of its rounds in
either run and than FLOOR (a few per cent: two rounds can agree by chance). A figure with a peer is
compared by its ratio to the peer, measured beside it in the same run, so that a slower hour of
the machine (which slows both) is not taken for a change of Attache; one without a peer by its
value. Written to B/compare-<A>.md and printed; the exit status is 0 either way (a figure's value
never fails a run), 2 when the runs share no figure.
"""
import json
import math
import os
import re
import statistics
import sys

FLOOR = 0.03


def goal_met(figure):
    """True or False for a goal this module reads (see the forms below), None for one it does not."""
    goal = figure.get("goal", "").strip()
    value, ratio, peer = figure.get("value"), figure.get("ratio"), figure.get("peer_value")
    m = re.fullmatch(r"(>=|<=)\s*([\d.]+)x", goal)  # a ratio to the peer
    if m and ratio is not None:
        return ratio >= float(m.group(2)) if m.group(1) == ">=" else ratio <= float(m.group(2))
    m = re.fullmatch(r"(>=|<=)\s*the peer's(?:\s*([-+])\s*([\d.]+))?", goal)
    if m and peer is not None:
        bound = peer + (float(m.group(3)) * (1 if m.group(2) == "+" else -1) if m.group(2) else 0)
        return value >= bound if m.group(1) == ">=" else value <= bound
    m = re.fullmatch(r"(>=|<=)?\s*([\d.]+)\s*(%|MB|ms)?", goal)  # an absolute bound, or an exact count
    if m:
        bound = float(m.group(2))
        if m.group(1) is None:
            return value == bound
        return value >= bound if m.group(1) == ">=" else value <= bound
    return None


def load(folder):
    path = os.path.join(folder, "results.json")
    try:
        return json.load(open(path))
    except OSError:
        sys.exit(f"run.sh --compare: no {path}")


def measure(figure):
    """What is compared: (ratio or value, its spread or None, 'ratio' or 'value')."""
    if figure.get("ratio") is not None:
        return figure["ratio"], figure.get("ratio_spread"), "ratio"
    return figure["value"], figure.get("spread"), "value"


def speed(figure):
    """Whether a figure is a speed against its peer: a rate, or a time (taken inverted)."""
    return figure.get("ratios") and (figure["unit"].endswith("/s") or figure["unit"] == "ms")


def index(results, names):
    """Attache's speed against the peers over every step: per round, the geometric mean of the
    speed ratios named (a time's ratio inverted), then the median of the rounds and their
    spread. One figure's noise (a few per cent to tens on a busy machine) averages down over
    many, so a change in every stage shows here before it passes any one figure's spread."""
    figures = [f for f in results["figures"] if f["name"] in names]
    rounds = min(len(f["ratios"]) for f in figures)
    per_round = []
    for r in range(rounds):
        logs = [math.log(f["ratios"][r] if f["unit"].endswith("/s") else 1 / f["ratios"][r]) for f in figures]
        per_round.append(math.exp(sum(logs) / len(logs)))
    middle = statistics.median(per_round)
    spread = (max(per_round) - min(per_round)) / middle if len(per_round) > 1 else None
    return middle, spread


def changes(a, b):
    """Every figure both runs have: (name, unit, kind, a, b, relative change, bound, moved, better)."""
    before = {f["name"]: f for f in a["figures"]}
    rows = []
    for figure in b["figures"]:
        old = before.get(figure["name"])
        if old is None:
            continue
        x, sx, kind = measure(old)
        y, sy, kind_b = measure(figure)
        if kind != kind_b:
            continue
        change = (y - x) / abs(x) if x else (0.0 if y == x else float("inf"))
        bound = max(FLOOR, sx or 0, sy or 0)
        moved = abs(change) > bound
        # A ratio is Attache's figure over the peer's, so it is good the way the figure is.
        good = (change > 0) == (figure["better"] == "higher")
        rows.append(dict(name=figure["name"], unit=figure["unit"], kind=kind, a=x, b=y, change=change, bound=bound,
                         moved=moved, verdict=("better" if good else "worse") if moved else "within the spread"))
    names = {f["name"] for f in a["figures"] if speed(f)} & {f["name"] for f in b["figures"] if speed(f)}
    if len(names) >= 2:
        (x, sx), (y, sy) = index(a, names), index(b, names)
        change = (y - x) / x
        bound = max(FLOOR, sx or 0, sy or 0)
        moved = abs(change) > bound
        rows.append(dict(name=f"speed against the peers, every step (geometric mean of {len(names)} ratios)",
                         unit="", kind="ratio", a=x, b=y, change=change, bound=bound, moved=moved,
                         verdict=("better" if change > 0 else "worse") if moved else "within the spread"))
    return rows


def markdown(a_name, b_name, rows):
    lines = [f"# {b_name} against {a_name}", "",
             f"A figure moved when its change passes the spread of its rounds in either run and {FLOOR:.0%}; "
             "a figure with a peer is compared by its ratio to the peer in its own run.", "",
             "| figure | compared | A | B | change | bound | |", "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (not r["moved"], -abs(r["change"]))):
        shown = (lambda v: f"{v:.3f}x") if r["kind"] == "ratio" else (lambda v: f"{v:.4g} {r['unit']}")
        mark = f"**{r['verdict']}**" if r["moved"] else r["verdict"]
        lines.append(f"| {r['name']} | {r['kind']} | {shown(r['a'])} | {shown(r['b'])} | {r['change']:+.1%} | "
                     f"±{r['bound']:.1%} | {mark} |")
    moved = [r for r in rows if r["moved"]]
    lines += ["", f"{len(moved)} of {len(rows)} figures moved beyond the spread"
              + (": " + "; ".join(f"{r['name']} {r['change']:+.1%} ({r['verdict']})" for r in moved) if moved else ".")]
    return "\n".join(lines) + "\n"


def main(a_folder, b_folder):
    a, b = load(a_folder), load(b_folder)
    rows = changes(a, b)
    if not rows:
        print("run.sh --compare: the two runs share no figure", file=sys.stderr)
        return 2
    a_name, b_name = os.path.basename(os.path.normpath(a_folder)), os.path.basename(os.path.normpath(b_folder))
    text = markdown(a_name, b_name, rows)
    path = os.path.join(b_folder, f"compare-{a_name}.md")
    with open(path, "w") as sink:
        sink.write(text)
    print(text + f"\nwritten to {path}")
    return 0
