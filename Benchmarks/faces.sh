#!/usr/bin/env bash
# Faces: the 2:1 crop of portraits with a busy half, by attention, by --faces (OpenCV's LBP
# cascade), by vips' attention and by OpenCV's Haar cascade; what --faces costs on the photo set.
# BENCH_QUICK=1: the five faces above two busy photos (10 portraits), four photos of the set.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
need=()
for p in python3-opencv opencv-data opencv-doc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
. ./binary.sh
build_product AttacheFaces libAttacheFaces.so
/usr/bin/python3 faces.py work/jpeg --attache "$bin"
