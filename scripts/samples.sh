#!/usr/bin/env bash
# The main job on the bundled samples: inspect every file in Samples/media, then downscale
# each to fit 1024 px into Samples/out (installs missing system packages, builds release).
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
