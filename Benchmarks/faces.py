#!/usr/bin/python3
"""Faces: does a face detector place the 2:1 crop of a portrait better than attention?

Debian packages OpenCV 4.6's Haar face cascades (opencv-data) and a few photos of faces with its
documentation (opencv-doc). Each case is a portrait 800x1200: a face photo at the top (the
face's box checked by eye, listed below), a busy photo below it (fruit, a baboon, a building,
...), the kind of picture where an attention map is drawn to the wrong half. Each is cropped to
2:1 from its 683x1024 rendition by:

- attache: `attache resize --targets android` (attention, the default);
- attache --faces: the same with `--faces` (OpenCV's LBP frontal cascade, on the skin-toned
  part of the picture, before attention);
- vips: `vips smartcrop --interesting attention` on the same rendition;
- haar: the window centred on the largest face OpenCV's Haar frontal cascade finds on the whole
  rendition, else attache's (the costlier detector, for comparison);
- centre: the middle of the picture.

The score is the share of the face box inside the crop. The second table is how often the
cascade "finds" a face in the photo benchmark's 32 photos, which hold no frontal face a person
would crop to: each hit there would move a crop away from what attention chose.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import cv2
import numpy

import figures

HTML = "/usr/share/doc/opencv-doc/opencv4/html/"
DATA = "/usr/share/doc/opencv-doc/examples/data/"
# (photo, face box x, y, w, h in its pixels): every box checked by eye.
FACES = [
    (HTML + "230501201_1.jpg", (113, 211, 375, 375)),
    (HTML + "227943776_1.jpg", (112, 95, 183, 183)),
    (HTML + "face_swapped.jpg", (85, 67, 137, 137)),
    (HTML + "ab.jpg", (121, 103, 194, 194)),
    (DATA + "messi5.jpg", (226, 94, 38, 38)),
]
BUSY = ["fruits.jpg", "baboon.jpg", "building.jpg", "stuff.jpg", "smarties.png", "HappyFish.jpg",
        "starry_night.jpg", "orange.jpg"]
CASCADE = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"
WIDTH, HEIGHT, BAND = 800, 1200, 560
if figures.quick():  # BENCH_QUICK=1: the five faces above two busy photos, four photos of the set
    BUSY = BUSY[:2]


def cover(image, width, height):
    """`image` scaled to cover width x height, centre-cropped to it."""
    scale = max(width / image.shape[1], height / image.shape[0])
    scaled = cv2.resize(image, (round(image.shape[1] * scale + 0.5), round(image.shape[0] * scale + 0.5)),
                        interpolation=cv2.INTER_AREA)
    x = (scaled.shape[1] - width) // 2
    y = (scaled.shape[0] - height) // 2
    return scaled[y:y + height, x:x + width]


def make_case(face_path, box, busy_path, path):
    """A portrait: the face photo in the top band (the face at most 300 px tall), the busy photo below."""
    canvas = numpy.full((HEIGHT, WIDTH, 3), 128, numpy.uint8)
    photo = cv2.imread(face_path)
    scale = min(max(WIDTH / photo.shape[1], BAND / photo.shape[0]), 300 / box[3])
    scaled = cv2.resize(photo, (round(photo.shape[1] * scale), round(photo.shape[0] * scale)),
                        interpolation=cv2.INTER_AREA)
    fx, fy, fw, fh = (round(v * scale) for v in box)
    # The band's window on the scaled photo, around the face (clamped to the photo).
    x0 = min(max(0, fx + fw // 2 - WIDTH // 2), max(0, scaled.shape[1] - WIDTH))
    y0 = min(max(0, fy + fh // 2 - BAND * 2 // 5), max(0, scaled.shape[0] - BAND))
    piece = scaled[y0:y0 + BAND, x0:x0 + WIDTH]
    px = (WIDTH - piece.shape[1]) // 2
    canvas[0:piece.shape[0], px:px + piece.shape[1]] = piece
    canvas[BAND:HEIGHT] = cover(cv2.imread(DATA + busy_path), WIDTH, HEIGHT - BAND)
    cv2.imwrite(path, canvas, [cv2.IMWRITE_JPEG_QUALITY, 92])
    return (fx - x0 + px, fy - y0, fw, fh)


def kept(box, crop):
    x0, y0 = max(box[0], crop[0]), max(box[1], crop[1])
    x1, y1 = min(box[0] + box[2], crop[0] + crop[2]), min(box[1] + box[3], crop[1] + crop[3])
    return max(0, x1 - x0) * max(0, y1 - y0) / (box[2] * box[3])


def largest_face(cascade, image):
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    faces = cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=5, minSize=(24, 24))
    return max(faces, key=lambda f: f[2] * f[3]) if len(faces) else None


def crops(binary, directory, cascade):
    cases = []
    for face_path, box in FACES:
        for busy in BUSY:
            path = os.path.join(directory, f"{len(cases):02d}.jpg")
            cases.append((path, make_case(face_path, box, busy, path)))
    def resize(extra):
        out = os.path.join(directory, "out")
        start = time.perf_counter()
        result = subprocess.run(["taskset", "-c", "0", binary, "resize", "--max-side", "1024", "--out", out, "--json",
                                 "--targets", "android"] + extra + [path for path, _ in cases],
                                check=True, capture_output=True, text=True)
        return time.perf_counter() - start, [json.loads(line) for line in result.stdout.splitlines()]
    plain_time, lines = resize([])
    faces_time, with_faces = resize(["--faces"])
    shares = {"attache": [], "attache --faces": [], "vips": [], "haar": [], "centre": []}
    found = 0
    for (path, box), line, faced in zip(cases, lines, with_faces):
        scale = HEIGHT / line["height"]
        width = line["width"]
        crop = [v * scale for v in line["targets"][0]["crop"]]
        shares["attache"].append(kept(box, crop))
        shares["attache --faces"].append(kept(box, [v * scale for v in faced["targets"][0]["crop"]]))
        small = os.path.join(directory, "small.v")
        cropped = os.path.join(directory, "crop.v")
        subprocess.run(["vips", "thumbnail", path, small, "1024"], check=True)
        subprocess.run(["vips", "smartcrop", small, cropped, str(width), str(width // 2), "--interesting",
                        "attention"], check=True)
        yoffset = -int(subprocess.run(["vipsheader", "-f", "yoffset", cropped], check=True, capture_output=True,
                                      text=True).stdout)
        shares["vips"].append(kept(box, [0, yoffset * scale, width * scale, width // 2 * scale]))
        rendition = cv2.resize(cv2.imread(path), (width, line["height"]), interpolation=cv2.INTER_AREA)
        face = largest_face(cascade, rendition)
        if face is None:
            shares["haar"].append(shares["attache"][-1])
        else:
            found += 1
            centre = face[1] + face[3] / 2
            top = min(max(0, centre - width / 4), line["height"] - width / 2)
            shares["haar"].append(kept(box, [0, top * scale, width * scale, width / 2 * scale]))
        shares["centre"].append(kept(box, [0, (HEIGHT - WIDTH / 2) / 2, WIDTH, WIDTH / 2]))
    print(f"| crop to 2:1 ({len(cases)} portraits: {len(FACES)} faces above {len(BUSY)} busy photos) "
          f"| mean share of the face kept | all of it kept |")
    print("|---|---|---|")
    for name, values in shares.items():
        whole = sum(1 for v in values if v >= 0.999)
        print(f"| {name} | {sum(values) / len(values) * 100:.1f}% | {whole} of {len(values)} |")
    print(f"\nThe Haar cascade found a face in {found} of {len(cases)} portraits. attache resize, one core: "
          f"{plain_time:.2f} s, with --faces {faces_time:.2f} s.")
    mean = {name: 100 * sum(values) / len(values) for name, values in shares.items()}
    figures.record("2:1 crops of faces above busy photos, --faces: share of the face kept", mean["attache --faces"],
                   "%", peer="OpenCV's Haar cascade", peer_value=mean["haar"])
    figures.record("2:1 crops of faces above busy photos, attention: share of the face kept", mean["attache"], "%",
                   peer="vipsthumbnail --smartcrop attention", peer_value=mean["vips"])


def false_faces(binary, photos):
    """The photo benchmark has no frontal face: every "face" placement there is a false one."""
    files = sorted(os.path.join(photos, f) for f in os.listdir(photos) if f.endswith(".jpg"))
    if figures.quick():
        files = files[:4]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="faces-photos-") as out:
        for extra in [[], ["--faces"]]:
            start = time.perf_counter()
            result = subprocess.run(["taskset", "-c", "0", binary, "resize", "--max-side", "1024", "--out", out,
                                     "--json", "--targets", "android,web,icon"] + extra + files,
                                    check=True, capture_output=True, text=True)
            runs[" ".join(extra)] = (time.perf_counter() - start, [json.loads(line) for line in
                                                                   result.stdout.splitlines()])
    alone = runs[""][0]
    placed = [os.path.basename(line["input"]) if "input" in line else "?" for line in runs["--faces"][1]
              if any(t.get("placement") == "face" for t in line.get("targets", []))]
    print(f"\n| photo benchmark ({len(files)} photos, no frontal face), one core | time | face placements |")
    print("|---|---|---|")
    print(f"| three pictures, attention | {alone:.2f} s | - |")
    print(f"| three pictures, --faces | {runs['--faces'][0]:.2f} s (+{(runs['--faces'][0] / alone - 1) * 100:.0f}%) "
          f"| {len(placed)} {placed if placed else ''} |")
    figures.record("photos without a face, --faces: face placements", len(placed), "pictures", better="lower", goal="0")
    figures.record("photos -> three pictures with --faces: time", runs["--faces"][0], "s", better="lower",
                   peer="attention alone", peer_value=alone)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("photos")
    parser.add_argument("--attache", required=True)
    args = parser.parse_args()
    for path, _ in FACES:
        if not os.path.exists(path):
            sys.exit(f"{path} missing: apt-get install opencv-doc")
    cascade = cv2.CascadeClassifier(CASCADE)
    with tempfile.TemporaryDirectory(prefix="faces-") as directory:
        crops(args.attache, directory, cascade)
    false_faces(args.attache, args.photos)


if __name__ == "__main__":
    main()
