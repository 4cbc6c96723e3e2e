#!/usr/bin/env bash
# Colour management (docs/formats-and-limits.md, "Colour"): what converting an embedded ICC
# profile to sRGB costs, and how close it is to lcms2's own conversion. Release build; the
# benchmark photos (prepare.sh) converted with vips into Display P3, Adobe RGB and ProPhoto RGB,
# each also written untagged with the same JPEG data (the APP2 chunks removed); then, one core,
# best of 5 interleaved, whole process:
#   attache resize --max-side 1024   on the tagged and the untagged file;
#   vipsthumbnail -s 1024 --export-profile srgb   on the tagged file (vips converts too);
# and the mean and largest CIEDE2000 between attache's output and vipsthumbnail's.
#   bash Benchmarks/colour.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
work=$(realpath work)/colour
rm -rf "$work" && mkdir -p "$work"
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
data = open("../Tests/Fixtures/colour/DisplayP3.jpg", "rb").read()
at, profile = 2, b""
while data[at] == 0xFF and data[at + 1] != 0xDA:
    length = data[at + 2] << 8 | data[at + 3]
    if data[at + 1] == 0xE2 and data[at + 4:at + 16] == b"ICC_PROFILE\0":
        profile += data[at + 18:at + 2 + length]
    at += 2 + length
open(f"{work}/DisplayP3.icc", "wb").write(profile)
PY
cp /usr/share/color/icc/colord/AdobeRGB1998.icc /usr/share/color/icc/colord/ProPhotoRGB.icc "$work/" 2>/dev/null ||
    { apt-get install -y -qq colord-data >/dev/null && cp /usr/share/color/icc/colord/{AdobeRGB1998,ProPhotoRGB}.icc "$work/"; }
photos=(Fossa_by_Jasper_Roks Bridge_by_Sander_Klootwijk Dragonfly_by_Bolly) runs=5
[ "$quick" = 1 ] && photos=(Fossa_by_Jasper_Roks) runs=3
for photo in "${photos[@]}"; do
    for profile in DisplayP3 AdobeRGB1998 ProPhotoRGB; do
        vips icc_transform "work/jpeg/$photo.jpg" "$work/t.v" "$work/$profile.icc" --input-profile srgb --intent perceptual
        vips copy "$work/t.v" "$work/$photo-$profile.jpg[Q=92]"
        python3 - "$work/$photo-$profile.jpg" "$work/$photo-$profile-untagged.jpg" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
out, at = data[:2], 2
while data[at] == 0xFF and data[at + 1] != 0xDA:
    length = data[at + 2] << 8 | data[at + 3]
    if data[at + 1] != 0xE2:
        out += data[at:at + 2 + length]
    at += 2 + length
open(sys.argv[2], "wb").write(out + data[at:])
PY
    done
done
rm -f "$work/t.v"
python3 - "$work" "$bin" "$runs" "${photos[@]}" <<'PY'
import math, os, subprocess, sys, time
from PIL import Image
import figures
work, binary, runs, photos = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def run(args):
    start = time.perf_counter()
    subprocess.run(["taskset", "-c", "0"] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000
def lab(c):
    def lin(v):
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = map(lin, c)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = lambda t: t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))
def de2000(p, q):
    (l1, a1, b1), (l2, a2, b2) = lab(p), lab(q)
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    cm = (c1 + c2) / 2
    g = 0.5 * (1 - math.sqrt(cm ** 7 / (cm ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h = lambda b, a: 0 if a == 0 and b == 0 else math.degrees(math.atan2(b, a)) % 360
    h1, h2 = h(b1, a1p), h(b2, a2p)
    dl, dc = l2 - l1, c2p - c1p
    dh = 0 if c1p * c2p == 0 else (h2 - h1 + 180) % 360 - 180
    dH = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lm, cpm = (l1 + l2) / 2, (c1p + c2p) / 2
    hm = h1 + h2 if c1p * c2p == 0 else ((h1 + h2) / 2 if abs(h1 - h2) <= 180 else (h1 + h2 + 360) / 2 % 360)
    t = 1 - 0.17 * math.cos(math.radians(hm - 30)) + 0.24 * math.cos(math.radians(2 * hm)) \
        + 0.32 * math.cos(math.radians(3 * hm + 6)) - 0.20 * math.cos(math.radians(4 * hm - 63))
    dt = 30 * math.exp(-((hm - 275) / 25) ** 2)
    rc = 2 * math.sqrt(cpm ** 7 / (cpm ** 7 + 25 ** 7))
    sl = 1 + 0.015 * (lm - 50) ** 2 / math.sqrt(20 + (lm - 50) ** 2)
    sc, sh = 1 + 0.045 * cpm, 1 + 0.015 * cpm * t
    return math.sqrt((dl / sl) ** 2 + (dc / sc) ** 2 + (dH / sh) ** 2 - math.sin(math.radians(2 * dt)) * rc * (dc / sc) * (dH / sh))
print("| file (one core, best of 5 interleaved) | attache untagged ms | attache tagged ms | ICC cost | vipsthumbnail ms | attache / vips speed | ΔE2000 mean / max vs vips |")
print("|---|---|---|---|---|---|---|")
sums = {"u": 0, "t": 0, "v": 0}
for photo in photos:
    for profile in ["DisplayP3", "AdobeRGB1998", "ProPhotoRGB"]:
        tagged = f"{work}/{photo}-{profile}.jpg"
        untagged = f"{work}/{photo}-{profile}-untagged.jpg"
        out = f"{work}/out-{profile}"
        best = {"u": 1e9, "t": 1e9, "v": 1e9}
        for _ in range(runs):
            best["u"] = min(best["u"], run([binary, "resize", "--max-side", "1024", "--quality", "85", "--out", out + "-u", untagged]))
            best["t"] = min(best["t"], run([binary, "resize", "--max-side", "1024", "--quality", "85", "--out", out, tagged]))
            best["v"] = min(best["v"], run(["vipsthumbnail", tagged, "-s", "1024", "--export-profile", "srgb",
                                            "-o", f"{work}/vips-%s.jpg[Q=85]"]))
        ours = Image.open(f"{out}/{photo}-{profile}.jpg").convert("RGB")
        theirs = Image.open(f"{work}/vips-{photo}-{profile}.jpg").convert("RGB").resize(ours.size)
        step = max(1, ours.width * ours.height // 4000)
        flat = lambda im: getattr(im, "get_flattened_data", im.getdata)()
        pixels = list(zip(flat(ours), flat(theirs)))[::step]
        errors = [de2000(a, b) for a, b in pixels]
        print(f"| {photo} {profile} | {best['u']:.0f} | {best['t']:.0f} | {best['t'] / best['u'] - 1:+.0%} | "
              f"{best['v']:.0f} | {best['v'] / best['t']:.2f}x | {sum(errors) / len(errors):.2f} / {max(errors):.1f} |")
        for k in sums:
            sums[k] += best[k]
count = len(photos) * 3
figures.record("ICC-tagged JPEGs -> sRGB 1024 px: throughput", count * 1000 / sums["t"], "images/s",
               peer="vipsthumbnail --export-profile srgb", peer_value=count * 1000 / sums["v"], goal=">= 1.0x")
figures.record("ICC-tagged JPEGs: time of the conversion", sums["t"] / count, "ms",
               peer="attache, the same file untagged", peer_value=sums["u"] / count, better="lower", goal="<= 1.10x")
PY
