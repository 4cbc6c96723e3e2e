#!/usr/bin/env bash
# Makes the JPEG XL fixtures (committed; run again only to change them) with libjxl's own
# encoder (cjxl, libjxl-tools 0.7): a lossy photo (XYB), a lossless image with alpha, the
# colour patches of ../colour in Display P3 lossless (the profile kept) and lossy (XYB), a
# photo whose codestream says "turn 90° clockwise" (from a JPEG with EXIF orientation 6), a
# 16-bit PNG, a two-frame animation (most files bare codestreams, the photo in the container), and a flat 9000x9000 image (81 MP,
# over the pixel limit, 200 bytes). Needs: libjxl-tools, libvips-tools, python3-pil.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vips thumbnail ../../../Samples/media/waterfall-rotated.jpg "$work/photo.png" 400 --size both
vips thumbnail ../../../Samples/media/waterfall-rotated.jpg "$work/turned.jpg" 400 --no-rotate
python3 - "$work" <<'PY'
import sys
from PIL import Image
work = sys.argv[1]
im = Image.new("RGBA", (120, 80), (0, 0, 0, 0))
for y in range(80):
    for x in range(120):
        im.putpixel((x, y), (255, 40, 40, 255) if x < 60 else (40, 40, 255, 128 if y < 40 else 0))
im.save(f"{work}/alpha.png")

Image.new("RGB", (64, 48), (30, 160, 90)).save(f"{work}/f1.png")
Image.new("RGB", (64, 48), (200, 60, 90)).save(f"{work}/f2.png")
frames = [Image.open(f"{work}/f1.png"), Image.open(f"{work}/f2.png")]
frames[0].save(f"{work}/anim.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)
Image.new("RGB", (9000, 9000), (90, 90, 90)).save(f"{work}/huge.png", compress_level=1)
PY
cjxl -q 85 --container=1 "$work/photo.png" photo.jxl
cjxl -d 0 "$work/alpha.png" alpha.jxl
cjxl -d 0 ../colour/DisplayP3.png DisplayP3-lossless.jxl
cjxl -q 95 ../colour/DisplayP3.png DisplayP3-lossy.jxl
cjxl -q 85 --lossless_jpeg=0 "$work/turned.jpg" turned.jxl
vips colourspace "$work/photo.png" "$work/deep.png" rgb16
cjxl -q 85 "$work/deep.png" 16bit.jxl
cjxl -d 0 "$work/anim.gif" animated.jxl
cjxl -d 0 -e 1 "$work/huge.png" huge.jxl
# expected.json: the lossy P3 file's patch centres as libjxl decodes them (djxl, in P3) converted
# to sRGB by lcms2 (vips icc_transform, perceptual, black-point compensation).
djxl DisplayP3-lossy.jxl "$work/p3.png" >/dev/null 2>&1
vips icc_transform "$work/p3.png" "$work/srgb.png" srgb --intent perceptual --black-point-compensation
python3 - "$work" <<'PY'
import json, sys
from PIL import Image
im = Image.open(f"{sys.argv[1]}/srgb.png").convert("RGB")
patches = [list(im.getpixel(((i % 4) * 8 + 4, (i // 4) * 8 + 4))) for i in range(16)]
json.dump({"DisplayP3-lossy.jxl": patches}, open("expected.json", "w"))
PY
ls -l
