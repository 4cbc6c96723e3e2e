#!/usr/bin/env bash
# A progressive photo's scans read by the shim (Sources/CAttacheCodecs/jpeg_scans.c) against
# libjpeg reading them: each progressive photo of work/jpeg (and the 48 MP progressive one of
# work/big) decoded at 1/4 scale through the shim's decoder both ways, one after the other, best
# of 7 each, with `djpeg -scale 1/4` (libjpeg-turbo's own tool) beside them; time and a digest
# of the pixels (the same both ways), then the totals.
#   bash Benchmarks/scans.sh [ROUNDS=1]
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
shim=../Sources/CAttacheCodecs
cc -O2 -I"$shim" -I"$shim/include" -I../Sources/CAttacheShim/include -o work/scans scans.c "$shim/jpeg.c" \
    "$shim/jpeg_common.c" "$shim/jpeg_coefficients.c" "$shim/jpeg_scans.c" "$shim/jpeg_scan_decode.c" "$shim/icc.c" \
    ../Sources/CAttacheShim/shim.c -ljpeg -llcms2 -lpthread -lm
djpeg_best() {
    local best=999999 start took
    for _ in 1 2 3 4 5 6 7; do
        start=$(date +%s%N)
        djpeg -scale 1/4 -outfile /dev/null "$1"
        took=$((($(date +%s%N) - start) / 1000))
        [ "$took" -lt "$best" ] && best=$took
    done
    awk -v b="$best" 'BEGIN { printf "%.1f", b / 1000 }'
}
files=()
for f in work/jpeg/*.jpg work/big/48mp-progressive.jpg; do
    case "$f" in *_baseline.jpg) continue ;; esac
    python3 -c 'import sys; from PIL import Image; sys.exit(0 if Image.open(sys.argv[1]).info.get("progressive") else 1)' "$f" \
        && files+=("$f")
done
total_libjpeg=0 total_shim=0 total_djpeg=0
for round in $(seq 1 "${1:-1}"); do
    for f in "${files[@]}"; do
        a=$(work/scans "$f" 0)
        b=$(work/scans "$f" 1)
        d=$(djpeg_best "$f")
        ta=$(echo "$a" | cut -f3 | cut -d' ' -f1)
        tb=$(echo "$b" | cut -f3 | cut -d' ' -f1)
        same=$([ "$(echo "$a" | cut -f5)" = "$(echo "$b" | cut -f5)" ] && echo "same pixels" || echo "PIXELS DIFFER")
        printf '%s\tlibjpeg %s ms\tshim %s ms (%s)\tdjpeg %s ms\t%.2fx\t%s\n' "$(basename "$f")" "$ta" "$tb" \
            "$(echo "$b" | cut -f4)" "$d" "$(awk -v a="$ta" -v b="$tb" 'BEGIN { print a / b }')" "$same"
        total_libjpeg=$(awk -v t="$total_libjpeg" -v a="$ta" 'BEGIN { print t + a }')
        total_shim=$(awk -v t="$total_shim" -v a="$tb" 'BEGIN { print t + a }')
        total_djpeg=$(awk -v t="$total_djpeg" -v a="$d" 'BEGIN { print t + a }')
    done
done
printf 'all %d photos: libjpeg %.1f ms, shim %.1f ms, djpeg %.1f ms: the shim %.2fx libjpeg, %.2fx djpeg\n' \
    "${#files[@]}" "$total_libjpeg" "$total_shim" "$total_djpeg" "$(awk -v a="$total_libjpeg" -v b="$total_shim" 'BEGIN { print a / b }')" \
    "$(awk -v a="$total_djpeg" -v b="$total_shim" 'BEGIN { print a / b }')"
