#!/usr/bin/env bash
# A campaign's downloads through an edge (docs/benchmarks.md, "Campaign fan-out"): release build.
#   1. nginx serves 20 photos of 5-20 MP as the media host; `attache serve` is the origin, its
#      --base-url the edge's; nginx runs docs/operations/attache-edge.conf (as shipped: only the
#      listen address, the origin's address and the cache folder changed) as the edge.
#   2. `attache batch` prepares 2,000 personalised FCM v1 messages (each its own device token,
#      title and data; message i names photo i % 20) into iOS, Android and web pictures, and
#      warms the edge (--warm): every attachment URL of the payloads once through it.
#   3. 10,000 devices (Benchmarks/fanout.py: each its own connection, CONCURRENCY at once, each
#      fetching its payload's URLs) through the edge: origin downloads (the origin's own count),
#      errors, time to first byte, edge requests/s;
#   4. the same with the origin killed after the warm-up;
#   5. the same without the edge (the devices at the origin, restarted).
# BENCH_QUICK=1: 4 photos, 40 payloads, 1,000 devices, 100 at once.
#   bash Benchmarks/fanout.sh        DEVICES=10000 CONCURRENCY=400 PAYLOADS=2000
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
need_packages nginx-light curl
work=$(realpath work)/fanout
rm -rf "$work" && mkdir -p "$work/media" "$work/cache" "$work/temp"
media_port=8981 origin_port=8982 edge_port=8983
devices=${DEVICES:-10000}
concurrency=${CONCURRENCY:-400}
payloads=${PAYLOADS:-2000}
distinct_photos=20
[ "$quick" = 1 ] && devices=1000 concurrency=100 payloads=40 distinct_photos=4
base="http://127.0.0.1:$edge_port/attachments"
pids=()
cleanup() {
    kill ${pids[*]} 2>/dev/null || true
    for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || true

# 20 distinct pictures of 5-20 MP: the photos (one of each baseline/progressive twin), then
# mirrored copies of them until there are 20.
python3 - "$work/media" "$distinct_photos" <<'PY'
import glob, os, struct, sys
def size(path):
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    i = 2
    while i < len(data) - 9:
        if data[i] != 0xFF: i += 1; continue
        marker = data[i + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9]); return w * h
        i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
    return 0
import subprocess
photos = [f for f in sorted(glob.glob("work/jpeg/*.jpg")) if 5e6 <= size(f) <= 20e6 and "_baseline" not in f]
for n in range(int(sys.argv[2])):
    source, target = os.path.realpath(photos[n % len(photos)]), os.path.join(sys.argv[1], "photo-%02d.jpg" % n)
    if n < len(photos):
        os.symlink(source, target)
    else:
        subprocess.run(["vips", "flip", source, target + "[Q=92]", "horizontal"], check=True)
PY
photos=$(ls "$work/media" | wc -l)

cat > "$work/media.conf" <<CONF
user root;
worker_processes 1;
pid $work/media.pid;
error_log $work/media-error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; types { image/jpeg jpg; } server { listen 127.0.0.1:$media_port; root $work/media; } }
CONF
nginx -c "$work/media.conf"

sed -e "s#listen 80;#listen 127.0.0.1:$edge_port backlog=4096;#" -e "s#server 127.0.0.1:8080 #server 127.0.0.1:$origin_port #" \
    -e "s#/var/cache/nginx/attache#$work/cache#" ../docs/operations/attache-edge.conf > "$work/edge-site.conf"
cat > "$work/edge.conf" <<CONF
user root;
worker_processes 2;
worker_rlimit_nofile 65536;
pid $work/edge.pid;
error_log $work/edge-error.log;
events { worker_connections 16384; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path $work/temp/body;
    proxy_temp_path $work/temp/proxy;
    include $work/edge-site.conf;
}
CONF
nginx -c "$work/edge.conf"

wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }
start_origin() {
    "$bin" serve --port $origin_port --store "$work/store" --base-url "$base" --allow-anonymous --gc-interval 0s \
        > "$work/origin.log" 2>&1 &
    origin=$!
    pids+=($origin)
    wait_for "http://127.0.0.1:$origin_port/healthz"
}
# GETs of attachments the origin answered (its own count).
origin_downloads() {
    curl -sf "http://127.0.0.1:$origin_port/metrics" |
        awk '/^attache_http_requests_total\{/ && /route="attachment"/ && /method="GET"/ {n += $NF} END {print n + 0}'
}
start_origin

