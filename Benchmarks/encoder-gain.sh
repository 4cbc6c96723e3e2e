#!/usr/bin/env bash
# What the thorough JPEG encoder (--jpeg-encoder thorough: trellis quantisation) saves against the
# fast one, at an equal public SSIMULACRA2: each photo of a set cut to 1024 px, both encoders at
# qualities 60-94 with jpegli's tables at 4:2:0 as auto writes them (encoder-gain.c;
# TABLES=robidoux: Robidoux's), every file scored against the pixels it was made from
# (encoder_gain.py, PyPI ssimulacra2), and the two curves of bytes against score compared over
# scores 70-88. The lomiri photos (the photo benchmark) are the set
# its constants were chosen on; plasma and ukui report. BENCH_QUICK=1: four photos of one set.
#   bash Benchmarks/encoder-gain.sh [SET...]     (default: lomiri plasma ukui)
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
codec_harness work/encoder-gain encoder-gain.c
python3 -c 'import ssimulacra2' 2>/dev/null || pip install -q ssimulacra2
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(lomiri plasma ukui)
for set in "${sets[@]}"; do
    photos=(work/"$set"/*.jpg)
    [ "$quick" = 1 ] && photos=("${photos[@]:0:4}")
    out=work/encoder-gain-$set
    rm -rf "$out" && mkdir -p "$out"
    work/encoder-gain "$out" 60,68,75,82,88,94 "${photos[@]}" >"$out/encodes.tsv"
    echo "== $set (${#photos[@]} photos)"
    python3 encoder_gain.py "$out" "$out/encodes.tsv"
    [ "$quick" = 1 ] && break
done
