#!/usr/bin/env bash
# The parts of one `--quality auto` encode, each C function timed alone (score-parts.c) on the
# first 16 lomiri and plasma photos at 1024 px, ROUNDS rounds (default 5).
#   bash Benchmarks/score-parts.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
c=../Sources/CAttacheCodecs
# clang, as SwiftPM compiles the C targets (gcc -O2 does not vectorise them).
clang -O2 -I"$c/include" -I../Sources/CAttacheShim/include -o work/score-parts score-parts.c "$c/quality.c" \
    "$c/blocking.c" "$c/jpeg.c" "$c/jpeg_coefficients.c" "$c/icc.c" "$c/util.c" ../Sources/CAttacheShim/shim.c \
    -ljpeg -llcms2 -lm -lpthread
photos=(work/lomiri/*.jpg work/plasma/*.jpg)
work/score-parts "${1:-5}" "${photos[@]:0:16}"
