#!/usr/bin/env bash
# Makes the WebP fixtures (committed; run again only to change them) with libwebp's own tools
# (webp package): a lossy photo, a lossless image with alpha, an opaque lossless one, a lossy
# one with alpha, and a two-frame animation. Needs: webp, libvips-tools, python3-pil.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vips thumbnail ../../../Samples/media/waterfall-rotated.jpg "$work/photo.png" 400
python3 - "$work" <<'PY'
import sys
from PIL import Image
work = sys.argv[1]
im = Image.new("RGBA", (120, 80), (0, 0, 0, 0))
for y in range(80):
    for x in range(120):
        im.putpixel((x, y), (255, 40, 40, 255) if x < 60 else (40, 40, 255, 128 if y < 40 else 0))
im.save(f"{work}/alpha.png")
Image.new("RGB", (64, 48), (30, 160, 90)).save(f"{work}/flat.png")
Image.new("RGB", (64, 48), (200, 60, 90)).save(f"{work}/flat2.png")
# Twelve frames of a red square moving over a transparent 160x120 canvas.
for i in range(12):
    im = Image.new("RGBA", (160, 120), (0, 0, 0, 0))
    for y in range(40, 80):
        for x in range(i * 10, i * 10 + 40):
            im.putpixel((x, y), (230, 30, 30, 255))
    im.save(f"{work}/move{i:02d}.png")
PY
cwebp -quiet -q 80 "$work/photo.png" -o lossy.webp
cwebp -quiet -lossless "$work/alpha.png" -o lossless-alpha.webp
cwebp -quiet -lossless "$work/flat.png" -o lossless-opaque.webp
cwebp -quiet -q 80 -alpha_q 100 "$work/alpha.png" -o lossy-alpha.webp
img2webp -loop 0 -d 100 "$work/flat.png" "$work/flat2.png" -o animated.webp
# Lossy with alpha, played three times, 70 ms a frame (the GIF keeps 7 cs).
img2webp -loop 3 -lossy -q 80 -d 70 "$work"/move*.png -o moving-alpha.webp
