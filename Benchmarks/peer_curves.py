"""Bytes at an equal public score against thumbor, photo by photo (Benchmarks/quality.sh, CURVES=1).

At the defaults each tool writes a picture at its own score: thumbor at its QUALITY 80, Attache
where its target puts it. This separates what the encoder saves from where the defaults sit:
each photo of a set is made at 1024 px by thumbor at QUALITY 60, 70, 80 and 90 (its `quality`
filter, PIL, progressive) and by `attache resize` at quality targets 65, 72, 80 and 88 (`auto`,
the search as at the defaults; with --jpeg-encoder thorough, the batch's), every output scored by
the public SSIMULACRA2 against the same Lanczos-3 reference as quality_peers.py. Each tool's
curve of log bytes against score is drawn through its points, and two figures are printed:
- at thumbor's own default: Attache's bytes at the score thumbor's QUALITY 80 reached on each
  photo, read off Attache's curve, summed, against thumbor's bytes (where Attache's curve reaches
  that score);
- along the curves: the geometric mean over photos of Attache's bytes / thumbor's at an equal
  score, over the scores both reach from 60 to 90.
    python3 peer_curves.py --attache BIN --set NAME=FOLDER [--set ...] [--attache-args ARGS]
"""

import argparse
import math
import os
import statistics
import sys
import tempfile
import urllib.request

from PIL import Image
from ssimulacra2 import compute_ssimulacra2

from quality_peers import attache, reference, serve, start_thumbor

THUMBOR_QUALITIES = (60, 70, 80, 90)
TARGETS = (65, 72, 80, 88)


def curve(points):
    """(score, log bytes) sorted by score, each score kept once."""
    points = sorted(points)
    return [p for i, p in enumerate(points) if i == 0 or p[0] > points[i - 1][0]]


def at(points, score):
    for (s0, b0), (s1, b1) in zip(points, points[1:]):
        if s0 <= score <= s1:
            return b0 + (b1 - b0) * (score - s0) / (s1 - s0)
    return None


def mean_log_ratio(ours, theirs, low=60.0, high=90.0):
    lo, hi = max(low, ours[0][0], theirs[0][0]), min(high, ours[-1][0], theirs[-1][0])
    if hi - lo < 1:
        return None
    steps = 200
    return sum(at(ours, lo + (hi - lo) * k / steps) - at(theirs, lo + (hi - lo) * k / steps)
               for k in range(steps + 1)) / (steps + 1)


def score(work, name, source, path):
    size = Image.open(path).size
    ref = os.path.join(work, name, "ref-%s-%dx%d.png" % (os.path.basename(source), *size))
    if not os.path.exists(ref):
        reference(source, size, ref)
    return compute_ssimulacra2(ref, path), os.path.getsize(path)


def compare(name, folder, args, work, thumbor_port):
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.lower().endswith((".jpg", ".jpeg")))
    media_port = serve(folder)
    ours, theirs = {f: [] for f in files}, {f: [] for f in files}
    for target in TARGETS:
        out = os.path.join(work, name, f"attache-{target}")
        os.makedirs(out, exist_ok=True)
        made, _ = attache(args.attache, files, out, args.attache_args.split() + ["--quality-target", str(target)])
        for f in files:
            ours[f].append(score(work, name, f, made[f][0]))
    default = {}
    for quality in THUMBOR_QUALITIES:
        out = os.path.join(work, name, f"thumbor-{quality}")
        os.makedirs(out, exist_ok=True)
        for f in files:
            url = (f"http://127.0.0.1:{thumbor_port}/unsafe/fit-in/1024x1024/filters:quality({quality})/"
                   f"127.0.0.1:{media_port}/{os.path.basename(f)}")
            path = os.path.join(out, os.path.basename(f))
            with urllib.request.urlopen(url, timeout=120) as answer, open(path, "wb") as sink:
                sink.write(answer.read())
            point = score(work, name, f, path)
            theirs[f].append(point)
            if quality == 80:
                default[f] = point
    ratios, ours_at, theirs_at, missed = [], 0.0, 0, []
    print(f"\n{name}: {len(files)} photos; Attache {args.attache_args or 'at its defaults'}, targets "
          f"{', '.join(map(str, TARGETS))}; thumbor QUALITY {', '.join(map(str, THUMBOR_QUALITIES))}")
    print("| photo | thumbor 80: score, bytes | Attache's bytes at that score | along the curves |")
    print("|---|---|---|---|")
    for f in files:
        a = curve([(s, math.log(b)) for s, b in ours[f]])
        t = curve([(s, math.log(b)) for s, b in theirs[f]])
        r = mean_log_ratio(a, t)
        if r is not None:
            ratios.append(r)
        s80, b80 = default[f]
        mine = at(a, s80)
        if mine is None:
            missed.append(os.path.basename(f))
        else:
            ours_at += math.exp(mine)
            theirs_at += b80
        print(f"| {os.path.basename(f)} | {s80:.1f}, {b80:,} | "
              f"{'-' if mine is None else f'{math.exp(mine):,.0f} ({math.exp(mine) / b80:.3f}x)'} | "
              f"{'-' if r is None else f'{math.exp(r):.3f}x'} |")
    print(f"At thumbor's default score, photo by photo: Attache's bytes {ours_at / theirs_at:.3f}x thumbor's "
          f"({len(files) - len(missed)} photos" + (f"; outside Attache's curve: {', '.join(missed)})" if missed else ")"))
    print(f"Along the curves (scores 60-90 both reach): {math.exp(statistics.mean(ratios)):.3f}x "
          f"(geometric mean of {len(ratios)} photos; best {math.exp(min(ratios)):.3f}x, worst {math.exp(max(ratios)):.3f}x)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attache", required=True)
    parser.add_argument("--set", action="append", required=True, help="NAME=FOLDER of JPEG photos")
    parser.add_argument("--attache-args", default="", help="flags for attache resize (default: its defaults)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="attache-curves-")
    thumbor, thumbor_port = start_thumbor(work)
    try:
        for entry in args.set:
            name, folder = entry.split("=", 1)
            compare(name, folder, args, work, thumbor_port)
    finally:
        thumbor.terminate()
    print(f"outputs kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
