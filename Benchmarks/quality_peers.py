"""The defaults against the peers, on the same photos in one run (Benchmarks/quality.sh).

Each tool makes a 1024 px JPEG of each photo at its own defaults: `attache resize` (quality
auto at its default target: the service's defaults), `attache resize --jpeg-encoder thorough`
(what `attache batch` writes at its defaults, which differ from the service's in the encoder
alone), thumbor (fit-in/1024x1024, its default QUALITY 80 with PIL,
progressive), and vipsthumbnail at Q=75 (its default) and Q=85. Every output is scored by the
public SSIMULACRA2 (PyPI ssimulacra2) against one reference per photo and size: the fully
decoded source, upright, Lanczos-3 resampled to the output's size (PIL), so a score counts the
whole path (decode, resample, encode) the same way for every tool. Printed per photo set: bytes
(and against thumbor's), lowest, 5th percentile and mean score, attache's encodes, and time.
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from PIL import Image, ImageOps
from ssimulacra2 import compute_ssimulacra2

import figures


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1)))))]


def reference(source, size, path):
    image = ImageOps.exif_transpose(Image.open(source)).convert("RGB")
    image.resize(size, Image.LANCZOS).save(path)


def score(work, name, source, path):
    """The public score of `path` against its source's reference at its size (made once), and its bytes."""
    size = Image.open(path).size
    ref = os.path.join(work, name, "ref-%s-%dx%d.png" % (os.path.basename(source), *size))
    if not os.path.exists(ref):
        reference(source, size, ref)
    return compute_ssimulacra2(ref, path), os.path.getsize(path)


def photos(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.lower().endswith((".jpg", ".jpeg")))


def thumbor_file(thumbor_port, media_port, source, out, quality=None):
    """thumbor's 1024 px rendition of `source` (at its QUALITY, or `quality`) into `out`; its path."""
    filters = f"filters:quality({quality})/" if quality else ""
    url = (f"http://127.0.0.1:{thumbor_port}/unsafe/fit-in/1024x1024/{filters}"
           f"127.0.0.1:{media_port}/{os.path.basename(source)}")
    path = os.path.join(out, os.path.basename(source))
    with urllib.request.urlopen(url, timeout=120) as answer, open(path, "wb") as sink:
        sink.write(answer.read())
    return path


