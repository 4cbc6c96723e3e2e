#!/usr/bin/env python3
"""A benchmark's figures, recorded where they are computed.

Every script under Benchmarks/ prints its own table for a person; when `BENCH_FIGURES` names a
file (`bash Benchmarks/run.sh` sets it), each figure is also appended to it as one JSON line:

    {"name": "JPEG photos -> 1024 px", "value": 12.1, "unit": "images/s", "better": "higher",
     "peer": "vipsthumbnail", "peer_value": 9.3, "goal": ">= 1.0x"}

From Python: `figures.record(...)`; from a shell script: `figure NAME VALUE UNIT [options]`
(Benchmarks/binary.sh defines it), which runs this file:

    python3 figures.py NAME VALUE UNIT [--peer P --peer-value V] [--lower] [--goal G]

`BENCH_QUICK=1` asks a script for its small subset (a few files, one round); the figures it
records then are the same names on less work.
"""
import argparse
import json
import math
import os
import sys


def quick():
    """True when the run asks for the small subset (`bash Benchmarks/run.sh --quick`)."""
    return os.environ.get("BENCH_QUICK") == "1"


def record(name, value, unit, peer=None, peer_value=None, better="higher", goal=None):
    """Appends one figure to $BENCH_FIGURES (nothing when it is unset). `better` says which way
    is good ("higher" for a rate, "lower" for a time, memory or bytes); `goal` is the issue's
    target as text, e.g. ">= 1.1x" (a ratio to the peer) or "<= 300 MB"."""
    path = os.environ.get("BENCH_FIGURES")
    if not path:
        return
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be higher or lower, not {better!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: {value} is not a figure")
    line = {"name": name, "value": value, "unit": unit, "better": better}
    if peer is not None:
        if peer_value is None or not math.isfinite(float(peer_value)):
            raise ValueError(f"{name}: the peer {peer} has no figure")
        line["peer"] = peer
        line["peer_value"] = float(peer_value)
    if goal:
        line["goal"] = goal
    with open(path, "a") as sink:
        sink.write(json.dumps(line) + "\n")


def series(name, kind, data, x_unit, y_unit):
    """Appends the points of one chart to $BENCH_FIGURES: `kind` is "cdf" (data: {line: [values]},
    drawn as the share of answers within each value), "line" (data: {line: [[x, y], ...]}) or
    "scatter" (data: {group: [[x, y], ...]})."""
    path = os.environ.get("BENCH_FIGURES")
    if not path:
        return
    if kind not in ("cdf", "line", "scatter"):
        raise ValueError(f"kind must be cdf, line or scatter, not {kind!r}")
    if not data or not all(data.values()):
        raise ValueError(f"{name}: a chart without points")
    with open(path, "a") as sink:
        sink.write(json.dumps({"series": name, "kind": kind, "data": data, "x_unit": x_unit, "y_unit": y_unit}) + "\n")


def main():
    ap = argparse.ArgumentParser(description="records one figure in $BENCH_FIGURES")
    ap.add_argument("name")
    ap.add_argument("value", type=float)
    ap.add_argument("unit")
    ap.add_argument("--peer")
    ap.add_argument("--peer-value", type=float)
    ap.add_argument("--lower", action="store_true", help="lower is better (a time, memory, bytes)")
    ap.add_argument("--goal")
    args = ap.parse_args()
    record(args.name, args.value, args.unit, peer=args.peer, peer_value=args.peer_value,
           better="lower" if args.lower else "higher", goal=args.goal)


if __name__ == "__main__":
    sys.exit(main())
