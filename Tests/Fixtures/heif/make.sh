#!/usr/bin/env bash
# Makes the HEIC and AVIF fixtures (committed; run again only to change them) with the
# formats' own encoders: heif-enc (libheif-examples 1.19 with the x265 plugin) and avifenc
# (libavif-bin). A photo, a photo with a thumbnail, a cropped 2x2 grid, alpha, 10- and 12-bit,
# a grid turned and mirrored (irot, imir), and the colour patches of ../colour in Display P3,
# once with the ICC profile embedded (HEIC, lossless) and once named by nclx code points only
# (AVIF 12/13/0, lossless), and an iOS 18-shaped file with a gain map (gainmap.c). Needs: libheif-examples, libheif-plugin-x265, libavif-bin,
# libvips-tools, python3-pil.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vips thumbnail ../../../Samples/media/waterfall-rotated.jpg "$work/photo.png" 400 --size both
python3 - "$work" <<'PY'
import sys
from PIL import Image
work = sys.argv[1]
photo = Image.open(f"{work}/photo.png").convert("RGB")
w, h = photo.size
# A grid of 2x2 tiles of 256x192 holding a 400x300 image (the grid is cropped, as an iPhone's is).
canvas = Image.new("RGB", (512, 384), (0, 0, 0))
canvas.paste(photo.resize((400, 300)), (0, 0))
for ty in range(2):
    for tx in range(2):
        canvas.crop((tx * 256, ty * 192, tx * 256 + 256, ty * 192 + 192)).save(f"{work}/tile-{ty:02d}-{tx:02d}.png")
photo.resize((400, 300)).save(f"{work}/photo300.png")
# Alpha: red left half opaque, blue right half half-transparent on top and clear below.
im = Image.new("RGBA", (120, 80), (0, 0, 0, 0))
for y in range(80):
    for x in range(120):
        im.putpixel((x, y), (255, 40, 40, 255) if x < 60 else (40, 40, 255, 128 if y < 40 else 0))
im.save(f"{work}/alpha.png")
# Orientation marks: a 256x192 image, red top-left quarter, green top-right, blue bottom-left.
im = Image.new("RGB", (256, 192), (255, 255, 255))
for y in range(192):
    for x in range(256):
        if y < 96 and x < 128: im.putpixel((x, y), (255, 0, 0))
        elif y < 96: im.putpixel((x, y), (0, 255, 0))
        elif x < 128: im.putpixel((x, y), (0, 0, 255))
im.save(f"{work}/marks.png")
PY
heif-enc -q 60 "$work/photo.png" -o photo.heic
heif-enc -q 60 -t 64 "$work/photo.png" -o thumbnail.heic
heif-enc -q 60 -T "$work/tile-00-00.png" --tiled-image-width 400 --tiled-image-height 300 -o grid.heic
heif-enc -q 80 "$work/alpha.png" -o alpha.heic
heif-enc -L ../colour/DisplayP3.png -o DisplayP3.heic
# A grid of 32x32 tiles of 16x16 (1,025 items: over libheif's default item limit of 1,000).
mkdir "$work/small"
python3 -c "
from PIL import Image
for ty in range(32):
    for tx in range(32):
        Image.new('RGB', (16, 16), (tx * 8, ty * 8, 128)).save('$work/small/tile-%02d-%02d.png' % (ty, tx))"
heif-enc -q 20 -T "$work/small/tile-00-00.png" --tiled-image-width 512 --tiled-image-height 512 \
    -o grid-1024-tiles.heic >/dev/null
avifenc --min 20 --max 30 -s 8 "$work/photo.png" photo.avif >/dev/null
avifenc --min 10 --max 20 -s 8 "$work/alpha.png" alpha.avif >/dev/null
avifenc --min 20 --max 30 -s 8 -d 10 "$work/photo.png" 10bit.avif >/dev/null
avifenc --min 20 --max 30 -s 8 -d 12 -y 444 "$work/photo.png" 12bit.avif >/dev/null
avifenc -l -s 8 -g 2x2 --irot 1 "$work/marks.png" marks-grid-irot.avif >/dev/null
avifenc -l -s 8 --imir 1 "$work/marks.png" marks-imir.avif >/dev/null
avifenc -l -s 8 --ignore-icc --cicp 12/13/0 ../colour/DisplayP3.png DisplayP3.avif >/dev/null
# A flat grey 7000x7000 monochrome AVIF (1 KB) that dav1d 1.0 refuses and aom decodes.
python3 -c "from PIL import Image; Image.new('L', (7000, 7000), 128).save('$work/grey.png')"
avifenc -s 10 -y 400 --min 40 --max 63 "$work/grey.png" gray-7000-dav1d-refuses.avif >/dev/null
# An iOS 18-shaped HEIC (gain map as Apple's auxiliary image with its own XMP, a tmap item),
# written through libheif's item API by gainmap.c.
gcc gainmap.c -o "$work/gainmap" -lheif && "$work/gainmap" gainmap.heic
ls -l