def serve(folder):
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=folder, **k)
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def start_thumbor(work):
    conf = os.path.join(work, "thumbor.conf")
    with open(conf, "w") as f:
        f.write("LOADER = 'thumbor.loaders.http_loader'\nSTORAGE = 'thumbor.storages.no_storage'\n"
                "RESULT_STORAGE = None\nALLOW_UNSAFE_URL = True\nQUALITY = 80\n"
                "HTTP_LOADER_MAX_BODY_SIZE = 100 * 1024 * 1024\nMAX_WIDTH = 0\nMAX_HEIGHT = 0\n")
    port = 8911
    process = subprocess.Popen(["thumbor", "--port", str(port), "--conf", conf],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck", timeout=1)
            return process, port
        except OSError:
            time.sleep(0.1)
    raise SystemExit("thumbor did not start")


def attache(binary, files, out, extra):
    args = [binary, "resize", "--max-side", "1024", "--format", "jpeg", "--out", out, "--json"] + extra
    started = time.perf_counter()
    lines = subprocess.run(args + files, check=True, capture_output=True, text=True).stdout.splitlines()
    seconds = time.perf_counter() - started
    results = {}
    for line in lines:
        r = json.loads(line)
        results[r["file"]] = (r["output"], r.get("encodes", 1))
    return results, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attache", required=True)
    parser.add_argument("--set", action="append", required=True, help="NAME=FOLDER of JPEG photos")
    parser.add_argument("--attache-args", default="", help="flags for attache resize (default: its defaults)")
    parser.add_argument("--limit", type=int, help="the first N photos of each set only (a quick run)")
    each_set(parser.parse_args(), "attache-peers-", compare)


def each_set(args, prefix, compare):
    """compare(name, folder, args, work, thumbor_port) for each --set, beside one thumbor."""
    work = tempfile.mkdtemp(prefix=prefix)
    thumbor, thumbor_port = start_thumbor(work)
    try:
        for entry in args.set:
            name, folder = entry.split("=", 1)
            compare(name, folder, args, work, thumbor_port)
    finally:
        thumbor.terminate()
    print(f"outputs kept in {work}")


def compare(name, folder, args, work, thumbor_port):
    files = photos(folder)
    files = files[: args.limit] if args.limit else files
    media_port = serve(folder)
    tools = {}
    for tool, folder_name, extra in (("attache (defaults)", "attache", []),
                                     ("attache batch (defaults)", "attache-batch", ["--jpeg-encoder", "thorough"])):
        out = os.path.join(work, name, folder_name)
        os.makedirs(out, exist_ok=True)
        made, seconds = attache(args.attache, files, out, args.attache_args.split() + extra)
        tools[tool] = ({f: made[f][0] for f in files}, seconds, [made[f][1] for f in files])
    out = os.path.join(work, name, "thumbor")
    os.makedirs(out, exist_ok=True)
    outputs, started = {}, time.perf_counter()
    for f in files:
        outputs[f] = thumbor_file(thumbor_port, media_port, f, out)
    tools["thumbor (QUALITY 80)"] = (outputs, time.perf_counter() - started, None)
    for q in (75, 85):
        out = os.path.join(work, name, f"vips{q}")
        os.makedirs(out, exist_ok=True)
        outputs, started = {}, time.perf_counter()
        for f in files:
            path = os.path.join(out, os.path.basename(f))
            subprocess.run(["vipsthumbnail", f, "-s", "1024", "-o", path + f"[Q={q},strip]"], check=True)
            outputs[f] = path
        tools[f"vipsthumbnail Q={q}"] = (outputs, time.perf_counter() - started, None)

    rows = {}
    for tool, (outputs, seconds, encodes) in tools.items():
        scores, total = [], 0
        for f in files:
            value, size = score(work, name, f, outputs[f])
            scores.append(value)
            total += size
        rows[tool] = (total, scores, encodes, seconds)
    base = rows["thumbor (QUALITY 80)"][0]
    print(f"\n{name}: {len(files)} photos -> 1024 px, each tool at its defaults; public SSIMULACRA2 against a "
          "Lanczos-3 resize of the fully decoded source")
    print("| tool | bytes | vs thumbor | lowest | p5 | mean | encodes (mean, one) | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for tool, (total, scores, encodes, seconds) in rows.items():
        shown = "-"
        if encodes:
            shown = f"{statistics.mean(encodes):.2f}, {sum(1 for e in encodes if e == 1) * 100 // len(encodes)}%"
        print(f"| {tool} | {total:,} | {total / base:.3f}x | {min(scores):.1f} | {percentile(scores, 5):.1f} "
              f"| {statistics.mean(scores):.1f} | {shown} | {seconds:.1f} |")
    theirs, peer = rows["thumbor (QUALITY 80)"], "thumbor (QUALITY 80)"
    for tool, settings, bytes_goal in (("attache (defaults)", "the defaults", "<= 1.0x"),
                                       ("attache batch (defaults)", "the batch's defaults", "<= 0.85x")):
        ours = rows[tool]
        figures.record(f"{name} photos at {settings}: lowest SSIMULACRA2", min(ours[1]), "score", peer=peer,
                       peer_value=min(theirs[1]), goal=">= the peer's")
        figures.record(f"{name} photos at {settings}: mean SSIMULACRA2", statistics.mean(ours[1]), "score",
                       peer=peer, peer_value=statistics.mean(theirs[1]), goal=">= the peer's - 1")
        figures.record(f"{name} photos at {settings}: bytes", ours[0], "bytes", peer=peer, peer_value=theirs[0],
                       better="lower", goal=bytes_goal)
    figures.record(f"{name} photos at the defaults: encodes per picture",
                   statistics.mean(rows["attache (defaults)"][2]), "encodes", better="lower", goal="<= 1.25")
    figures.series(f"{name} photos: bytes against score, each tool at its defaults", "scatter",
                   {tool: [[os.path.getsize(tools[tool][0][f]), score] for f, score in zip(files, r[1])]
                    for tool, r in rows.items()}, "bytes", "SSIMULACRA2")
    worst = min(zip(rows["attache (defaults)"][1], files))
    print(f"attache's lowest: {os.path.basename(worst[1])} ({worst[0]:.1f})")


if __name__ == "__main__":
    sys.exit(main())
