#!/usr/bin/env python3
"""Compare `attache resize` with vipsthumbnail and Pillow on the same photos, one core each.

For every tool: one process over the whole folder under `taskset -c 0` and `/usr/bin/time -v`,
giving throughput (images/s), the ratio to vipsthumbnail, peak RSS, total output bytes, and the
mean PSNR of each output against a reference resize of the same photo (full decode, EXIF
orientation applied, Lanczos-3 in 32-bit float per channel, to the tool's own output size).
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageOps

import figures

PILLOW_SCRIPT = r"""
import sys
from PIL import Image, ImageOps
size, out, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
for f in files:
    im = Image.open(f)
    if im.format == "JPEG":
        im.draft("RGB", (size, size))
    im = ImageOps.exif_transpose(im)
    im.thumbnail((size, size), Image.LANCZOS)
    name = f.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if f.lower().endswith(".png"):
        im.save(f"{out}/{name}.png", optimize=False, compress_level=6)
    else:
        im.convert("RGB").save(f"{out}/{name}.jpg", quality=85, optimize=True)
"""


def timed(cmd):
    """Runs cmd on core 0 under /usr/bin/time -v; returns (seconds, peak RSS in MB)."""
    full = ["/usr/bin/time", "-v", "taskset", "-c", "0"] + cmd
    p = subprocess.run(full, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd[:3])}...\n{p.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    seconds = (int(h) * 3600 if h else 0) + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) / 1024
    return seconds, rss


def reference(path, size_wh):
    im = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    chans = [c.convert("F").resize(size_wh, Image.LANCZOS) for c in im.split()]
    return np.stack([np.asarray(c, dtype=np.float64) for c in chans], axis=-1)


def psnr(out_path, ref):
    out = np.asarray(Image.open(out_path).convert("RGB"), dtype=np.float64)
    mse = np.mean((out - np.clip(ref, 0, 255)) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)


def record(results, count, kind):
    """The figures of one folder for Benchmarks/run.sh: throughput against each peer, peak RSS,
    bytes and PSNR against vipsthumbnail's."""
    a, vips = results["attache"], results["vipsthumbnail"]
    what = f"{kind} photos -> 1024 px"
    for peer in ("vipsthumbnail", "pillow"):
        figures.record(f"{what}: throughput vs {peer}", count / a["seconds"], "images/s", peer=peer,
                       peer_value=count / results[peer]["seconds"], goal=">= 1.0x")
    figures.record(f"{what}: peak RSS", a["rss"], "MB", peer="vipsthumbnail", peer_value=vips["rss"], better="lower")
    figures.record(f"{what}: output bytes", a["bytes"], "bytes", peer="vipsthumbnail", peer_value=vips["bytes"],
                   better="lower")
    if "psnr" in a:
        figures.record(f"{what}: mean PSNR", a["psnr"], "dB", peer="vipsthumbnail", peer_value=vips["psnr"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--attache", default="../.build/release/attache")
    ap.add_argument("--runs", type=int, default=1, help="best of N timed runs per tool")
    ap.add_argument("--no-psnr", action="store_true")
    ap.add_argument("--floor", help="floor.c built: adds libjpeg-turbo alone (JPEG folders only)")
    ap.add_argument("--only", choices=["progressive", "baseline"], help="JPEG folders: only these files")
    ap.add_argument("--limit", type=int, help="the first N files only (a quick run)")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.folder, "*.jpg")) + glob.glob(os.path.join(args.folder, "*.png")))
    files = files[: args.limit] if args.limit else files
    if args.only:
        want = args.only == "progressive"
        files = [f for f in files if bool(Image.open(f).info.get("progressive")) == want]
    if not files:
        sys.exit(f"no .jpg or .png files in {args.folder}")
    png = files[0].endswith(".png")
    ext = "png" if png else "jpg"
    vips_opts = "[compression=6,strip]" if png else "[Q=85,optimize_coding,strip]"
    work = tempfile.mkdtemp(prefix="attache-bench-")
    tools = {
        "attache": lambda out: [args.attache, "resize", "--max-side", str(args.size), "--quality", "85", "--out", out] + files,
        "vipsthumbnail": lambda out: ["vipsthumbnail", "--size", str(args.size), "-o", f"{out}/%s.{ext}{vips_opts}"] + files,
        "pillow": lambda out: [sys.executable, "-c", PILLOW_SCRIPT, str(args.size), out] + files,
    }
    if args.floor and not png:
        # Not a resize: the decode and encode libjpeg-turbo does for attache, nothing else.
        tools["libjpeg-turbo floor"] = lambda out: [args.floor, str(args.size), out] + files
        # Its decode alone (nothing written): the most any resize built on it could reach.
        tools["libjpeg-turbo decode only"] = lambda out: [args.floor, "--decode-only", str(args.size), out] + files
    results = {}
    for name, make in tools.items():
        best = None
        for _ in range(args.runs):
            out = os.path.join(work, name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            seconds, rss = timed(make(out))
            if best is None or seconds < best[0]:
                best = (seconds, rss)
        outputs = sorted(glob.glob(os.path.join(work, name, "*")))
        if name.startswith("libjpeg-turbo decode"):
            results[name] = dict(seconds=best[0], rss=best[1])
            continue
        if len(outputs) != len(files):
            sys.exit(f"{name} wrote {len(outputs)} files for {len(files)} inputs")
        size = sum(os.path.getsize(p) for p in outputs)
        results[name] = dict(seconds=best[0], rss=best[1], bytes=size, outputs=outputs)
    if not args.no_psnr:
        for name, r in results.items():
            if name.startswith("libjpeg-turbo"):
                continue
            scores = []
            for f in files:
                stem = os.path.basename(f).rsplit(".", 1)[0]
                out = os.path.join(work, name, f"{stem}.{ext}")
                w, h = Image.open(out).size
                scores.append(psnr(out, reference(f, (w, h))))
            r["psnr"] = sum(scores) / len(scores)
    vips = results["vipsthumbnail"]
    megapixels = sum(w * h for w, h in (Image.open(f).size for f in files)) / 1e6
    only = f" ({args.only} only)" if args.only else ""
    print(f"{len(files)} files{only}, {megapixels:.0f} MP in all, {args.folder} -> {args.size} px, one core")
    print(f"| tool | images/s | vs vipsthumbnail | peak RSS MB | output bytes | vs vips bytes | mean PSNR dB |")
    print(f"|---|---|---|---|---|---|---|")
    for name, r in results.items():
        ips = len(files) / r["seconds"]
        ratio = vips["seconds"] / r["seconds"]
        p = f"{r['psnr']:.2f}" if "psnr" in r else "-"
        size = f"{r['bytes']} | {r['bytes'] / vips['bytes']:.2f}x" if "bytes" in r else "- | -"
        print(f"| {name} | {ips:.2f} | {ratio:.2f}x | {r['rss']:.0f} | {size} | {p} |")
    if not args.only:
        record(results, len(files), "PNG" if png else "JPEG")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
