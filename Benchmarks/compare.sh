#!/usr/bin/env bash
# Runs the comparison of docs/benchmarks.md's first tables: attache vs vipsthumbnail vs Pillow on the
# same photos, one core each, plus peak RSS of single large files.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
(cd .. && bash scripts/release.sh --product attache >/dev/null)
bin=../.build/release/attache
cc -O2 -o work/floor floor.c -ljpeg
python3 compare.py work/jpeg --size 1024 --runs 3 --attache "$bin" --floor work/floor
for only in baseline progressive; do
    python3 compare.py work/jpeg --only "$only" --no-psnr --size 1024 --runs 3 --attache "$bin" --floor work/floor
done
python3 compare.py work/png --size 1024 --runs 3 --attache "$bin"
echo
echo "| file (options) | attache resize --max-side 1024: peak RSS MB | wall s | outcome |"
echo "|---|---|---|---|"
for f in work/big/48mp-baseline.jpg work/big/100mp-baseline.jpg work/big/48mp-progressive.jpg work/big/48mp.png \
    work/big/48mp-progressive.jpg+cap; do
    extra=()
    case "$f" in
    *100mp*) extra=(--max-pixels 120000000) ;;
    *+cap) f=${f%+cap}; extra=(--max-decoder-memory 335544320) ;;
    esac
    rm -rf /tmp/attache-rss
    r=$(/usr/bin/time -f "%M %e" taskset -c 0 "$bin" resize --max-side 1024 "${extra[@]}" --out /tmp/attache-rss "$f" 2>&1 >/tmp/attache-rss.out | tail -1)
    outcome=$(cut -f2,3 /tmp/attache-rss.out | tr '\t' ' ')
    echo "| $f ${extra[*]} | $(( ${r% *} / 1024 )) | ${r#* } | $outcome |"
done
