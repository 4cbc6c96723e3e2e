#!/usr/bin/env bash
# Encoder variants against libjpeg's own encode with Robidoux's tables at 4:2:0, at an equal
# SSIMULACRA2 (encoder-variants.c, encoder_variants.py): each photo of a set at 1024 px, every
# variant at qualities 60-94, bytes compared along each photo's curve over scores 70-88. By
# default the variants docs/quality.md reports: the chroma sharpened for the decoder (what
# `auto` writes), the thorough encoder without and with it, progressive scans, the chroma
# table scaled against the luma's. VARIANTS=... chooses others (see encoder-variants.c);
# PUBLIC=1 scores every encode again with the public SSIMULACRA2 (about 2 s an encode).
# BENCH_QUICK=1: four photos of one set.
#   bash Benchmarks/encoder-variants.sh [SET...]     (default: lomiri plasma ukui)
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
codec_harness work/encoder-variants encoder-variants.c
python3 -c 'import ssimulacra2' 2>/dev/null || pip install -q ssimulacra2
default="base:1:0:fast:half;sharp:1:0:fast:sharp;thorough:1:0:thorough:half;thorough-sharp:1:0:thorough:sharp"
default+=";progressive:1:1:fast:half;chroma-0.8:0.8:0:fast:half;chroma-1.6:1.6:0:fast:half"
variants=${VARIANTS:-$default}
public=()
[ "${PUBLIC:-0}" = 1 ] && public=(--public)
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(lomiri plasma ukui)
for set in "${sets[@]}"; do
    photos=(work/"$set"/*.jpg)
    [ "$quick" = 1 ] && photos=("${photos[@]:0:4}")
    out=work/encoder-variants-$set
    rm -rf "$out" && mkdir -p "$out"
    work/encoder-variants "$out" 60,68,75,82,88,94 "$variants" "${photos[@]}" >"$out/encodes.tsv"
    echo "== $set (${#photos[@]} photos)"
    python3 encoder_variants.py "$out" "$out/encodes.tsv" "${public[@]}"
    [ "$quick" = 1 ] && break
done
