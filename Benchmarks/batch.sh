#!/usr/bin/env bash
# A campaign of 2,000 items on loopback (docs/batch.md, benchmarks): release build of `attache batch` over a
# list of media URLs served by nginx — JPEG photos and push-sized renditions, PNG, animated GIF,
# audio and video — with 10% hostile or failing items (404s, HTML named .jpg, a PNG bomb, a
# truncated JPEG, a host that never answers, a 60 MB "image"). In one run:
#   1. the batch with one decoding worker per core, then with one worker: items/s, peak RSS;
#   2. the same batch killed with SIGKILL at 20 random moments, each followed by a rerun, then
#      run to the end: manifest lines, items recorded twice, `attache store verify`.
#   bash Benchmarks/batch.sh [ITEMS=2000]
# BATCH_FLAGS adds options to every batch run (e.g. BATCH_FLAGS="--small-side 0").
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
need_packages nginx-light curl
items=${1:-2000} kills=20
# BENCH_QUICK=1: 200 items, 3 SIGKILLs.
[ "$quick" = 1 ] && items=${1:-200} kills=3
work=$(realpath work)/batch
media=$work/media
mkdir -p "$media"
media_port=8911 hang_port=8912
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true' EXIT

# The media: the photos as they are, push-sized renditions of them (800 and 2000 px), PNGs at
# 1000 px and full size, animated GIFs, the samples' audio and video; the hostile files.
if [ ! -f "$media/.ready" ]; then
    for f in work/jpeg/*.jpg; do
        b=$(basename "$f" .jpg)
        cp "$f" "$media/photo-$b.jpg"
        vips thumbnail "$f" "$media/push-$b.jpg[Q=85]" 800
        vips thumbnail "$f" "$media/large-$b.jpg[Q=90]" 2000
    done
    for f in work/png/*.png; do
        b=$(basename "$f" .png)
        cp "$f" "$media/big-$b.png"
        vips thumbnail "$f" "$media/png-$b.png" 1000
    done
    cp ../Samples/media/animated-chi.gif ../Samples/media/tone.* ../Samples/media/clip.* ../Samples/media/clip-*.mpg "$media/"
    python3 - "$media" <<'PY'
import glob, os, struct, sys, zlib
from PIL import Image
media = sys.argv[1]
# Animated GIFs: 24 frames of a photo panning, 480 and 800 px wide.
for width in (480, 800):
    for i, f in enumerate(sorted(glob.glob(media + "/large-*.jpg"))[:3]):
        im = Image.open(f).convert("RGB")
        h = int(im.height * width / im.width)
        frames = [im.resize((width + 48, h), Image.BILINEAR).crop((k * 2, 0, k * 2 + width, h)) for k in range(24)]
        frames[0].save(f"{media}/anim{width}-{i}.gif", save_all=True, append_images=frames[1:], duration=80, loop=0)
# Hostile: a PNG bomb (50000 x 50000, a few KB of zeros), HTML named .jpg, a truncated JPEG,
# a 60 MB "image".
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
raw = zlib.compress(b"\0" * (50000 * 3 + 1) * 64, 9)
with open(media + "/bomb.png", "wb") as out:
    out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 50000, 50000, 8, 2, 0, 0, 0))
              + chunk(b"IDAT", raw) + chunk(b"IEND", b""))
open(media + "/page.jpg", "w").write("<!doctype html><title>not an image</title>" * 20)
photo = sorted(glob.glob(media + "/large-*.jpg"))[0]
data = open(photo, "rb").read()
open(media + "/truncated.jpg", "wb").write(data[: len(data) // 3])
with open(media + "/huge.jpg", "wb") as out:
    out.write(data[:2])
    out.write(os.urandom(60 * 1024 * 1024))
PY
    touch "$media/.ready"
fi

media_host "$media_port" "$media"
"$bin" serve-files --port $hang_port "$media" > "$work/hang.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$media_port/page.jpg" && break; sleep 0.1; done

# The campaign: each URL distinct (a query), so every item is fetched and transformed.
python3 - "$media" "$items" "$media_port" "$hang_port" > "$work/campaign.txt" <<'PY'
import glob, os, random, sys
media, items, port, hang = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = lambda pattern: sorted(os.path.basename(f) for f in glob.glob(os.path.join(media, pattern)))
kinds = [  # (weight in %, files or a URL maker)
    (35, names("push-*.jpg")), (15, names("large-*.jpg")), (8, names("photo-*.jpg")),
    (10, names("png-*.png")), (2, names("big-*.png")), (8, names("anim480-*.gif") + ["animated-chi.gif"]),
    (2, names("anim800-*.gif")), (10, names("tone.*") + names("clip*")),
    (3, ["missing-%d.jpg"]), (2, ["page.jpg"]), (2, ["bomb.png"]), (1, ["truncated.jpg"]),
    (1, ["huge.jpg"]), (1, ["hang"]),
]
assert sum(w for w, _ in kinds) == 100
rng = random.Random(2000)
print("# a campaign of", items, "items; 10% hostile or failing")
for i in range(items):
    pick = rng.uniform(0, 100)
    for weight, files in kinds:
        if pick < weight:
            break
        pick -= weight
    name = rng.choice(files)
    if name == "hang":
        print(f"http://127.0.0.1:{hang}/hang/{i}.jpg")
    elif "%d" in name:
        print(f"http://127.0.0.1:{port}/" + name % i)
    else:
        print(f"http://127.0.0.1:{port}/{name}?item={i}")
PY
echo "campaign: $(grep -vc '^#' "$work/campaign.txt") items, media $(du -sh "$media" | cut -f1)"

run() {  # run NAME [batch options...] -> prints the summary JSON's run object
    local name=$1
    shift
    rm -rf "$work/$name" && mkdir -p "$work/$name"
    "$bin" batch --allow-loopback --store "$work/$name/store" --out "$work/$name/out.jsonl" --json \
        --progress-interval 10 ${BATCH_FLAGS:-} "$@" "$work/campaign.txt" > "$work/$name/summary.json" 2> "$work/$name/progress.log"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); r=s["run"]; print(json.dumps({"items": s["items"], "seconds": r["seconds"], "items_per_second": r["items_per_second"], "peak_rss_mb": r["peak_rss_mb"], "outcomes": s["outcomes"], "codes": s["codes"]}))' "$work/$name/summary.json"
}

echo "1. both cores (one worker per core, 16 items in flight):"
run cores --jobs 16 | tee "$work/cores.json"
echo "   one worker (16 items in flight):"
run one --jobs 16 --workers 1 | tee "$work/one.json"

echo "2. $kills SIGKILLs at random moments, each followed by a rerun:"
kill_dir=$work/killed
rm -rf "$kill_dir" && mkdir -p "$kill_dir"
batch_killed() {
    "$bin" batch --allow-loopback --store "$kill_dir/store" --out "$kill_dir/out.jsonl" --jobs 16 \
        --progress-interval 1 "$work/campaign.txt" > /dev/null 2>> "$kill_dir/progress.log"
}
for k in $(seq 1 "$kills"); do
    batch_killed 2>/dev/null &
    pid=$!
    pause=$(python3 -c "import random; print(round(random.Random($k).uniform(0.3, 3.0), 2))")
    sleep "$pause"
    pkill -KILL -f "attache batch --allow-loopback --store $kill_dir/store" || true
    wait $pid 2>/dev/null || true
    echo "-- killed after $pause s" >> "$kill_dir/progress.log"
    printf '   kill %2d after %4.2f s: %4d items recorded\n' "$k" "$pause" "$(wc -l < "$kill_dir/out.manifest.jsonl")"
done
batch_killed
python3 - "$kill_dir" "$items" <<'PY' | tee "$work/killed.json"
import collections, json, sys
d, items = sys.argv[1], int(sys.argv[2])
refs = [json.loads(l)["ref"] for l in open(d + "/out.manifest.jsonl")]
twice = sum(1 for r, n in collections.Counter(refs).items() if n > 1)
payloads = open(d + "/out.jsonl").read().splitlines()
print(json.dumps({"manifest_lines": len(refs), "distinct_items": len(set(refs)), "recorded_twice": twice,
                  "payload_lines": len(payloads), "expected": items}))
PY
"$bin" store verify --store "$kill_dir/store" | tail -3

python3 - "$work" "$kills" <<'PY'
import json, sys
import figures
w, kills = sys.argv[1], int(sys.argv[2])
cores, one, killed = (json.load(open(f"{w}/{n}.json")) for n in ("cores", "one", "killed"))
print()
print(f"- {cores['items']} items: {cores['items_per_second']} items/s with a worker per core, "
      f"{one['items_per_second']} with one: {cores['items_per_second'] / one['items_per_second']:.2f}x; "
      f"peak RSS {cores['peak_rss_mb']} MB / {one['peak_rss_mb']} MB")
print(f"- outcomes {cores['outcomes']}, codes {cores['codes']}")
print(f"- after {kills} SIGKILLs and reruns: {killed['manifest_lines']} manifest lines, "
      f"{killed['distinct_items']} distinct items, {killed['recorded_twice']} recorded twice, "
      f"{killed['payload_lines']} payload lines")
figures.record("a campaign of media URLs: throughput, a worker per core", cores["items_per_second"], "items/s",
               peer="attache batch, one worker", peer_value=one["items_per_second"], goal=">= 1.8x")
figures.record("a campaign: peak RSS, a worker per core", cores["peak_rss_mb"], "MB", better="lower", goal="<= 200 MB")
figures.record("a campaign killed and rerun: items recorded twice", killed["recorded_twice"], "items", better="lower",
               goal="0")
PY
