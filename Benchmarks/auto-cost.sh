#!/usr/bin/env bash
# What `--quality auto` costs over one fixed encode: `attache resize --max-side 1024` of the
# lomiri and plasma photos (binary.sh's photo_sets) at the defaults against `--quality 80
# --jpeg-tables jpegli` (the same first encode, no score), ROUNDS rounds interleaved (default
# 3), user + system CPU of each process. Prints each round and the ratio's range.
#   bash Benchmarks/auto-cost.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
rounds=${ROUNDS:-3}
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
ratios=() worst=0
for round in $(seq "$rounds"); do
    auto=$(cpu)
    fixed=$(cpu --quality 80 --jpeg-tables jpegli)
    ratio=$(python3 -c "print(f'{$auto / $fixed:.3f}')")
    ratios+=("$ratio")
    # The figure is the round with the highest ratio.
    if python3 -c "import sys; sys.exit(0 if $ratio > $worst else 1)"; then worst=$ratio worst_auto=$auto worst_fixed=$fixed; fi
    echo "round $round: auto ${auto}s, fixed 80 ${fixed}s, ${ratio}x (${#photos[@]} photos)"
done
low=$(printf '%s\n' "${ratios[@]}" | sort -n | head -1)
high=$(printf '%s\n' "${ratios[@]}" | sort -n | tail -1)
echo "auto / fixed: ${low}-${high}x"
figure "quality auto: CPU against one fixed encode" "$worst_auto" s --peer "--quality 80" \
    --peer-value "$worst_fixed" --lower --goal "<= 1.10x"
