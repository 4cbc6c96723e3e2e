#!/usr/bin/env bash
# A multi-scan JPEG's coefficients packed against libjpeg's arrays: each progressive photo of
# work/jpeg decoded at 1/4 scale both ways, interleaved, best of 7 each; time, libjpeg's arrays,
# the bound said before the decode, what the packed rows held at most, and a digest of the
# pixels (the same both ways).
#   bash Benchmarks/coefficients.sh [ROUNDS=2]
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
shim=../Sources/CAttacheCodecs
cc -O2 -I"$shim" -I"$shim/include" -I../Sources/CAttacheShim/include -o work/coefficients coefficients.c \
    "$shim/jpeg_coefficients.c" -ljpeg -lpthread
for round in $(seq 1 "${1:-2}"); do
    for f in work/jpeg/*.jpg; do
        case "$f" in *_baseline.jpg) continue ;; esac
        python3 -c 'import sys; from PIL import Image; sys.exit(0 if Image.open(sys.argv[1]).info.get("progressive") else 1)' "$f" \
            || continue
        work/coefficients "$f" 0
        work/coefficients "$f" 1
    done
done
