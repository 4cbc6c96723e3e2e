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

from encoder_gain import at, curve, mean_log_ratio
from quality_peers import attache, each_set, photos, score, serve, thumbor_file

THUMBOR_QUALITIES = (60, 70, 80, 90)
TARGETS = (65, 72, 80, 88)


def compare(name, folder, args, work, thumbor_port):
    files = photos(folder)
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
            path = thumbor_file(thumbor_port, media_port, f, out, quality)
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
        r = mean_log_ratio(t, a, 60.0, 90.0)
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
    each_set(parser.parse_args(), "attache-curves-", compare)


if __name__ == "__main__":
    sys.exit(main())
