#!/usr/bin/env bash
# The main job on the bundled samples: inspect every file in Samples/media, then downscale
# each to fit 1024 px into Samples/out, store the renditions in Samples/out/store and open one
# with its scoped token (installs missing system packages, builds release).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
swift build -c release --product attache
bin=$(swift build -c release --show-bin-path)/attache
out=${1:-Samples/out}
echo "== attache inspect Samples/media/*"
"$bin" inspect Samples/media/*
echo "== attache resize --max-side 1024 --out $out Samples/media/*"
"$bin" resize --max-side 1024 --out "$out" Samples/media/*
store="$out/store"
echo "== attache store put --store $store $out/*  (the renditions, each stored once)"
"$bin" store put --store "$store" --ttl 1d --token-ttl 10m "$out"/*.* | cut -c1-150
first=$("$bin" store put --store "$store" --json "$out"/*.jpg | head -1)
id=$(echo "$first" | sed -E 's/.*"id":"([0-9a-f]+)".*/\1/')
token=$(echo "$first" | sed -E 's/.*"token":"([^"]+)".*/\1/')
echo "== attache store open $id --token <its token>, then with a forged one"
"$bin" store open --store "$store" --token "$token" --out "$out/opened.jpg" "$id"
"$bin" store open --store "$store" --token "${token%?????}AAAAA" --out "$out/forged.jpg" "$id" || true
echo "== attache store stats / verify / gc --dry-run"
"$bin" store stats --store "$store"
"$bin" store verify --store "$store"
"$bin" gc --store "$store" --dry-run