python3 - "$work/payloads.jsonl" "$payloads" "$photos" "$media_port" <<'PY'
import json, sys
path, count, photos, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(path, "w") as f:
    for i in range(count):
        image = "http://127.0.0.1:%s/photo-%02d.jpg" % (port, i % photos)
        f.write(json.dumps({"message": {
            "token": "device-token-%06d" % i,
            "notification": {"title": "Hello, customer %d" % i, "body": "Your offer %d is ready" % (i * 7919 % 100000),
                             "image": image},
            "apns": {"payload": {"aps": {"mutable-content": 1}}},
            "webpush": {"headers": {"image": image}},
            "data": {"customer": str(i), "offer": str(i * 7919 % 100000)},
        }}) + "\n")
PY

echo "campaign: $payloads payloads naming $photos photos; $devices devices, $concurrency at once"
start=$(date +%s.%N)
"$bin" batch "$work/payloads.jsonl" --store "$work/store" --base-url "$base" --allow-loopback \
    --out "$work/out.jsonl" --warm "http://127.0.0.1:$edge_port" --json --progress-interval 60 \
    > "$work/batch.json" 2> "$work/batch.log"
batch_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")
python3 - "$work/batch.json" "$batch_s" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("batch: %d items %s in %s s; warm-up: %d URLs, %d ok, %d failed, %.1f s"
      % (s["items"], s["outcomes"], sys.argv[2], s["warm"]["urls"], s["warm"]["ok"], s["warm"]["failed"], s["warm"]["seconds"]))
PY
distinct=$(python3 -c "import json; print(json.load(open('$work/batch.json'))['warm']['urls'])")
after_warm=$(origin_downloads)

echo "1. devices through the edge:"
python3 fanout.py "$work/out.jsonl" "$base" "127.0.0.1:$edge_port" "$devices" "$concurrency" | tee "$work/edge.json"
after_devices=$(origin_downloads)

echo "2. devices through the edge, the origin killed:"
kill "$origin" && wait "$origin" 2>/dev/null || true
python3 fanout.py "$work/out.jsonl" "$base" "127.0.0.1:$edge_port" "$devices" "$concurrency" | tee "$work/edge-down.json"

echo "3. devices at the origin, no edge:"
start_origin
python3 fanout.py "$work/out.jsonl" "$base" "127.0.0.1:$origin_port" "$devices" "$concurrency" | tee "$work/origin.json"

python3 - "$work" "$distinct" "$after_warm" "$after_devices" <<'PY'
import json, sys
import figures
work, distinct, warm, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
runs = [("through the edge (warmed)", json.load(open(work + "/edge.json"))),
        ("through the edge, origin killed", json.load(open(work + "/edge-down.json"))),
        ("at the origin, no edge", json.load(open(work + "/origin.json")))]
print()
print("| devices | requests | errors | requests/s | TTFB p50 ms | TTFB p99 ms | device p99 ms |")
print("|---|---|---|---|---|---|---|")
for name, r in runs:
    print(f"| {name} | {r['requests']} | {r['errors']} | {r['requests_per_s']:.0f} | {r['ttfb_p50_ms']} | {r['ttfb_p99_ms']} | {r['device_p99_ms']} |")
edge = runs[0][1]
print()
print(f"- distinct objects (URLs): {distinct}; origin downloads: {warm} by the warm-up, {after - warm} by "
      f"{edge['requests']} device requests: {after} in all = {after / max(1, distinct):.3f}x the objects "
      f"(offload {100 * (1 - (after - warm) / max(1, edge['requests'])):.2f}%)")
print(f"- edge / origin requests/s: {edge['requests_per_s'] / max(1, runs[2][1]['requests_per_s']):.2f}x")
origin, down = runs[2][1], runs[1][1]
figures.record("a campaign's devices through the edge: requests/s", edge["requests_per_s"], "requests/s",
               peer="the origin alone, no edge", peer_value=origin["requests_per_s"])
figures.record("a campaign's devices through the edge: TTFB p99", edge["ttfb_p99_ms"], "ms", better="lower",
               peer="the origin alone, no edge", peer_value=origin["ttfb_p99_ms"])
figures.record("a campaign through the edge: origin downloads per object", after / max(1, distinct), "x",
               better="lower", goal="<= 1.0")
figures.record("a campaign through the edge, the origin killed: device errors", down["errors"], "requests",
               better="lower", goal="0")
PY
