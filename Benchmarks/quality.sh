#!/usr/bin/env bash
# Quality chosen per picture (--quality auto) against fixed quality 85 and vipsthumbnail Q=85:
# bytes, SSIMULACRA2 scores from the public implementation (PyPI ssimulacra2), encodes and time,
# and how the in-process score tracks the public one.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
python3 -c "import ssimulacra2" 2>/dev/null || pip install -q ssimulacra2==0.3.0
(cd .. && bash scripts/release.sh --product attache >/dev/null)
python3 quality.py work/jpeg --attache ../.build/release/attache "$@"
