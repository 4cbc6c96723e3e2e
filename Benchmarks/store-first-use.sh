#!/usr/bin/env bash
# Shared-store first use: PROCS processes do their first `attache store put` on one fresh store
# at the same moment, TRIALS times; every put must succeed and every token printed must open.
#   bash Benchmarks/store-first-use.sh [BIN] [PROCS=64] [TRIALS=20]
set -u
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
    bash scripts/release.sh --product attache >/dev/null
    bin=$(swift build -c release --show-bin-path)/attache
fi
procs=${2:-64}; trials=${3:-20}
file=Samples/media/gray.jpg
work=$(mktemp -d); failed=0; refused=0; tokens=0
for t in $(seq 1 "$trials"); do
    root=$work/store-$t
    for p in $(seq 1 "$procs"); do "$bin" store put --json --store "$root" "$file" > "$work/out-$t-$p" 2>&1 & done
    wait
    for p in $(seq 1 "$procs"); do
        line=$(cat "$work/out-$t-$p")
        id=$(echo "$line" | python3 -c 'import sys,json; d=json.loads(sys.stdin.read()); print(d["id"], d["token"])' 2>/dev/null)
        if [ -z "$id" ]; then failed=$((failed+1)); continue; fi
        tokens=$((tokens+1))
        set -- $id
        "$bin" store open --store "$root" --token "$2" --out "$work/open-$t-$p" "$1" > /dev/null 2>&1 || refused=$((refused+1))
    done
done
rm -rf "$work"
echo "$procs processes x $trials trials: $failed puts failed, $tokens tokens printed, $refused refused"
