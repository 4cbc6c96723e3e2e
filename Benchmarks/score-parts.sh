#!/usr/bin/env bash
# The parts of one `--quality auto` encode, each C function timed alone (score-parts.c) on the
# first 16 lomiri and plasma photos at 1024 px, ROUNDS rounds (default 5).
#   bash Benchmarks/score-parts.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
codec_harness work/score-parts score-parts.c
photos=(work/lomiri/*.jpg work/plasma/*.jpg)
work/score-parts "${1:-5}" "${photos[@]:0:16}"
