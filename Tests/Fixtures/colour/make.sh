#!/usr/bin/env bash
# Makes the colour fixtures (committed; run again only to change them): 16 colour patches of
# 8x8 pixels in sRGB, converted with lcms2 (through vips) into Display P3 (made here from its
# primaries and the sRGB curve), Adobe RGB (1998), ProPhoto RGB and colord's
# SwappedRedAndGreen, each saved as a JPEG (Q95) and a PNG with its profile embedded, and into
# ghostscript's CMYK profile as a CMYK JPEG (Adobe's inverted CMYK, as vips writes it); and
# expected.json, the patch centres of each file converted back to sRGB by lcms2 (perceptual,
# black-point compensation) — what a colour-managed viewer shows.
# Needs: libvips-tools, colord-data, libgs-common, liblcms2-2, python3-pil.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import ctypes, sys
from PIL import Image
work = sys.argv[1]
colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255),
           (128, 64, 32), (200, 200, 200), (30, 30, 30), (250, 128, 114), (60, 179, 113),
           (70, 130, 180), (255, 215, 0), (138, 43, 226), (255, 255, 255), (0, 0, 0)]
im = Image.new("RGB", (32, 32))
for i, c in enumerate(colours):
    for y in range((i // 4) * 8, (i // 4) * 8 + 8):
        for x in range((i % 4) * 8, (i % 4) * 8 + 8):
            im.putpixel((x, y), c)
im.save(f"{work}/patches.png")
# Display P3: DCI-P3 primaries, D65, the sRGB transfer curve (parametric type 4).
lcms = ctypes.CDLL("liblcms2.so.2")
class xyY(ctypes.Structure): _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("Y", ctypes.c_double)]
class Triple(ctypes.Structure): _fields_ = [("r", xyY), ("g", xyY), ("b", xyY)]
lcms.cmsBuildParametricToneCurve.restype = ctypes.c_void_p
lcms.cmsBuildParametricToneCurve.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
params = (ctypes.c_double * 5)(2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045)
curve = lcms.cmsBuildParametricToneCurve(None, 4, params)
curves = (ctypes.c_void_p * 3)(curve, curve, curve)
lcms.cmsCreateRGBProfile.restype = ctypes.c_void_p
lcms.cmsCreateRGBProfile.argtypes = [ctypes.POINTER(xyY), ctypes.POINTER(Triple), ctypes.c_void_p]
white = xyY(0.3127, 0.3290, 1.0)
primaries = Triple(xyY(0.680, 0.320, 1.0), xyY(0.265, 0.690, 1.0), xyY(0.150, 0.060, 1.0))
profile = lcms.cmsCreateRGBProfile(ctypes.byref(white), ctypes.byref(primaries), curves)
lcms.cmsSaveProfileToFile.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lcms.cmsSaveProfileToFile(profile, f"{work}/DisplayP3.icc".encode())
PY
cp /usr/share/color/icc/colord/{AdobeRGB1998,ProPhotoRGB,SwappedRedAndGreen}.icc "$work/"
for name in DisplayP3 AdobeRGB1998 ProPhotoRGB SwappedRedAndGreen; do
    vips icc_transform "$work/patches.png" "$work/$name.v" "$work/$name.icc" --input-profile srgb --intent perceptual
    vips copy "$work/$name.v" "$name.jpg[Q=95]"
    vips copy "$work/$name.v" "$name.png"
done
vips icc_transform "$work/patches.png" "$work/cmyk.v" /usr/share/color/icc/ghostscript/ps_cmyk.icc \
    --input-profile srgb --intent perceptual
vips copy "$work/cmyk.v" "CMYK.jpg[Q=95]"
python3 - <<'PY'
import json, subprocess, tempfile
from PIL import Image
expected = {}
names = ["DisplayP3", "AdobeRGB1998", "ProPhotoRGB", "SwappedRedAndGreen"]
for file in [f"{name}.{ext}" for name in names for ext in ["jpg", "png"]] + ["CMYK.jpg"]:
    with tempfile.NamedTemporaryFile(suffix=".png") as out:
        subprocess.run(["vips", "icc_transform", file, out.name, "srgb", "--intent", "perceptual", "--embedded"],
                       check=True)
        im = Image.open(out.name).convert("RGB")
        expected[file] = [list(im.getpixel(((i % 4) * 8 + 4, (i // 4) * 8 + 4))) for i in range(16)]
open("expected.json", "w").write("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in expected.items()) + "\n}\n")
PY
