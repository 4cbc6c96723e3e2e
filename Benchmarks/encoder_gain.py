"""What the thorough JPEG encoder saves at an equal public SSIMULACRA2, photo by photo.

encoder-gain (encoder-gain.c) writes each photo at 1024 px and both encoders' JPEGs of it at
each quality; this scores every JPEG against the pixels it was made from (PyPI ssimulacra2),
draws each encoder's curve of log bytes against score through its qualities, and compares the
two curves over the scores both reach inside the quality band (70 to 88 by default): the mean
ratio of bytes at an equal score (Bjontegaard's method, with straight pieces), and each
encoder's time.
    python3 encoder_gain.py OUT_DIR TIMINGS.tsv [LOW HIGH]
"""
import math
import os
import sys

from ssimulacra2 import compute_ssimulacra2


def curve(points):
    """(score, log bytes) sorted by score, each score kept once."""
    points = sorted(points)
    return [p for i, p in enumerate(points) if i == 0 or p[0] > points[i - 1][0]]


def at(points, score):
    for (s0, b0), (s1, b1) in zip(points, points[1:]):
        if s0 <= score <= s1:
            return b0 + (b1 - b0) * (score - s0) / (s1 - s0)
    return None


def mean_log_ratio(fast, thorough, low, high):
    """Mean of log(thorough bytes / fast bytes) over the scores both curves reach in [low, high]."""
    lo = max(low, fast[0][0], thorough[0][0])
    hi = min(high, fast[-1][0], thorough[-1][0])
    if hi - lo < 1:
        return None
    steps = 200
    total = 0.0
    for k in range(steps + 1):
        s = lo + (hi - lo) * k / steps
        total += at(thorough, s) - at(fast, s)
    return total / (steps + 1)


def main():
    out, timings = sys.argv[1], sys.argv[2]
    low, high = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else (70.0, 88.0)
    rows = [line.split("\t") for line in open(timings).read().splitlines() if line]
    by_photo = {}
    time = {"fast": 0.0, "trellis": 0.0}
    for photo, encoder, quality, size, ms, *_ in rows:
        path = os.path.join(out, f"{photo}-{encoder}-{quality}.jpg")
        score = compute_ssimulacra2(os.path.join(out, f"{photo}.ppm"), path)
        by_photo.setdefault(photo, {}).setdefault(encoder, []).append((score, math.log(int(size)), int(quality)))
        time[encoder] += float(ms)
    ratios = []
    for photo, encoders in sorted(by_photo.items(), key=lambda item: int(item[0])):
        fast = curve([(s, b) for s, b, _ in encoders["fast"]])
        thorough = curve([(s, b) for s, b, _ in encoders["trellis"]])
        r = mean_log_ratio(fast, thorough, low, high)
        same_q = [(t[0] - f[0], math.exp(t[1] - f[1])) for f, t in zip(sorted(encoders["fast"], key=lambda x: x[2]),
                                                                      sorted(encoders["trellis"], key=lambda x: x[2]))]
        print(f"photo {photo}: bytes at an equal score {math.exp(r):.3f}x" if r is not None else f"photo {photo}: -",
              " | at the same quality: " + ", ".join(f"{d:+.1f} pts {b:.2f}x" for d, b in same_q))
        if r is not None:
            ratios.append(r)
    print(f"\n{len(ratios)} photos, scores {low:g}-{high:g}: the thorough encoder's bytes at an equal score "
          f"{math.exp(sum(ratios) / len(ratios)):.3f}x the fast one's (geometric mean; best "
          f"{math.exp(min(ratios)):.3f}x, worst {math.exp(max(ratios)):.3f}x); its time "
          f"{time['trellis'] / time['fast']:.1f}x")


if __name__ == "__main__":
    main()
