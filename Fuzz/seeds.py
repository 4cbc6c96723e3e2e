#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the project's own fixtures and the shared corpus:
python3 seeds.py WORK writes WORK/<target>/seeds/."""
import glob
import re
import os
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
corpus = os.environ.get("ATTACHE_CORPUS", os.path.join(os.path.dirname(root), "shared", "corpus"))
work = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "runs")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(target, name, data):
    folder = os.path.join(work, target, "seeds")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def app1(jpeg):
    """The EXIF payload after `Exif\\0\\0` of a JPEG's first APP1, or None."""
    i = 2
    while i + 4 <= len(jpeg) and jpeg[i] == 0xFF:
        marker, length = jpeg[i + 1], struct.unpack(">H", jpeg[i + 2:i + 4])[0]
        segment = jpeg[i + 4:i + 2 + length]
        if marker == 0xE1 and segment.startswith(b"Exif\0\0"):
            return segment[6:]
        if marker == 0xDA:
            return None
        i += 2 + length
    return None


for path in glob.glob(os.path.join(root, "Samples", "payloads", "*.json")):
    write("json", os.path.basename(path), read(path))
for i, text in enumerate([b'{"aps":{"mutable-content":1},"att":{"a":"https://x/1.jpg","b":"https://x/2.png"}}',
                          b'{"a":[1,2.5e-3,-0,"\\u00e9\\ud83d\\ude00",true,false,null],"b":{}}', b'[]', b'"s"']):
    write("json", "inline-%d.json" % i, text)

media = glob.glob(os.path.join(root, "Samples", "media", "*"))
for path in media:
    write("sniffer", os.path.basename(path), read(path)[:64])

jpegs = sorted(glob.glob(os.path.join(corpus, "exif-orientation", "*.jpg")))
for path in jpegs:
    exif = app1(read(path))
    if exif:
        write("exif", os.path.basename(path) + ".tiff", exif)
for path in sorted(glob.glob(os.path.join(corpus, "jpeg-variants", "*.jpg")))[:40] + jpegs[:6]:
    data = read(path)
    if len(data) < 200_000 and data[:3] == b"\xff\xd8\xff":
        write("image", "j-" + os.path.basename(path), b"\0" + data[3:])
# Multi-scan JPEGs (progressive, and a scan per component), rewritten by jpegtran, with the
# scale byte varied: the packed coefficients are checked against libjpeg's arrays on them.
import subprocess, tempfile
with tempfile.NamedTemporaryFile("w", suffix=".txt") as script:
    script.write("0;\n1;\n2;\n")
    script.flush()
    for i, path in enumerate(sorted(glob.glob(os.path.join(corpus, "jpeg-variants", "*.jpg")))[:12] + jpegs[:2]):
        for name, options in [("prog", ["-progressive"]), ("scans", ["-scans", script.name])]:
            try:
                done = subprocess.run(["jpegtran"] + options + [path], capture_output=True)
            except FileNotFoundError:  # libjpeg-turbo-progs missing: no multi-scan seeds
                break
            if done.returncode == 0 and len(done.stdout) < 200_000:
                write("image", f"m-{name}-" + os.path.basename(path), bytes([2 * (i % 8) + 4]) + done.stdout[3:])
for path in sorted(glob.glob(os.path.join(corpus, "pngsuite", "*.png")))[:60]:
    data = read(path)
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        write("image", "p-" + os.path.basename(path), b"\1" + data[8:])

for path in sorted(glob.glob(os.path.join(corpus, "gif-edge-cases", "*.gif")) + glob.glob(os.path.join(corpus, "giflib-pics", "*.gif"))):
    data = read(path)
    if len(data) < 300_000 and data[:3] == b"GIF":
        write("gif", os.path.basename(path), data[6:])

for i, token in enumerate([b"AQAAAAL" + b"A" * 108, b"", b"A" * 115, b"%%%", b"AQAAAAEAAAA-_"]):
    write("token", "token-%d" % i, token)

# Head: download GETs as devices, edges and wrk write them, and near misses.
target = b"/attachments/AQAAAAHs_J7f3PNi0CIA9pmh9kRzDgkKFltMBSUxfuejeLQT7gEAAAAAawk4gA/ecfc9edfdcf362d0.jpg"
for i, head in enumerate([
        b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
        b"GET " + target + b"?a=1 HTTP/1.1\r\nHost: edge\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
        b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\nGET " + target + b" HTTP/1.1\r\n\r\n",
        b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n\r\n",
        b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx",
        b"GET " + target + b" HTTP/1.1\r\nHost:\tb\r\nX:  \r\n\r\n"]):
    write("head", "head-%d" % i, head)

for i, url in enumerate([b"https://example.com/a.jpg", b"http://[::1]:8080/x?y=1#z", b"http://2130706433/",
                         b"http://0x7f.1/", b"https://user:pw@host/", b"ftp://h/f", b"http://\xe2\x98\x83.com/",
                         bytes([127, 0, 0, 1]), bytes([169, 254, 169, 254]), bytes(16),
                         bytes([0xfe, 0x80] + [0] * 13 + [1]), bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1])]):
    write("url", "url-%d" % i, url)

# Seal: the published segment vectors (under the target's key, bytes 0..31), the payload-seal
# vectors, and keys as devices export them.
doc = read(os.path.join(root, "docs", "sealed-attachments.md")).decode()
for i, hexed in enumerate(re.findall(r"`(41545331[0-9a-f]+)`", doc)):
    write("seal", "stream-%d" % i, bytes.fromhex(hexed))
