"""Encoder variants against the baseline at an equal SSIMULACRA2, photo by photo.

encoder-variants (encoder-variants.c) writes each photo at 1024 px, every variant's JPEG of it at
each quality and a line per encode with its in-process score; this draws each variant's curve of
log bytes against score through its qualities and compares it with the baseline's ("base") over
the scores both reach from 70 to 88: the geometric mean over the photos of the ratio of bytes at
an equal score (Bjontegaard's method, with straight pieces), its best and worst photo, and at
one quality (82) the mean change of score and ratio of bytes. With --public each encode is
scored again by the public SSIMULACRA2 (PyPI ssimulacra2) against the pixels it was made from.
    python3 encoder_variants.py OUT_DIR ENCODES.tsv [--public]
"""
import math
import os
import sys

from encoder_gain import at, curve


def mean_log_ratio(base, other, low=70.0, high=88.0):
    lo, hi = max(low, base[0][0], other[0][0]), min(high, base[-1][0], other[-1][0])
    if hi - lo < 1:
        return None
    steps = 200
    return sum(at(other, lo + (hi - lo) * k / steps) - at(base, lo + (hi - lo) * k / steps)
               for k in range(steps + 1)) / (steps + 1)


def main():
    out, encodes = sys.argv[1], sys.argv[2]
    public = "--public" in sys.argv[3:]
    if public:
        from ssimulacra2 import compute_ssimulacra2
    rows = {}
    for line in open(encodes).read().splitlines():
        photo, name, quality, size, score = line.split("\t")[:5]
        if public:
            score = compute_ssimulacra2(os.path.join(out, f"{photo}.ppm"),
                                        os.path.join(out, f"{photo}-{name}-{quality}.jpg"))
        rows.setdefault(name, {}).setdefault(photo, {})[int(quality)] = (float(score), int(size))
    base = rows.pop("base")
    for name, photos in rows.items():
        ratios, moved, sizes = [], [], []
        for photo, points in photos.items():
            r = mean_log_ratio(curve([(s, math.log(b)) for s, b in base[photo].values()]),
                               curve([(s, math.log(b)) for s, b in points.values()]))
            if r is not None:
                ratios.append(r)
            if 82 in points and 82 in base[photo]:
                moved.append(points[82][0] - base[photo][82][0])
                sizes.append(points[82][1] / base[photo][82][1])
        line = (f"{name}: bytes at an equal score {math.exp(sum(ratios) / len(ratios)):.3f}x the baseline's "
                f"(best photo {math.exp(min(ratios)):.3f}x, worst {math.exp(max(ratios)):.3f}x; {len(ratios)} photos)")
        if moved:
            line += (f"; at quality 82 {sum(moved) / len(moved):+.2f} points ({min(moved):+.2f} to "
                     f"{max(moved):+.2f}), {sum(sizes) / len(sizes):.3f}x the bytes")
        print(line)


if __name__ == "__main__":
    main()
