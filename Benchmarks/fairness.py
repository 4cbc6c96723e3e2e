#!/usr/bin/env python3
"""Fairness under expensive work (docs/benchmarks.md, "Fair within the deadline").

  python3 fairness.py BIN WORKDIR [--runs 5] [--light 60]

1. One payload: two expensive GIFs fetched first, two 640x480 JPEGs after them,
   `attache process --deadline 3s`, RUNS times each (with and without --no-transcode): how many
   runs attached both JPEGs. Two GIF shapes: the amplifier (a 7000x7000 screen, 999 one-pixel
   frames, 23 KB) and a heavy one within every limit (7000x7000, 10 full-screen frames, 650 KB,
   ~3.4 s of CPU).
2. The service: three clients keep posting payloads of two heavy GIFs (deadline 10 s) while a
   fourth posts LIGHT payloads of one JPEG, one after another: the light payloads' latency
   (p50, p95, max) and how many were attached.
"""
import argparse
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.request


def amplifier(path, w=7000, h=7000, frames=999):
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff")
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for i in range(frames):
        out += b"\x21\xf9\x04\x00" + struct.pack("<H", 2) + b"\x00\x00"
        out += b"\x2c" + struct.pack("<HHHHB", (i * 7) % w, (i * 13) % h, 1, 1, 0)
        out += b"\x02\x02\x4c\x01\x00" if i & 1 else b"\x02\x02\x44\x01\x00"
    open(path, "wb").write(out + b"\x3b")


def lzw_uniform(index, count, min_size=2):
    """LZW codes for `count` pixels of one index (GIF's variant, 12-bit codes, sub-blocks)."""
    clear, eoi = 1 << min_size, (1 << min_size) + 1
    out, acc, nbits = bytearray(), 0, 0
    size, next_code, lengths, prev = min_size + 1, eoi + 1, [], 0

    def emit(code):
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += size
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8

    emit(clear)
    i = 0
    while i < count:
        # lengths[k] is the code of a run of k + 2 pixels.
        k = min(len(lengths), count - i - 1)
        code, run = (lengths[k - 1], k + 1) if k > 0 else (index, 1)
        emit(code)
        if prev and next_code < 4096:
            if prev + 1 == len(lengths) + 2:
                lengths.append(next_code)
            next_code += 1
            if next_code == (1 << size) and size < 12:
                size += 1
        prev, i = run, i + run
        if next_code >= 4096:
            emit(clear)
            size, next_code, lengths, prev = min_size + 1, eoi + 1, [], 0
    emit(eoi)
    if nbits:
        out.append(acc & 0xFF)
    blocks = bytearray([min_size])
    for k in range(0, len(out), 255):
        blocks += bytes([len(out[k:k + 255])]) + out[k:k + 255]
    return blocks + b"\x00"


def heavy(path, w=7000, h=7000, frames=10):
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0x81, 0, 0))
    out += bytes([0, 0, 0, 255, 255, 255, 200, 30, 30, 30, 30, 200])
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for f in range(frames):
        out += b"\x21\xf9\x04\x00" + struct.pack("<H", 10) + b"\x00\x00"
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0) + lzw_uniform(f % 4, w * h)
    open(path, "wb").write(out + b"\x3b")


def jpegs(folder):
    from PIL import Image, ImageDraw
    for i in range(2):
        im = Image.new("RGB", (640, 480), (40 + 80 * i, 120, 200 - 60 * i))
        d = ImageDraw.Draw(im)
        for k in range(0, 640, 16):
            d.line([(k, 0), (640 - k, 480)], fill=(k % 255, 255 - k % 255, 90), width=3)
        im.save(os.path.join(folder, f"small{i}.jpg"), quality=90)


