#!/usr/bin/env bash
# Stored size against source size: every image of Samples/media, the shared corpus and the
# benchmark photos (work/jpeg, work/png, work/gif) through `attache resize --max-side 1024`
# (the rendition the pipeline stores), with the counts of outputs larger than their source,
# of sources kept (metadata removed), and of outputs carrying EXIF, GPS, text or comments.
#   bash Benchmarks/sizes.sh                       this build
#   ATTACHE_BEFORE=/path/to/attache bash Benchmarks/sizes.sh   and bytes saved against another build
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
[ -d work/gif ] && [ "$(ls work/gif | wc -l)" -ge 4 ] || bash gif.sh >/dev/null
. ./binary.sh
corpus=${ATTACHE_CORPUS:-../../shared/corpus}
python3 sizes.py --attache "$bin" ${ATTACHE_BEFORE:+--before "$ATTACHE_BEFORE"} \
    ../Samples/media "$corpus" work/jpeg work/png work/gif
