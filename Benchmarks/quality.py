"""Fixed quality 85 against --quality auto at several targets, on the same photos in one run.

Every output is scored with the public SSIMULACRA2 (PyPI ssimulacra2) against the pixels it was
encoded from (attache resize --reference writes them; vipsthumbnail's are its own PNG output),
so each score is the encode's loss alone. Android 2:1 pictures are counted in bytes and scored
in-process (their reference is not written out).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ssimulacra2 import compute_ssimulacra2


def resize(attache, files, out, quality, target=None, score=False):
    args = [attache, "resize", "--max-side", "1024", "--out", out, "--json", "--reference", "--targets", "android"]
    args += ["--quality", quality]
    if target is not None:
        args += ["--quality-target", str(target)]
    if score:
        args.append("--score")
    lines = subprocess.run(args + files, check=True, capture_output=True, text=True).stdout.splitlines()
    return [json.loads(line) for line in lines]


def cap_pictures(attache, files, out, cap):
    """The Android pictures under `cap`, centred (--focus 0.5,0.5) so that every binary cuts the same window."""
    args = [attache, "resize", "--max-side", "1024", "--out", out, "--json", "--targets", "android",
            "--android-max-bytes", str(cap), "--focus", "0.5,0.5"]
    lines = subprocess.run(args + files, check=True, capture_output=True, text=True).stdout.splitlines()
    return [json.loads(line) for line in lines]


def centred_reference(source, width, height, path):
    """The source's centred 2:1 window, upright, resampled (Lanczos) to width x height: one
    reference for every binary's picture of it."""
    from PIL import Image, ImageOps

    image = ImageOps.exif_transpose(Image.open(source)).convert("RGB")
    w, h = image.size
    cw, ch = (round(h * 2), h) if w / h > 2 else (w, round(w / 2))
    left, top = (w - cw) // 2, (h - ch) // 2
    image.crop((left, top, left + cw, top + ch)).resize((width, height), Image.LANCZOS).save(path)


