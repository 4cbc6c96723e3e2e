#!/usr/bin/env python3
"""Other receivers' pictures (Android, web, icon), measured in one run on the same files:

1. cost: `attache resize --max-side 1024` alone, then with `--targets android,web,icon`, on the
   photo set, one core, best of N runs each; the ratio is what the three pictures add;
2. byte caps: the Android picture of every photo under 1 MB, and under 40 KB when asked, with
   the encodes each took;
3. crop quality: portraits made with a known subject box (a textured object from a photo on a
   smooth background, near the top), cropped to 2:1 by attache (attention), by
   `vipsthumbnail --smartcrop attention`, and by a centre crop; the share of the subject box
   inside each crop.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from PIL import Image

import figures


def resize(binary, files, out, extra):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    start = time.perf_counter()
    result = subprocess.run(
        ["taskset", "-c", "0", binary, "resize", "--max-side", "1024", "--out", out, "--json"] + extra + files,
        check=True, capture_output=True, text=True)
    return time.perf_counter() - start, [json.loads(line) for line in result.stdout.splitlines()]


def cost(binary, files, runs):
    alone = min(resize(binary, files, "/tmp/targets-alone", [])[0] for _ in range(runs))
    both = min(resize(binary, files, "/tmp/targets-all", ["--targets", "android,web,icon"])[0] for _ in range(runs))
    print(f"| photos | iOS rendition alone s | with android, web, icon s | added |")
    print(f"|---|---|---|---|")
    print(f"| {len(files)} | {alone:.2f} | {both:.2f} | {(both / alone - 1) * 100:.1f}% |")
    figures.record("photos -> iOS, Android, web and icon pictures: time", both, "s", better="lower",
                   peer="the iOS rendition alone", peer_value=alone)


def caps(binary, files):
    print()
    print("| Android cap | pictures | under the cap | mean encodes | most encodes | mean bytes |")
    print("|---|---|---|---|---|---|")
    for cap in [1_000_000, 40_000]:
        _, lines = resize(binary, files, "/tmp/targets-cap", ["--targets", "android", "--android-max-bytes", str(cap)])
        pictures = [t for line in lines if line.get("ok") for t in line.get("targets", [])]
        made = [p for p in pictures if "bytes" in p]
        under = [p for p in made if p["bytes"] <= cap]
        encodes = [p["encodes"] for p in made]
        mean_bytes = sum(p["bytes"] for p in made) / max(1, len(made))
        print(f"| {cap:,} | {len(pictures)} | {len(under)} ({len(under) / max(1, len(pictures)) * 100:.0f}%) | "
              f"{sum(encodes) / max(1, len(encodes)):.2f} | {max(encodes, default=0)} | {mean_bytes:,.0f} |")
        if cap == 40_000:
            figures.record("Android pictures under a 40 KB cap", 100 * len(under) / max(1, len(pictures)), "%",
                           goal=">= 100%")
            figures.record("Android pictures under a 40 KB cap: mean encodes", sum(encodes) / max(1, len(encodes)),
                           "encodes", better="lower")


def make_subjects(photos, directory, count, seed):
    """Portraits 800x1200: a smooth vertical gradient, a photo's textured middle pasted near the top."""
    random.seed(seed)
    cases = []
    for index in range(count):
        photo = Image.open(photos[index % len(photos)]).convert("RGB")
        top = tuple(random.randint(120, 230) for _ in range(3))
        bottom = tuple(random.randint(40, 140) for _ in range(3))
        canvas = Image.new("RGB", (800, 1200))
        for y in range(1200):
            t = y / 1199
            canvas.paste(tuple(int(a + (b - a) * t) for a, b in zip(top, bottom)), (0, y, 800, y + 1))
        width = random.randint(220, 420)
        height = random.randint(160, 300)
        side = min(photo.width, photo.height) // 2
        piece = photo.crop((photo.width // 2 - side // 2, photo.height // 2 - side // 2,
                            photo.width // 2 + side // 2, photo.height // 2 + side // 2)).resize((width, height))
        x = random.randint(0, 800 - width)
        y = random.randint(40, 1200 // 3 - height // 2)
        canvas.paste(piece, (x, y))
        path = os.path.join(directory, f"subject-{index:02d}.jpg")
        canvas.save(path, quality=92)
        cases.append((path, (x, y, width, height)))
    return cases


def kept(box, crop):
    """The share of `box` (x, y, w, h) inside `crop` (x, y, w, h)."""
    x0, y0 = max(box[0], crop[0]), max(box[1], crop[1])
    x1, y1 = min(box[0] + box[2], crop[0] + crop[2]), min(box[1] + box[3], crop[1] + crop[3])
    return max(0, x1 - x0) * max(0, y1 - y0) / (box[2] * box[3])


def crops(binary, photos, count):
    directory = tempfile.mkdtemp(prefix="subjects-")
    cases = make_subjects(photos, directory, count, seed=1)
    _, lines = resize(binary, [path for path, _ in cases], "/tmp/targets-crop", ["--targets", "android"])
    shares = {"attache": [], "vips": [], "centre": []}
    # The collapsed iOS notification's square: the entry's clipping rect, else the centre square.
    squares = {"attache (thumbnailClippingRect)": [], "centre square (iOS without one)": []}
    for (path, box), line in zip(cases, lines):
        clip = line.get("thumbnail_clip")
        square = [clip[0] * 800, clip[1] * 1200, clip[2] * 800, clip[3] * 1200] if clip else [0, 200, 800, 800]
        squares["attache (thumbnailClippingRect)"].append(kept(box, square))
        squares["centre square (iOS without one)"].append(kept(box, [0, 200, 800, 800]))
        # The crops are in the pixels of the 1024 px rendition (683x1024 here): scaled back.
        scale = 1200 / line["height"]
        crop = [v * scale for v in line["targets"][0]["crop"]]
        shares["attache"].append(kept(box, crop))
        # vips on the same 1024 px rendition, to the same 2:1 window.
        small = os.path.join(directory, "small.v")
        out = os.path.join(directory, "crop.v")
        subprocess.run(["vips", "thumbnail", path, small, "1024"], check=True)
        width = line["width"]
        subprocess.run(["vips", "smartcrop", small, out, str(width), str(width // 2), "--interesting", "attention"],
                       check=True)
        yoffset = -int(subprocess.run(["vipsheader", "-f", "yoffset", out], check=True, capture_output=True,
                                      text=True).stdout)
        shares["vips"].append(kept(box, [0, yoffset * scale, width * scale, width // 2 * scale]))
        shares["centre"].append(kept(box, [0, (1200 - 400) / 2, 800, 400]))
    shutil.rmtree(directory)
    print()
    print(f"| crop to 2:1 ({count} portraits, subject near the top) | mean share of subject kept | all of it kept |")
    print("|---|---|---|")
    for name, values in shares.items():
        whole = sum(1 for v in values if v >= 0.999)
        print(f"| {name} | {sum(values) / len(values) * 100:.1f}% | {whole} of {len(values)} |")
    mean = {name: 100 * sum(values) / len(values) for name, values in shares.items()}
    figures.record("2:1 crops of portraits: share of the subject kept", mean["attache"], "%",
                   peer="vipsthumbnail --smartcrop attention", peer_value=mean["vips"])
    print()
    print(f"| collapsed iOS thumbnail ({count} portraits, subject near the top) | mean share of subject kept | all of it kept |")
    print("|---|---|---|")
    for name, values in squares.items():
        whole = sum(1 for v in values if v >= 0.999)
        print(f"| {name} | {sum(values) / len(values) * 100:.1f}% | {whole} of {len(values)} |")
    square = {name: 100 * sum(values) / len(values) for name, values in squares.items()}
    figures.record("collapsed iOS thumbnails of portraits: share of the subject kept",
                   square["attache (thumbnailClippingRect)"], "%", peer="a centre square (iOS without a clip)",
                   peer_value=square["centre square (iOS without one)"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("photos")
    parser.add_argument("--attache", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--subjects", type=int, default=40)
    parser.add_argument("--crops-only", action="store_true", help="only the crop and thumbnail tables")
    args = parser.parse_args()
    files = sorted(os.path.join(args.photos, f) for f in os.listdir(args.photos) if f.endswith(".jpg"))
    if figures.quick():  # BENCH_QUICK=1: four photos, one run, eight portraits
        files, args.runs, args.subjects = files[:4], 1, 8
    if not files:
        sys.exit(f"no photos in {args.photos}")
    if not args.crops_only:
        cost(args.attache, files, args.runs)
        caps(args.attache, files)
    crops(args.attache, files, args.subjects)


if __name__ == "__main__":
    main()
