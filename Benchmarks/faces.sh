#!/usr/bin/env bash
# Faces: the 2:1 crop of portraits with a busy half, by attention, by --faces (OpenCV's LBP
# cascade), by vips' attention and by OpenCV's Haar cascade; what --faces costs on the photo set.
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
(cd .. && bash scripts/release.sh --product attache >/dev/null && bash scripts/release.sh --product AttacheFaces >/dev/null)
/usr/bin/python3 faces.py work/jpeg --attache ../.build/release/attache
