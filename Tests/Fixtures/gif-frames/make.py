#!/usr/bin/env python3
"""Writes gif-frames/<file>.txt: one line per frame, the SHA-256 of the frame as an
independent decoder composites it (Pillow 13, RGBA, colour bytes of fully transparent
pixels zeroed). Run from this folder: python3 gif-frames/make.py ../../../../shared/corpus"""
import glob, hashlib, os, sys
from PIL import Image, ImageSequence

corpus = sys.argv[1]
for path in sorted(glob.glob(os.path.join(corpus, "gif-edge-cases", "*.gif")) + glob.glob(os.path.join(corpus, "giflib-pics", "*.gif"))):
    try:
        im = Image.open(path)
        lines = []
        for frame in ImageSequence.Iterator(im):
            rgba = bytearray(frame.convert("RGBA").tobytes())
            for i in range(0, len(rgba), 4):
                if rgba[i + 3] == 0:
                    rgba[i:i + 3] = b"\0\0\0"
            lines.append(hashlib.sha256(rgba).hexdigest())
    except Exception:
        continue
    with open(os.path.join("gif-frames", os.path.basename(path) + ".txt"), "w") as out:
        out.write("\n".join(lines) + "\n")
