#!/usr/bin/env bash
# Runs the comparison of docs/benchmarks.md's first tables: attache vs vipsthumbnail vs Pillow on the
# same photos, one core each, plus peak RSS of single large files. BENCH_QUICK=1: six files of
# each folder, best of 2, the 48 MP baseline JPEG alone.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
runs=3 limit=() big=(work/big/48mp-baseline.jpg work/big/100mp-baseline.jpg work/big/48mp-progressive.jpg work/big/48mp.png
    work/big/48mp-progressive.jpg+cap)
[ "$quick" = 1 ] && runs=2 limit=(--limit 6) big=(work/big/48mp-baseline.jpg)
cc -O2 -o work/floor floor.c -ljpeg
python3 compare.py work/jpeg --size 1024 --runs "$runs" "${limit[@]}" --attache "$bin" --floor work/floor
if [ "$quick" = 0 ]; then
    for only in baseline progressive; do
        python3 compare.py work/jpeg --only "$only" --no-psnr --size 1024 --runs 3 --attache "$bin" --floor work/floor
    done
fi
python3 compare.py work/png --size 1024 --runs "$runs" "${limit[@]}" --attache "$bin"
echo
echo "| file (options) | attache resize --max-side 1024: peak RSS MB | wall s | outcome |"
echo "|---|---|---|---|"
for f in "${big[@]}"; do
    extra=()
    case "$f" in
    *100mp*) extra=(--max-pixels 120000000) ;;
    *+cap) f=${f%+cap}; extra=(--max-decoder-memory 335544320) ;;
    esac
    rm -rf /tmp/attache-rss
    r=$(/usr/bin/time -f "%M %e" taskset -c 0 "$bin" resize --max-side 1024 "${extra[@]}" --out /tmp/attache-rss "$f" 2>&1 >/tmp/attache-rss.out | tail -1)
    outcome=$(cut -f2,3 /tmp/attache-rss.out | tr '\t' ' ')
    echo "| $f ${extra[*]} | $(( ${r% *} / 1024 )) | ${r#* } | $outcome |"
    case "$f ${extra[*]}" in
    "work/big/48mp-baseline.jpg ") figure "48 MP baseline JPEG -> 1024 px: peak RSS" $(( ${r% *} / 1024 )) MB --lower ;;
    esac
done
