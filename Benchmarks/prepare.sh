#!/usr/bin/env bash
# Builds the benchmark photo folders under Benchmarks/work from Debian packages:
#   work/jpeg  real photos (lomiri wallpapers, 1.5-24 MP, mostly progressive) and a baseline
#              twin of each progressive one (jpegtran, lossless)
#   work/png   eight of the photos as non-interlaced RGB PNG (vips, zlib level 6)
#   work/big   a 48 MP and a 100 MP baseline JPEG, a 48 MP progressive JPEG, a 48 MP PNG
set -euo pipefail
cd "$(dirname "$0")"
# Made once: every step runs this first, and its checks take seconds each time.
[ work/.prepared -nt prepare.sh ] && exit 0
need=()
for p in libvips-tools libjpeg-turbo-progs gifsicle time lomiri-wallpapers-16.04 lomiri-wallpapers-20.04; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -c "import PIL, numpy" 2>/dev/null || pip install -q pillow numpy

mkdir -p work/jpeg work/png work/big
# Only the lomiri packages' photos (other packages, ukui-wallpapers among them, share the folder).
for f in $(dpkg -L lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 | grep '^/usr/share/backgrounds/.*\.jpg$'); do
    b=$(basename "$f" .jpg)
    cp -n "$f" "work/jpeg/$b.jpg"
    if python3 -c "import sys; from PIL import Image; sys.exit(0 if Image.open('$f').info.get('progressive') else 1)"; then
        [ -f "work/jpeg/${b}_baseline.jpg" ] || jpegtran -optimize -copy all -outfile "work/jpeg/${b}_baseline.jpg" "$f"
    fi
done
for b in Bridge_by_Sander_Klootwijk Fossa_by_Jasper_Roks Wine_by_Jakkub_Mede aitzgorri_by_Aitzol_Berasategi \
    free_by_Peter_Nerlich greentock_by_Peter_Nerlich picosdeeuropa_by_Aitzol_Berasategi umang_by_Abhishek_Mudgal; do
    [ -f "work/png/$b.png" ] || vips copy "/usr/share/backgrounds/$b.jpg" "work/png/$b.png[compression=6]"
done
src=/usr/share/backgrounds/Painting-Colors_by__herobrine7gamer.jpg
[ -f work/big/48mp-baseline.jpg ] || vips resize "$src" "work/big/48mp-baseline.jpg[Q=90]" 1.4142
[ -f work/big/100mp-baseline.jpg ] || vips resize "$src" "work/big/100mp-baseline.jpg[Q=90]" 2.0412
[ -f work/big/48mp-progressive.jpg ] || jpegtran -progressive -outfile work/big/48mp-progressive.jpg work/big/48mp-baseline.jpg
[ -f work/big/48mp.png ] || vips copy work/big/48mp-baseline.jpg "work/big/48mp.png[compression=6]"
touch work/.prepared
ls -la work/jpeg work/png work/big | grep -c '\.jpg\|\.png'
