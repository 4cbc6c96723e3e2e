#!/usr/bin/env bash
# What `--quality auto` costs over one fixed encode: `attache resize --max-side 1024` of the
# lomiri and plasma photos (binary.sh's photo_sets) at the defaults against `--quality 80
# --jpeg-tables jpegli` (the same first encode, no score), ROUNDS rounds interleaved (default
# 5), user + system CPU of each process. Prints each round, the median round's ratio (the
# figure) and the range.
#   bash Benchmarks/auto-cost.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
rounds=${ROUNDS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
photos=(work/lomiri/*.jpg work/plasma/*.jpg)
[ "$quick" = 1 ] && photos=("${photos[@]:0:4}") rounds=1
# cpu ARGS...: seconds of CPU (user + system) one resize of every photo takes.
cpu() {
    /usr/bin/time -f "%U %S" -o "$out/time" "$bin" resize --max-side 1024 --format jpeg --out "$out" "$@" \
        "${photos[@]}" >/dev/null
    awk '{ printf "%.2f", $1 + $2 }' "$out/time"
}
ratios=() rows=()
for round in $(seq "$rounds"); do
    auto=$(cpu)
    fixed=$(cpu --quality 80 --jpeg-tables jpegli)
    ratio=$(python3 -c "print(f'{$auto / $fixed:.3f}')")
    ratios+=("$ratio")
    rows+=("$ratio $auto $fixed")
    echo "round $round: auto ${auto}s, fixed 80 ${fixed}s, ${ratio}x (${#photos[@]} photos)"
done
low=$(printf '%s\n' "${ratios[@]}" | sort -n | head -1)
high=$(printf '%s\n' "${ratios[@]}" | sort -n | tail -1)
# The figure is the median round's, as run.py takes the median of a step's rounds: the highest of
# a few rounds would grow with their number on a machine whose other load comes and goes. The
# range is printed beside it.
read -r median median_auto median_fixed < <(printf '%s\n' "${rows[@]}" | sort -n -k1,1 | sed -n "$(((rounds + 1) / 2))p")
echo "auto / fixed: ${median}x the median round (${low}-${high}x)"
figure "quality auto: CPU against one fixed encode" "$median_auto" s --peer "--quality 80" \
    --peer-value "$median_fixed" --lower --goal "<= 1.10x"
