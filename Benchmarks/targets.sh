#!/usr/bin/env bash
# Android, web and icon pictures: what they add to the iOS rendition's time (one decode), the
# byte caps, and crop quality against vipsthumbnail's attention crop and a centre crop.
# BENCH_QUICK=1: four photos, one run, eight portraits.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
python3 targets.py work/jpeg --attache "$bin" "$@"
