#!/usr/bin/env bash
# The platform preview (attache preview): its time, its page's size, and headless Chromium's
# time to load and to draw it, for a portrait, a panorama, an animated GIF and an FCM body with
# three pictures. `--screenshots DIR` keeps Chromium's screenshots (docs/images holds them).
set -euo pipefail
cd "$(dirname "$0")"
(cd .. && bash scripts/browser.sh && bash scripts/release.sh --product attache >/dev/null)
bin=$PWD/../.build/release/attache
media=$(mktemp -d /tmp/attache-preview-media.XXXXXX)
cp ../Samples/media/{portrait-progressive.jpg,animated-chi.gif,waterfall-rotated.jpg} "$media/"
# A 5:1 panorama: the middle fifth of the portrait (stored upright).
ffmpeg -loglevel error -y -i ../Samples/media/portrait-progressive.jpg -vf "crop=iw:ih*0.2:0:ih*0.45" -q:v 2 \
    "$media/panorama.jpg"
port=$((30000 + RANDOM % 20000))
"$bin" serve-files --port "$port" "$media" > "$media/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$media"' EXIT
for _ in $(seq 1 100); do grep -q serving "$media/server.log" 2>/dev/null && break; sleep 0.1; done
python3 preview.py --attache "$bin" --base "http://127.0.0.1:$port" "$@"