for i, line in enumerate(re.findall(r'^(\{"v":1,.*\})$', doc, re.M)):
    write("seal", "envelope-%d" % i, line.encode())
for i, key in enumerate([b"\x04" + bytes(range(64)), bytes(range(32)), b"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VuAyEA\n-----END PUBLIC KEY-----\n",
                         b"BAIX5hfwtkQ5KCePlpmeaaI6TywVK99tbN9m5bgCgtTtGUp968uXcS0t2jyoWqh2Wlb0X8dYWZZS8ol8ZTBuV5Q="]):
    write("seal", "key-%d" % i, key)

# ICC: the profiles in the colour fixtures' JPEGs, and the system's RGB profiles; the tagged
# fixtures themselves for the image target; the CMYK fixture's profile too.
def app2(jpeg):
    at, profile = 2, b""
    while at + 4 <= len(jpeg) and jpeg[at] == 0xFF and jpeg[at + 1] != 0xDA:
        length = jpeg[at + 2] << 8 | jpeg[at + 3]
        if jpeg[at + 1] == 0xE2 and jpeg[at + 4:at + 16] == b"ICC_PROFILE\0":
            profile += jpeg[at + 18:at + 2 + length]
        at += 2 + length
    return profile
colour = os.path.join(root, "Tests", "Fixtures", "colour")
for path in sorted(glob.glob(os.path.join(colour, "*.jpg"))):
    write("icc", os.path.basename(path) + ".icc", app2(read(path)))
    write("image", "c-" + os.path.basename(path), b"\0" + read(path)[3:])
for path in sorted(glob.glob(os.path.join(colour, "*.png"))):
    write("image", "c-" + os.path.basename(path), b"\1" + read(path)[8:])
for path in sorted(glob.glob("/usr/share/color/icc/colord/*.icc"))[:12]:
    write("icc", os.path.basename(path), read(path))

for path in sorted(glob.glob(os.path.join(root, "Tests", "Fixtures", "webp", "*.webp"))):
    write("image", "w-" + os.path.basename(path), b"\2" + read(path)[12:])

# Modern: the HEIC, AVIF, JPEG XL and (animated) WebP fixtures, whole, after a byte that picks
# the limits. Large fixtures (the 7000 x 7000 AVIF) are left out: aom's memory, not the glue.
for folder in ["heif", "jxl", "webp"]:
    for path in sorted(glob.glob(os.path.join(root, "Tests", "Fixtures", folder, "*.*"))):
        if path.endswith((".sh", ".json", ".c")) or "7000" in path or "huge" in path:
            continue
        write("modern", "m-" + os.path.basename(path), b"\0" + read(path))

# AV: the video fixtures and the sample clips and tones, each after the byte naming its kind.
kinds = {".mp4": 0, ".m4v": 1, ".m4a": 2, ".mp3": 3, ".wav": 4, ".aiff": 5, ".aifc": 5, ".avi": 6, ".mpg": 7, ".m2v": 7, ".mov": 8, ".webm": 9, ".ogg": 10, ".flac": 11}
for path in sorted(glob.glob(os.path.join(root, "Tests", "Fixtures", "video", "*")) + glob.glob(os.path.join(root, "Samples", "media", "*"))):
    ext = os.path.splitext(path)[1]
    if ext in kinds and os.path.getsize(path) < 200_000:
        write("av", "v-" + os.path.basename(path), bytes([kinds[ext]]) + read(path))

# Poster: the video fixtures and sample clips, each after a byte that picks the time (1 s).
for path in sorted(glob.glob(os.path.join(root, "Tests", "Fixtures", "video", "*")) + glob.glob(os.path.join(root, "Samples", "media", "*"))):
    if os.path.splitext(path)[1] in (".mp4", ".m4v", ".avi", ".mpg", ".m2v", ".mov", ".webm") and os.path.getsize(path) < 200_000:
        write("poster", "p-" + os.path.basename(path), b"\x20" + read(path))

# Encode: six bytes of settings (size, grey or colour, quality, tables, chroma, repeats) and
# pixels: noise, a ramp, and flat runs with a few busy bytes, at sizes that end mid-block and
# mid-MCU and qualities from 1 to 100.
import random
rng = random.Random(70)
for i, (w, h, setting, quality, pixels) in enumerate([
        (63, 47, 0b00000001, 79, bytes(rng.randrange(256) for _ in range(600))),
        (255, 255, 0b00001011, 99, bytes(range(256))),
        (319, 200, 0b11010101, 89, bytes([128] * 200 + [0, 255, 17, 240] + [128] * 300)),
        (16, 16, 0b01000000, 0, bytes(rng.randrange(256) for _ in range(64))),
        (1, 319, 0b10000011, 49, bytes([30, 200, 90])),
        (200, 1, 0b00010001, 95, bytes(rng.randrange(256) for _ in range(50)))]):
    header = bytes([(w - 1) & 0xFF, (w - 1) >> 8, (h - 1) & 0xFF, (h - 1) >> 8, setting, quality])
    write("encode", "e-%d" % i, header + pixels)

for target in ["json", "sniffer", "exif", "token", "head", "url", "gif", "image", "seal", "icc", "modern", "av", "poster",
               "encode"]:
    print("%s: %d seeds" % (target, len(os.listdir(os.path.join(work, target, "seeds")))))
