#!/usr/bin/env python3
"""Animated GIF comparison: attache resize vs gifsicle --resize-fit vs Pillow frame by frame,
same files, one core each (taskset -c 0), best of N runs per tool and size.

PSNR: for every source frame, the frame each output shows at that frame's start time against
a reference (the source frame composited by Pillow, resized in 32-bit float with Lanczos-3 to
the output size), averaged over frames and files. Run: python3 gif.py work/gif --attache BIN"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageSequence

import figures
from compare import timed

PILLOW = r"""
import sys
from PIL import Image, ImageSequence
side, out = int(sys.argv[1]), sys.argv[2]
for path in sys.argv[3:]:
    im = Image.open(path)
    w, h = im.size
    scale = min(side / w, side / h, 1)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    frames, durations = [], []
    for frame in ImageSequence.Iterator(im):
        frames.append(frame.convert("RGBA").resize(size, Image.LANCZOS))
        durations.append(frame.info.get("duration", 100))
    frames[0].save(out + "/" + path.split("/")[-1], save_all=True, append_images=frames[1:],
                   duration=durations, loop=im.info.get("loop", 0), disposal=1)
"""


def composited(path):
    im = Image.open(path)
    frames, starts, t = [], [], 0
    for frame in ImageSequence.Iterator(im):
        frames.append(frame.convert("RGB"))
        starts.append(t)
        d = frame.info.get("duration", 100)
        t += d if d > 10 else 100
    return frames, starts


def shown_at(frames, starts, t):
    k = 0
    for i, s in enumerate(starts):
        if s <= t:
            k = i
    return frames[k]


def mean_psnr(source, output):
    src, src_starts = composited(source)
    out, out_starts = composited(output)
    size = out[0].size
    values = []
    for frame, t in zip(src, src_starts):
        ref = np.stack([np.asarray(c.convert("F").resize(size, Image.LANCZOS), dtype=np.float64) for c in frame.split()], -1)
        got = np.asarray(shown_at(out, out_starts, t), dtype=np.float64)
        mse = np.mean((got - np.clip(ref, 0, 255)) ** 2)
        values.append(99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse))
    return float(np.mean(values)), len(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--attache", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, help="the first N GIFs only (a quick run)")
    args = parser.parse_args()
    files = sorted(glob.glob(os.path.join(args.folder, "*.gif")))
    files = files[: args.limit] if args.limit else files
    frames = sum(Image.open(f).n_frames for f in files)
    for side in (480, 320):
        work = tempfile.mkdtemp()
        tools = {
            "attache": lambda out: [args.attache, "resize", "--max-side", str(side), "--out", out] + files,
            "gifsicle": lambda out: ["sh", "-c", " && ".join(
                f"gifsicle --resize-fit {side}x{side} '{f}' -o '{out}/{os.path.basename(f)}'" for f in files)],
            "pillow": lambda out: [sys.executable, "-c", PILLOW, str(side), out] + files,
        }
        results = {}
        for name, command in tools.items():
            out = os.path.join(work, name)
            best = None
            for _ in range(args.runs if name != "pillow" else 1):
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                seconds, rss = timed(command(out))
                best = (seconds, rss) if best is None or seconds < best[0] else best
            size = sum(os.path.getsize(os.path.join(out, os.path.basename(f))) for f in files)
            quality = [mean_psnr(f, os.path.join(out, os.path.basename(f))) for f in files]
            results[name] = (best[0], best[1], size, float(np.mean([q[0] for q in quality])), sum(q[1] for q in quality))
        print(f"{len(files)} animated GIFs, {frames} frames, -> {side} px, one core")
        print("| tool | seconds | frames/s | vs gifsicle | peak RSS MB | output bytes | vs gifsicle bytes | output frames | mean PSNR dB |")
        print("|---|---|---|---|---|---|---|---|---|")
        g = results["gifsicle"]
        for name, (seconds, rss, size, quality, out_frames) in results.items():
            print(f"| {name} | {seconds:.2f} | {frames / seconds:.1f} | {g[0] / seconds:.2f}x | {rss:.0f} | {size} | "
                  f"{size / g[2]:.2f}x | {out_frames} | {quality:.2f} |")
        if side == 480:
            a = results["attache"]
            for peer in ("gifsicle", "pillow"):
                figures.record(f"animated GIFs -> 480 px: throughput vs {peer}", frames / a[0], "frames/s", peer=peer,
                               peer_value=frames / results[peer][0], goal=">= 1.0x")
            figures.record("animated GIFs -> 480 px: mean PSNR", a[3], "dB", peer="gifsicle", peer_value=g[3])
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
