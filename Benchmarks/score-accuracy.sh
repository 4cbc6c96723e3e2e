#!/usr/bin/env bash
# How closely the in-process score tracks the public SSIMULACRA2 (PyPI ssimulacra2), and what
# pooling a sample of rows at the two largest scales costs in accuracy: the 42 photos of the
# three sets (binary.sh's photo_sets) at 1024 px, each encoded at quality 50, 65, 80 and 90,
# scored in-process as quality.c samples them and with every row pooled (quality.c with EVERY
# = 1, built here), and by the public implementation. Prints the differences (after the search's
# 0.20 calibration): mean, standard deviation and worst, over all and where the public score is
# 68 or more. About 10 minutes on two cores.
#   bash Benchmarks/score-accuracy.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
python3 -c "import ssimulacra2" 2>/dev/null || pip install -q ssimulacra2==0.3.0
c=../Sources/CAttacheCodecs
out=work/score-accuracy
rm -rf "$out" && mkdir -p "$out/sampled" "$out/every"
sed 's/SAMPLE = 16, EVERY = 4/SAMPLE = 16, EVERY = 1/' "$c/quality.c" > "$out/quality-every-row.c"
grep -q 'EVERY = 1' "$out/quality-every-row.c" || { echo "quality.c's sampling constants moved" >&2; exit 1; }
rest=("$c/quality_planes.c" "$c/blocking.c" "$c/jpeg.c" "$c/jpeg_common.c" "$c/jpeg_encode.c" "$c/jpeg_chroma.c" "$c/jpeg_trellis.c"
    "$c/jpeg_progressive.c" "$c/jpeg_scan_writer.c" "$c/jpeg_held.c"
    "$c/jpeg_coefficients.c" "$c/jpeg_scans.c" "$c/jpeg_scan_decode.c" "$c/icc.c" "$c/util.c" ../Sources/CAttacheShim/shim.c)
flags=(-O2 -I"$c/include" -I../Sources/CAttacheShim/include)
clang "${flags[@]}" -o "$out/sampled.bin" score-accuracy.c "$c/quality.c" "${rest[@]}" -ljpeg -llcms2 -lm -lpthread
clang "${flags[@]}" -o "$out/every.bin" score-accuracy.c "$out/quality-every-row.c" "${rest[@]}" -ljpeg -llcms2 -lm \
    -lpthread
photos=(work/lomiri/*.jpg work/plasma/*.jpg work/ukui/*.jpg)
"$out/sampled.bin" "$out/sampled" "${photos[@]}" > "$out/sampled.txt"
"$out/every.bin" "$out/every" "${photos[@]}" > "$out/every.txt"
python3 - "$out" <<'PY'
import os, statistics, sys
from multiprocessing import Pool
from PIL import Image
import ssimulacra2
out = sys.argv[1]
def read(name):
    return {tuple(line.split()[:2]): float(line.split()[2]) for line in open(f"{out}/{name}.txt")}
sampled, every = read("sampled"), read("every")
def public(key):
    n, q = key
    png = f"{out}/sampled/{n}.png"
    return key, ssimulacra2.compute_ssimulacra2(png, f"{out}/sampled/{n}_{q}.jpg")
for n in sorted({k[0] for k in sampled}):
    Image.open(f"{out}/sampled/{n}.ppm").save(f"{out}/sampled/{n}.png")
with Pool(os.cpu_count()) as pool:
    judged = dict(pool.map(public, sorted(sampled)))
calibration = 0.2
print(f"{len(judged)} encodes of {len({k[0] for k in judged})} photos")
print("| in-process | against the public score: mean, sd, worst | where the public is >= 68 |")
print("|---|---|---|")
for name, scores in (("quality.c (sampled)", sampled), ("every row pooled", every)):
    def line(keys):
        d = [scores[k] - calibration - judged[k] for k in keys]
        return f"{statistics.mean(d):+.2f}, {statistics.pstdev(d):.2f}, {max(abs(x) for x in d):.2f}"
    high = [k for k in judged if judged[k] >= 68]
    print(f"| {name} | {line(list(judged))} | {line(high)} |")
PY
