#!/usr/bin/env bash
# Android, web and icon pictures: what they add to the iOS rendition's time (one decode), the
# byte caps, and crop quality against vipsthumbnail's attention crop and a centre crop.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
(cd .. && bash scripts/release.sh --product attache >/dev/null)
python3 targets.py work/jpeg --attache ../.build/release/attache "$@"
