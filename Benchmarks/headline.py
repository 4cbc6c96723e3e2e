#!/usr/bin/env python3
"""The README's headline table, written from one results file of `bash Benchmarks/run.sh`.

    python3 Benchmarks/headline.py Benchmarks/results/RUN/results.json          prints the table
    python3 Benchmarks/headline.py --write README.md Benchmarks/results/RUN/results.json

The README holds the table between `<!-- headline: PATH -->` and `<!-- /headline -->`, PATH naming
the results file; `--write` replaces what is between them, and the test suite checks that it
is what this prints for that file. A row whose figures the run does not have is left out.
"""
import argparse
import json
import re
import sys

# (what, the figure of the row: its value, and its ratio to the peer measured beside it). One
# figure a row, at most twelve; every other figure of the run is in its report and
# docs/benchmarks.md.
ROWS = [
    ("JPEG photos → 1024 px, one core", "JPEG photos -> 1024 px: throughput vs vipsthumbnail"),
    ("PNG photos → 1024 px, one core", "PNG photos -> 1024 px: throughput vs vipsthumbnail"),
    ("animated GIFs → 480 px, one core", "animated GIFs -> 480 px: throughput vs gifsicle"),
    ("lossy WebP photos → 1024 px", "lossy WebP photos -> 1024 px: throughput"),
    ("HEIC photos → 1024 px", "HEIC photos -> 1024 px: throughput"),
    ("ICC-tagged JPEGs → sRGB", "ICC-tagged JPEGs -> sRGB 1024 px: throughput"),
    ("animated GIFs → H.264 MP4", "animated GIFs -> H.264 MP4: time"),
    ("the defaults' pictures: lowest SSIMULACRA2 (lomiri photos)", "lomiri photos at the defaults: lowest SSIMULACRA2"),
    ("the defaults' pictures: bytes (lomiri photos)", "lomiri photos at the defaults: bytes"),
    ("the service, 16 clients, 5–20 MP photos: throughput", "service, 16 clients, 5-20 MP photos: throughput"),
    ("the service, 16 clients, 5–20 MP photos: p99", "service, 16 clients, 5-20 MP photos: p99"),
    ("tokened downloads, 64 connections", "service: tokened downloads, wrk -c 64"),
]
START, END = re.compile(r"<!-- headline: (\S+) -->"), "<!-- /headline -->"


def shown(value, unit):
    magnitude = abs(value)
    text = f"{value:,.0f}" if magnitude >= 1000 else f"{value:.3g}" if magnitude < 100 else f"{value:.0f}"
    return f"{text} {unit}" if unit not in ("score", "ratio") else text


def table(results):
    figures = {f["name"]: f for f in results["figures"]}
    run = results["run"]
    lines = [f"| what ({run['started'][:10]}, {results['machine'].get('cores')} cores, {run['mode']} run) | attache | against |",
             "| --- | --- | --- |"]
    for what, name in ROWS:
        f = figures.get(name)
        if f is None:
            continue
        against = (f"{f['ratio']:.2f}× {f['peer']} ({shown(f['peer_value'], f['unit'])})"
                   if f.get("ratio") is not None else f"goal {f['goal']}" if f.get("goal") else "")
        lines.append(f"| {what} | {shown(f['value'], f['unit'])} | {against} |")
    return "\n".join(lines) + "\n"


def write(readme, results_path):
    text = open(readme).read()
    start = START.search(text)
    if not start or END not in text[start.end():]:
        sys.exit(f"headline.py: {readme} has no <!-- headline: PATH --> ... {END} block")
    end = text.index(END, start.end())
    marker = f"<!-- headline: {results_path} -->"
    new = text[: start.start()] + marker + "\n" + table(json.load(open(results_path))) + text[end:]
    with open(readme, "w") as sink:
        sink.write(new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", help="a results.json of bash Benchmarks/run.sh")
    ap.add_argument("--write", metavar="README", help="replace the headline block of this file")
    args = ap.parse_args()
    if args.write:
        write(args.write, args.results)
    else:
        sys.stdout.write(table(json.load(open(args.results))))


if __name__ == "__main__":
    sys.exit(main())
