#!/usr/bin/env bash
# Animated GIF benchmark: attache vs gifsicle --resize-fit vs Pillow frame by frame on four
# 60-frame 1200x675 photo GIFs (a slow zoom into a Lomiri wallpaper photo, made with FFmpeg's
# palettegen/paletteuse), to 480 and 320 px, one core each; then peak RSS of one file.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v gifsicle >/dev/null || need+=(gifsicle)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
mkdir -p work/gif
i=0
for f in $(ls work/jpeg/*_baseline.jpg | head -"$([ "${BENCH_QUICK:-0}" = 1 ] && echo 1 || echo 4)"); do
    i=$((i + 1))
    [ -s "work/gif/photo$i.gif" ] && continue
    ffmpeg -hide_banner -loglevel error -y -i "$f" -vf "scale=2400:-2,zoompan=z='min(zoom+0.004,1.3)':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=60:s=1200x675:fps=15,split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=3" "work/gif/photo$i.gif"
done
. ./binary.sh
if [ "$quick" = 1 ]; then
    python3 gif.py work/gif --attache "$bin" --runs 2 --limit 1
else
    python3 gif.py work/gif --attache "$bin" --runs 3
fi
echo
rm -rf /tmp/attache-gif-rss
r=$(/usr/bin/time -f "%M %e" taskset -c 0 "$bin" resize --max-side 480 --out /tmp/attache-gif-rss work/gif/photo1.gif 2>&1 >/dev/null | tail -1)
echo "attache resize --max-side 480 work/gif/photo1.gif (60 frames, 1200x675): peak RSS $(( ${r% *} / 1024 )) MB, ${r#* } s"
figure "a 60-frame 1200x675 GIF -> 480 px: peak RSS" $(( ${r% *} / 1024 )) MB --lower