def payload(media, gifs, jpgs):
    keys = ["my-attachment", "attachment-url", "media-url", "image"]
    urls = [f"{media}/{g}" for g in gifs] + [f"{media}/{j}" for j in jpgs]
    body = {"aps": {"alert": "fair", "mutable-content": 1}}
    for k, u in zip(keys, urls):
        body[k] = u
    return json.dumps(body)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("work")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--light", type=int, default=300)
    ap.add_argument("--media-port", type=int, default=8941)
    ap.add_argument("--service-port", type=int, default=8942)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    files = os.path.join(a.work, "media")
    os.makedirs(files, exist_ok=True)
    for name, make in (("amp0.gif", amplifier), ("amp1.gif", amplifier), ("heavy0.gif", heavy), ("heavy1.gif", heavy)):
        if not os.path.exists(os.path.join(files, name)):
            make(os.path.join(files, name))
    jpegs(files)
    procs = []
    try:
        procs.append(subprocess.Popen([a.bin, "serve-files", "--port", str(a.media_port), files],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        media = f"http://127.0.0.1:{a.media_port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(media + "/small0.jpg").read()
                break
            except OSError:
                time.sleep(0.1)
        results = {}
        print("1. one payload, two GIFs then two JPEGs, --deadline 3s:")
        for shape in ("amp", "heavy"):
            for flags in ([], ["--no-transcode"]):
                path = os.path.join(a.work, f"{shape}.json")
                open(path, "w").write(payload(media, [f"{shape}0.gif", f"{shape}1.gif"], ["small0.jpg", "small1.jpg"]))
                both, seconds = 0, []
                for run in range(a.runs):
                    store = os.path.join(a.work, f"store-{shape}-{run}")
                    subprocess.run(["rm", "-rf", store])
                    start = time.time()
                    out = subprocess.run([a.bin, "process", "--allow-loopback", "--store", store, "--deadline", "3s",
                                          "--json"] + flags + [path], capture_output=True, text=True).stdout
                    seconds.append(time.time() - start)
                    mutated = json.loads(out.splitlines()[0])
                    jpg = sum(1 for x in mutated.get("attachments", []) if x["type"] == "public.jpeg")
                    both += jpg == 2
                key = f"{shape}{' ' + flags[0] if flags else ''}"
                results[key] = {"both_jpegs": both, "runs": a.runs, "seconds_max": round(max(seconds), 2)}
                print(f"   {key:24s} both JPEGs attached in {both} of {a.runs} runs "
                      f"(slowest answer {max(seconds):.2f} s)")

        print("2. the service: 3 clients posting two heavy GIFs each, light payloads one after another:")
        store = os.path.join(a.work, "service-store")
        subprocess.run(["rm", "-rf", store])
        log = open(os.path.join(a.work, "service.log"), "w")
        procs.append(subprocess.Popen([a.bin, "serve", "--port", str(a.service_port), "--store", store,
                                       "--allow-anonymous", "--allow-loopback", "--gc-interval", "0s"],
                                      stdout=log, stderr=log))
        service = f"http://127.0.0.1:{a.service_port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(service + "/healthz").read()
                break
            except OSError:
                time.sleep(0.1)
        stop = threading.Event()
        heavy_done = []

        def post(body, deadline):
            req = urllib.request.Request(service + "/v1/notifications", data=body.encode(),
                                         headers={"Content-Type": "application/json", "Attache-Deadline": deadline})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    r.read()
                    return r.status, int(r.headers.get("Attache-Attached") or 0)
            except urllib.error.HTTPError as e:
                return e.code, None

        def heavy_client(i):
            body = payload(media, ["heavy0.gif", "heavy1.gif"], [])
            body = body.replace("heavy0.gif", f"heavy0.gif?c={i}").replace("heavy1.gif", f"heavy1.gif?c={i}")
            n = 0
            while not stop.is_set():
                n += 1
                status, attached = post(body.replace(f"?c={i}", f"?c={i}-{n}"), "10s")
                heavy_done.append(attached)

        threads = [threading.Thread(target=heavy_client, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
        time.sleep(3)  # the heavy payloads fill the workers first
        latencies, attached, statuses = [], 0, {}
        for k in range(a.light):
            body = json.dumps({"aps": {"alert": "light", "mutable-content": 1},
                               "image": f"{media}/small{k % 2}.jpg?light={k}"})
            start = time.time()
            status, answer = post(body, "10s")
            latencies.append(time.time() - start)
            statuses[status] = statuses.get(status, 0) + 1
            attached += 1 if answer else 0
        stop.set()
        p50, p95, worst = percentile(latencies, 50), percentile(latencies, 95), max(latencies)
        results["service"] = {"light": a.light, "attached": attached, "p50_s": round(p50, 3), "p95_s": round(p95, 3),
                              "max_s": round(worst, 3), "statuses": statuses, "heavy_payloads": len(heavy_done),
                              "heavy_gifs_attached": sum(heavy_done)}
        print(f"   {a.light} light payloads: {attached} attached, p50 {p50:.3f} s, p95 {p95:.3f} s, "
              f"max {worst:.3f} s, statuses {statuses}; {len(heavy_done)} heavy payloads answered meanwhile "
              f"({sum(heavy_done)} of their {2 * len(heavy_done)} GIFs attached)")
        print(json.dumps(results))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
