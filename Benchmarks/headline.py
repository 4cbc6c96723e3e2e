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

# (what, the figures of the row: the first gives the row's main figure, each a ratio to its peer)
ROWS = [
    ("JPEG photos → 1024 px, one core", ["JPEG photos -> 1024 px: throughput vs vipsthumbnail",
                                        "JPEG photos -> 1024 px: throughput vs pillow",
                                        "JPEG photos -> 1024 px: peak RSS"]),
    ("PNG photos → 1024 px, one core", ["PNG photos -> 1024 px: throughput vs vipsthumbnail",
                                       "PNG photos -> 1024 px: throughput vs pillow",
                                       "PNG photos -> 1024 px: output bytes"]),
    ("animated GIFs → 480 px, one core", ["animated GIFs -> 480 px: throughput vs gifsicle",
                                         "animated GIFs -> 480 px: throughput vs pillow"]),
    ("WebP photos (lossy, lossless) → 1024 px", ["lossy WebP photos -> 1024 px: throughput",
                                                 "lossless WebP photos -> 1024 px: throughput"]),
    ("HEIC, AVIF, JPEG XL photos → 1024 px", ["HEIC photos -> 1024 px: throughput", "AVIF photos -> 1024 px: throughput",
                                             "JPEG XL photos -> 1024 px: throughput"]),
    ("ICC-tagged JPEGs → sRGB", ["ICC-tagged JPEGs -> sRGB 1024 px: throughput"]),
    ("video: a poster, GIFs → MP4, transcodes", ["a poster at 30.5 s of an H.264 MP4 -> 320 px: time",
                                                "animated GIFs -> H.264 MP4: time",
                                                "transcodes to H.264/AAC MP4 and AAC M4A: time"]),
    ("the defaults' pictures, lomiri photos (SSIMULACRA2 lowest, mean; bytes)", ["lomiri photos at the defaults: lowest SSIMULACRA2",
                                                                   "lomiri photos at the defaults: mean SSIMULACRA2",
                                                                   "lomiri photos at the defaults: bytes"]),
    ("the service, 16 clients, 5–20 MP photos (throughput, p99)", ["service, 16 clients, 5-20 MP photos: throughput",
                                                                  "service, 16 clients, 5-20 MP photos: p99"]),
    ("a tiny payload beside them, attached within 300 ms", [
        "service: tiny payloads beside 16 heavy clients, attached in 300 ms"]),
    ("tokened downloads, 64 connections", ["service: tokened downloads, wrk -c 64"]),
    ("a campaign of media URLs, both cores (throughput, peak RSS)", [
        "a campaign of media URLs: throughput, a worker per core", "a campaign: peak RSS, a worker per core"]),
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
    for what, names in ROWS:
        row = [figures[n] for n in names if n in figures]
        if len(row) != len(names):
            continue
        ours = ", ".join(dict.fromkeys(shown(f["value"], f["unit"]) for f in row))
        against = []
        for f in row:
            if f.get("ratio") is not None:
                against.append(f"{f['ratio']:.2f}× {f['peer']} ({shown(f['peer_value'], f['unit'])})")
            elif f.get("goal"):
                against.append(f"goal {f['goal']}")
        lines.append(f"| {what} | {ours} | {'; '.join(against)} |")
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
