#!/usr/bin/env bash
# HEIC, AVIF and JPEG XL inputs (docs/formats-and-limits.md): three benchmark photos (9-13 MP)
# made into HEIC (heif-enc -q 50, x265), AVIF (avifenc, 4:2:0 8-bit, quantizer 20-30) and JPEG XL
# (cjxl -q 85), and a 48 MP iPhone-shaped HEIC (8064x6048 in a grid of 16x12 tiles of 512 px);
# then `attache resize --max-side 1024` against `vipsthumbnail -s 1024` on the same files: one
# core, whole process, best of 5 interleaved; peak RSS (GNU time) for the 48 MP file.
#   bash Benchmarks/modern.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
for tool in heif-enc avifenc cjxl vipsthumbnail; do
    command -v "$tool" >/dev/null || (apt-get install -y -qq libheif-examples libavif-bin libjxl-tools libvips-tools >/dev/null)
done
dpkg-query -W libheif-plugin-x265 >/dev/null 2>&1 || apt-get install -y -qq -t bookworm-backports libheif-plugin-x265 >/dev/null
(cd .. && bash scripts/release.sh --product attache >/dev/null)
bin=$(cd .. && swift build -c release --show-bin-path)/attache
work=$(realpath work)/modern
mkdir -p "$work"
photos=(Fossa_by_Jasper_Roks Bridge_by_Sander_Klootwijk Dragonfly_by_Bolly)
for photo in "${photos[@]}"; do
    [ -f "$work/$photo.jxl" ] && continue
    vips copy "work/jpeg/$photo.jpg" "$work/$photo.png"
    heif-enc -q 50 "$work/$photo.png" -o "$work/$photo.heic" >/dev/null
    avifenc -s 6 --min 20 --max 30 -y 420 "$work/$photo.png" "$work/$photo.avif" >/dev/null
    cjxl -q 85 "$work/$photo.png" "$work/$photo.jxl" >/dev/null 2>&1
    rm "$work/$photo.png"
done
if [ ! -f "$work/grid48.heic" ]; then
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
python3 - "$work" "$bin" "${photos[@]}" <<'PY'
import os, subprocess, sys, time
work, binary, photos = sys.argv[1], sys.argv[2], sys.argv[3:]
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
files = [f"{p}.{ext}" for ext in ["heic", "avif", "jxl"] for p in photos] + ["grid48.heic"]
for name in files:
    path = f"{work}/{name}"
    a = v = 1e9
    for _ in range(5):
        a = min(a, run(attache(path)))
        v = min(v, run(vips(path)))
    print(f"| {name} | {os.path.getsize(path):,} | {a:.0f} | {v:.0f} | {v / a:.2f}x |")
path = f"{work}/grid48.heic"
print(f"\n48 MP HEIC to 1024 px, peak RSS: attache {peak(attache(path)):.0f} MB, vipsthumbnail {peak(vips(path)):.0f} MB")
PY
