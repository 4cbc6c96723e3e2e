#!/usr/bin/env bash
# WebP inputs (docs/formats-and-limits.md, "WebP"): three benchmark photos made into WebP by
# cwebp (lossy -q 80, and lossless -z 1), then `attache resize --max-side 1024` against
# `vipsthumbnail -s 1024` on the same files: one core, whole process, best of 5 interleaved.
#   bash Benchmarks/webp.sh            (BENCH_QUICK=1: one photo, best of 3)
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
command -v cwebp >/dev/null || (apt-get install -y -qq webp >/dev/null)
. ./binary.sh
work=$(realpath work)/webp
rm -rf "$work" && mkdir -p "$work"
photos=(Fossa_by_Jasper_Roks Bridge_by_Sander_Klootwijk Dragonfly_by_Bolly) runs=5
[ "$quick" = 1 ] && photos=(Fossa_by_Jasper_Roks) runs=3
for photo in "${photos[@]}"; do
    vips copy "work/jpeg/$photo.jpg" "$work/$photo.png"
    cwebp -quiet -q 80 "$work/$photo.png" -o "$work/$photo-lossy.webp"
    cwebp -quiet -lossless -z 1 "$work/$photo.png" -o "$work/$photo-lossless.webp"
    rm "$work/$photo.png"
done
python3 - "$work" "$bin" "$runs" "${photos[@]}" <<'PY'
import os, subprocess, sys, time
import figures
work, binary, runs, photos = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def run(args):
    start = time.perf_counter()
    subprocess.run(["taskset", "-c", "0"] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000
print("| file (one core, best of 5 interleaved, to 1024 px) | bytes | attache ms | vipsthumbnail ms | attache / vips speed |")
print("|---|---|---|---|---|")
totals = {}
for photo in photos:
    for kind in ["lossy", "lossless"]:
        path = f"{work}/{photo}-{kind}.webp"
        a = v = 1e9
        for _ in range(runs):
            a = min(a, run([binary, "resize", "--max-side", "1024", "--quality", "85", "--out", f"{work}/out", path]))
            v = min(v, run(["vipsthumbnail", path, "-s", "1024", "-o", f"{work}/vips-%s.jpg[Q=85]"]))
        print(f"| {photo} {kind} | {os.path.getsize(path):,} | {a:.0f} | {v:.0f} | {v / a:.2f}x |")
        ta, tv = totals.get(kind, (0, 0))
        totals[kind] = (ta + a, tv + v)
for kind, (a, v) in totals.items():
    figures.record(f"{kind} WebP photos -> 1024 px: throughput", len(photos) * 1000 / a, "images/s",
                   peer="vipsthumbnail", peer_value=len(photos) * 1000 / v, goal=">= 1.0x")
PY
