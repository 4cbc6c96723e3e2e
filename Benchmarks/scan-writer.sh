#!/usr/bin/env bash
# The progressive scans the shim writes from libjpeg's coefficients (Sources/CAttacheCodecs/
# jpeg_scan_writer.c) against libjpeg writing the same scans, and one baseline scan beside them:
# each photo of the three photo sets at 1024 px, as `auto` encodes it, both encoders, the best of
# ROUNDS (default 5) each, interleaved; the files compared byte for byte (scan-writer.c).
#   bash Benchmarks/scan-writer.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
photo_sets
codec_harness work/scan-writer scan-writer.c
work/scan-writer "${1:-5}" work/lomiri/*.jpg work/plasma/*.jpg work/ukui/*.jpg
