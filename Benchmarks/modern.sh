#!/usr/bin/env bash
# HEIC, AVIF and JPEG XL inputs (docs/formats-and-limits.md): three benchmark photos (9-13 MP)
# made into HEIC (heif-enc -q 50, x265), AVIF (avifenc, 4:2:0 8-bit, quantizer 20-30) and JPEG XL
# (cjxl -q 85), and a 48 MP iPhone-shaped HEIC (8064x6048 in a grid of 16x12 tiles of 512 px);
# then `attache resize --max-side 1024` against `vipsthumbnail -s 1024` on the same files: one
# core, whole process, best of 5 interleaved; peak RSS (GNU time) for the 48 MP file.
#   bash Benchmarks/modern.sh          (BENCH_QUICK=1: one photo, best of 3, no 48 MP file)
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
# heif-enc and its HEVC encoder from bookworm-backports, beside the libheif 1.19 Attache links.
for tool in heif-enc avifenc cjxl vipsthumbnail; do
    command -v "$tool" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports \
        libheif-examples libavif-bin libjxl-tools libvips-tools >/dev/null
done
dpkg-query -W -f='${Status}' libheif-plugin-x265 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports libheif-plugin-x265 >/dev/null
. ./binary.sh
work=$(realpath work)/modern
mkdir -p "$work"
photos=(Fossa_by_Jasper_Roks Bridge_by_Sander_Klootwijk Dragonfly_by_Bolly) runs=5
[ "$quick" = 1 ] && photos=(Fossa_by_Jasper_Roks) runs=3
for photo in "${photos[@]}"; do
    [ -f "$work/$photo.jxl" ] && continue
    vips copy "work/jpeg/$photo.jpg" "$work/$photo.png"
    heif-enc -q 50 "$work/$photo.png" -o "$work/$photo.heic" >/dev/null
    avifenc -s 6 --min 20 --max 30 -y 420 "$work/$photo.png" "$work/$photo.avif" >/dev/null
    cjxl -q 85 "$work/$photo.png" "$work/$photo.jxl" >/dev/null 2>&1
    rm "$work/$photo.png"
done
if [ "$quick" = 0 ] && [ ! -f "$work/grid48.heic" ]; then
    tiles=$(mktemp -d)
    python3 - "$tiles" work/jpeg/Dragonfly_by_Bolly.jpg <<'PY'
import sys
from PIL import Image
tiles, source = sys.argv[1], sys.argv[2]
big = Image.open(source).convert("RGB").resize((8192, 6144), Image.LANCZOS)
for ty in range(12):
    for tx in range(16):
        big.crop((tx * 512, ty * 512, tx * 512 + 512, ty * 512 + 512)).save(f"{tiles}/tile-{ty:02d}-{tx:02d}.png", compress_level=1)
PY
    heif-enc -q 50 -T "$tiles/tile-00-00.png" --tiled-image-width 8064 --tiled-image-height 6048 -o "$work/grid48.heic" >/dev/null
    rm -rf "$tiles"
fi
python3 - "$work" "$bin" "$runs" "$quick" "${photos[@]}" <<'PY'
import os, subprocess, sys, time
import figures
work, binary, runs, quick, photos = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5:]
def run(args):
    start = time.perf_counter()
    subprocess.run(["taskset", "-c", "0"] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000
def peak(args):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + args, check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr.strip().splitlines()[-1]
    return int(out) / 1024
attache = lambda path: [binary, "resize", "--max-side", "1024", "--quality", "85", "--out", f"{work}/out", path]
vips = lambda path: ["vipsthumbnail", path, "-s", "1024", "-o", f"{work}/vips-%s.jpg[Q=85]"]
print("| file (one core, best of 5 interleaved, to 1024 px) | bytes | attache ms | vipsthumbnail ms | attache / vips speed |")
print("|---|---|---|---|---|")
files = [f"{p}.{ext}" for ext in ["heic", "avif", "jxl"] for p in photos] + ([] if quick else ["grid48.heic"])
totals = {}
for name in files:
    path = f"{work}/{name}"
    a = v = 1e9
    for _ in range(runs):
        a = min(a, run(attache(path)))
        v = min(v, run(vips(path)))
    print(f"| {name} | {os.path.getsize(path):,} | {a:.0f} | {v:.0f} | {v / a:.2f}x |")
    if name != "grid48.heic":
        kind = {"heic": "HEIC", "avif": "AVIF", "jxl": "JPEG XL"}[name.rsplit(".", 1)[1]]
        ta, tv = totals.get(kind, (0, 0))
        totals[kind] = (ta + a, tv + v)
for kind, (a, v) in totals.items():
    figures.record(f"{kind} photos -> 1024 px: throughput", len(photos) * 1000 / a, "images/s",
                   peer="vipsthumbnail", peer_value=len(photos) * 1000 / v, goal=">= 1.0x")
if not quick:
    path = f"{work}/grid48.heic"
    ours, theirs = peak(attache(path)), peak(vips(path))
    print(f"\n48 MP HEIC to 1024 px, peak RSS: attache {ours:.0f} MB, vipsthumbnail {theirs:.0f} MB")
    figures.record("48 MP HEIC grid -> 1024 px: peak RSS", ours, "MB", peer="vipsthumbnail", peer_value=theirs,
                   better="lower")
PY