def cap_comparison(files, binaries, cap, work):
    print(f"\nAndroid pictures under {cap:,} bytes (centred crop; scored against the source's window, "
          "Lanczos-resampled to each picture's size, by the public SSIMULACRA2):")
    print("| binary | under the cap | mean bytes | mean width | mean score | lowest | encodes (mean, most) |")
    print("|---|---|---|---|---|---|---|")
    for name, binary in binaries:
        out = os.path.join(work, "cap-" + name.replace(" ", "-"))
        os.makedirs(out, exist_ok=True)
        rows = cap_pictures(binary, files, out, cap)
        under, sizes, widths, scores, encodes = 0, [], [], [], []
        for r in rows:
            target = (r.get("targets") or [{}])[0]
            if "bytes" not in target:
                continue
            under += target["bytes"] <= cap
            sizes.append(target["bytes"])
            widths.append(target["width"])
            encodes.append(target["encodes"])
            reference = os.path.join(out, os.path.basename(target["output"]) + ".reference.png")
            centred_reference(r["file"], target["width"], target["height"], reference)
            scores.append(compute_ssimulacra2(reference, target["output"]))
        print(f"| {name} | {under} of {len(rows)} | {statistics.mean(sizes):,.0f} | {statistics.mean(widths):.0f} "
              f"| {statistics.mean(scores):.1f} | {min(scores):.1f} | {statistics.mean(encodes):.2f}, {max(encodes)} |")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1)))))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--attache", required=True)
    parser.add_argument("--targets", default="70,75,80")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (interleaved)")
    parser.add_argument("--cap", type=int, default=40000, help="the Android cap compared")
    parser.add_argument("--baseline", help="another attache binary (an earlier build) for the cap comparison")
    args = parser.parse_args()
    files = sorted(
        os.path.join(args.folder, f)
        for f in os.listdir(args.folder)
        if f.endswith(".jpg") and "_baseline" not in f
    )
    work = tempfile.mkdtemp(prefix="attache-quality-")
    configs = [("fixed 85", "85", None)] + [(f"auto {t}", "auto", float(t)) for t in args.targets.split(",")]

    # Time: interleaved rounds, in-process milliseconds per file (no --score for fixed).
    times = {name: [] for name, _, _ in configs}
    for _ in range(args.rounds):
        for name, quality, target in configs:
            out = os.path.join(work, "timing")
            os.makedirs(out, exist_ok=True)
            results = resize(args.attache, files, out, quality, target)
            times[name].append(sum(r["ms"] for r in results))

    rows = []
    tracking = []
    for name, quality, target in configs:
        out = os.path.join(work, name.replace(" ", "-"))
        os.makedirs(out, exist_ok=True)
        results = resize(args.attache, files, out, quality, target, score=True)
        scores, ios_bytes, android_bytes, encodes, android_scores = [], 0, 0, [], []
        for r in results:
            stem = os.path.splitext(os.path.basename(r["file"]))[0]
            judged = compute_ssimulacra2(os.path.join(out, stem + ".reference.png"), r["output"])
            scores.append(judged)
            tracking.append((r["score"], judged))
            ios_bytes += r["bytes"]
            encodes.append(r["encodes"])
            for t in r.get("targets", []):
                android_bytes += t["bytes"]
                if t.get("score") is not None:
                    android_scores.append(t["score"])
        rows.append((name, ios_bytes, android_bytes, scores, encodes, android_scores, min(times[name])))

    # vipsthumbnail at Q=85 for reference: its own PNG is its reference.
    vout = os.path.join(work, "vips")
    os.makedirs(vout, exist_ok=True)
    vscores, vbytes, vtime = [], 0, 0.0
    for f in files:
        stem = os.path.splitext(os.path.basename(f))[0]
        start = time.perf_counter()
        subprocess.run(["vipsthumbnail", f, "-s", "1024", "-o", os.path.join(vout, stem + ".jpg[Q=85,strip]")],
                       check=True)
        vtime += (time.perf_counter() - start) * 1000
        subprocess.run(["vipsthumbnail", f, "-s", "1024", "-o", os.path.join(vout, stem + ".png")], check=True)
        vbytes += os.path.getsize(os.path.join(vout, stem + ".jpg"))
        vscores.append(compute_ssimulacra2(os.path.join(vout, stem + ".png"), os.path.join(vout, stem + ".jpg")))

    base = rows[0]
    print(f"{len(files)} photos -> 1024 px (iOS) and 1024x512 (Android), {args.rounds} interleaved timing rounds")
    print("| quality | iOS bytes | Android bytes | all bytes vs fixed 85 | lowest | p5 | mean score "
          "| encodes (mean) | Android score (lowest, mean, in-process) | time vs fixed 85 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, ios, android, scores, encodes, ascores, ms in rows:
        ratio = (ios + android) / (base[1] + base[2])
        shown = f"{min(ascores):.1f}, {statistics.mean(ascores):.1f}" if ascores else "-"
        print(f"| {name} | {ios:,} | {android:,} | {ratio:.3f}x | {min(scores):.1f} | {percentile(scores, 5):.1f} "
              f"| {statistics.mean(scores):.1f} | {statistics.mean(encodes):.2f} | {shown} | {ms / base[6]:.2f}x |")
    print(f"| vipsthumbnail Q=85 | {vbytes:,} | - | - | {min(vscores):.1f} | {percentile(vscores, 5):.1f} "
          f"| {statistics.mean(vscores):.1f} | 1 | - | {vtime / base[6]:.2f}x (process) |")

    inner = [a for a, _ in tracking]
    judge = [b for _, b in tracking]
    diffs = [a - b for a, b in tracking]
    r = statistics.correlation(inner, judge)
    print(f"\nin-process score against the public SSIMULACRA2 on {len(tracking)} outputs: correlation {r:.4f}, "
          f"mean difference {statistics.mean(diffs):+.2f}, worst {max(diffs, key=abs):+.2f}")
    binaries = [("this build", args.attache)] + ([("baseline", args.baseline)] if args.baseline else [])
    cap_comparison(files, binaries, args.cap, work)
    print(f"outputs kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
