#!/usr/bin/env bash
# Quality chosen per picture (--quality auto) against fixed quality 85 and vipsthumbnail Q=85:
# bytes, SSIMULACRA2 scores from the public implementation (PyPI ssimulacra2), encodes and time,
# and how the in-process score tracks the public one; then every tool at its defaults (attache,
# thumbor at QUALITY 80, vipsthumbnail Q=75 and Q=85) on three photo sets, scored against one
# Lanczos-3 reference of each fully decoded source: the photo benchmark (lomiri-wallpapers,
# which the defaults were calibrated on) and two the calibration never saw, chosen by a rule
# before any result: every JPEG of plasma-workspace-wallpapers (each theme's largest) and of
# ukui-wallpapers.
# CURVES=1 then draws each tool's curve of bytes against score, photo by photo (thumbor at
# QUALITY 60-90, the batch's defaults at quality targets 65-88: peer_curves.py): what the encoder
# saves at an equal score, apart from where each tool's defaults sit.
#   bash Benchmarks/quality.sh [quality.py options]      PEERS=0 skips the peer comparison
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
python3 -c "import ssimulacra2" 2>/dev/null || pip install -q ssimulacra2==0.3.0
command -v thumbor >/dev/null || pip install -q thumbor
. ./binary.sh
need_packages libvips-tools
# BENCH_QUICK=1: the peers on four photos of the benchmark set, nothing else.
[ "$quick" = 1 ] || python3 quality.py work/jpeg --attache "$bin" "$@"
[ "${PEERS:-1}" = 0 ] && exit 0
photo_sets
if [ "$quick" = 1 ]; then
    python3 quality_peers.py --attache "$bin" --set lomiri=work/lomiri --limit 4
else
    python3 quality_peers.py --attache "$bin" --set lomiri=work/lomiri --set plasma=work/plasma --set ukui=work/ukui
fi
if [ "${CURVES:-0}" = 1 ]; then
    python3 peer_curves.py --attache "$bin" --attache-args "--jpeg-encoder thorough" \
        --set lomiri=work/lomiri --set plasma=work/plasma --set ukui=work/ukui
fi
