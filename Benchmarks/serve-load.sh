#!/usr/bin/env bash
# The service under load, on loopback (docs/benchmarks.md, "Service under load"): release build of
# `attache serve`, nginx serving the photos as the media host, and in one run on the same files
#   1. mutate throughput, 16 clients, payloads each naming a distinct 5-20 MP JPEG, against
#      `attache resize` on the same files (two processes: both cores busy) and thumbor
#      (two processes on two ports, half the clients each, fit-in/1024x1024, no storage), with
#      PROGRESSIVE_JPEG on and off; the service runs again after thumbor, and the ratios to
#      thumbor take the mean of its two runs (they bracket thumbor's in time); `attache resize`
#      runs again after that, and the ratio to it takes the means of both (its runs bracket the
#      service's);
#   2. overload: 64 clients (a 503 is retried after its Retry-After), 503 latency and the p99
#      of accepted requests; and the load client's own floor for a 503 (the same 64 clients
#      against nginx answering 503 at once);
#   3. downloads: a stored ~200 KB attachment by its tokened URL with wrk -c 64, against nginx
#      serving the same file from disk;
#   4. memory: RSS of the service after 1,000 and after 10,000 mutate requests, and its peak
#      (VmHWM) through the 16- and 64-client runs;
#   5. fairness: a tiny payload (a 128x96 JPEG, ?deadline=300ms) posted one after another beside
#      16 heavy clients, on their API key and on a second one: its answer times and how many
#      were attached.
#   bash Benchmarks/serve-load.sh
# SERVE_ARGS (flags added to `attache serve`) and SERVE_ENV (variables for it, e.g. GLIBC_TUNABLES)
# compare settings on the same files. QUALITY (e.g. 80, thumbor's QUALITY, set in its
# configuration below) encodes `attache serve` and `attache resize` at that fixed quality instead
# of the default `auto`, so the three do the same encoding work.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
command -v thumbor >/dev/null || pip install -q thumbor
# The load client's event loop (serve_load.py runs on asyncio's own without it).
python3 -c "import uvloop" 2>/dev/null || pip install -q uvloop
. ./binary.sh
need_packages nginx-light wrk curl
work=$(realpath work)/serve
rm -rf "$work" && mkdir -p "$work"
media_port=8901 service_port=8902 thumbor_port=8903
key=benchmark-key-000000000000
key2=benchmark-key-000000000001
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true' EXIT

# The photos of 5-20 MP.
photos_5_20mp > "$work/files"
count=$(wc -l < "$work/files")
# 18 passes (468 requests of the 26 photos): a run's p99 rests on the five answers above it, and
# the first burst (every client at once) and the last requests (fewer clients left) are a small
# part of it. With 6 passes the p99 was the third-slowest answer of 156.
passes=18 tiny=300 wrk_seconds=10 small=(1000 9000)
# BENCH_QUICK=1: one pass, 30 tiny payloads, 2 s of downloads, 100 + 200 small payloads.
[ "$quick" = 1 ] && passes=1 tiny=30 wrk_seconds=2 small=(100 200)
requests=$((count * passes))
echo "files: $count JPEGs of 5-20 MP ($(grep -c . "$work/files") listed), $requests requests per run"

# nginx: the media host, and the download comparison.
# The load client's own floor: the service's path answered 503 at once.
media_host "$media_port" "$PWD/work" 2 \
    'location = /v1/notifications { add_header Retry-After 1 always; return 503; }'
media="http://127.0.0.1:$media_port"

wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hwm_mb() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

start_service() {
    env ${SERVE_ENV:-} "$bin" serve --port $service_port --store "$work/store" --api-keys $key,$key2 --allow-loopback \
        --max-queued 14 --gc-interval 0s --log-level info ${QUALITY:+--quality $QUALITY} ${SERVE_ARGS:-} > "$work/service.log" 2>&1 &
    service=$!
    pids+=($service)
    wait_for "http://127.0.0.1:$service_port/healthz"
}

# 1. attache resize on the same files, both cores; it runs again after the service's second
#    16-client run, so that its two runs bracket the service's as the service's bracket thumbor's.
split -n l/2 "$work/files" "$work/half-"
resize_run() {
    rm -rf "$work/resized"
    local start
    start=$(date +%s.%N)
    for half in "$work"/half-*; do
        (for _ in $(seq $passes); do sed 's#^#work/#' "$half"; done | xargs "$bin" resize --max-side 1024 ${QUALITY:+--quality $QUALITY} --out "$work/resized" > /dev/null) &
    done
    wait
    python3 -c "import time; print(round($requests / (time.time() - $start), 2))"
}
resize_ips=$(resize_run)
echo "attache resize (2 processes): $resize_ips images/s"

# The service's RSS every quarter second while it is under load: "seconds MB" lines.
sample_rss() {
    local start
    start=$(date +%s.%N)
    while [ -e "/proc/$1/status" ]; do
        awk -v t="$(echo "$(date +%s.%N) - $start" | bc)" '/VmRSS/ {printf "%.2f %.1f\n", t, $2 / 1024}' "/proc/$1/status"
        sleep 0.25
    done > "$2"
}

start_service
sample_rss "$service" "$work/rss.txt" &
sampler=$!
pids+=($sampler)
echo "attache serve, 16 clients:"
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/files" \
    --clients 16 --requests $requests --tag a16 | tee "$work/attache16.json"
hwm16=$(hwm_mb $service)
echo "attache serve, 64 clients (503 retried after Retry-After):"
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/files" \
    --clients 64 --requests $requests --tag a64 --retry-after | tee "$work/attache64.json"
echo "attache serve, 64 clients, 503 not retried (each refused request counts once):"
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/files" \
    --clients 64 --requests $requests --tag b64 | tee "$work/attache64b.json"
hwm64=$(hwm_mb $service)
kill $sampler 2>/dev/null || true
echo "{\"peak_rss_16_mb\": $hwm16, \"peak_rss_64_mb\": $hwm64}" | tee "$work/peak.json"
# The same 64 clients against nginx answering 503 at once: what the client's clock adds alone.
echo "the load client's floor: 64 clients, nginx answering 503 at once:"
python3 serve_load.py attache "$media" $key "$media" "$work/files" \
    --clients 64 --requests $requests --tag floor | tee "$work/floor64.json"

# 5. A tiny payload beside 16 heavy clients: on their key, then on a second one.
python3 -c "from PIL import Image; Image.radial_gradient('L').resize((128, 96)).convert('RGB').save('work/tiny.jpg', quality=85)"
for tiny_key in $key $key2; do
    tag=$([ "$tiny_key" = "$key" ] && echo one || echo two)
    echo "a tiny payload beside 16 heavy clients ($tag API key(s)):"
    python3 tiny_beside.py "http://127.0.0.1:$service_port" $key $tiny_key "$media" "$work/files" tiny.jpg \
        --clients 16 --tiny $tiny --deadline 300ms --tag "tiny$tag" | tee "$work/tiny-$tag.json"
done

for progressive in True False; do
    cat > "$work/thumbor.conf" <<CONF
LOADER = 'thumbor.loaders.http_loader'
STORAGE = 'thumbor.storages.no_storage'
RESULT_STORAGE = None
ALLOW_UNSAFE_URL = True
PROGRESSIVE_JPEG = $progressive
QUALITY = 80
HTTP_LOADER_MAX_BODY_SIZE = 100 * 1024 * 1024
MAX_WIDTH = 0
MAX_HEIGHT = 0
CONF
    # Two processes on two ports, the clients split evenly between them: with one port and
    # `--processes 2`, connections opened together can land mostly on one process.
    thumbor_pids=()
    for port in $thumbor_port $((thumbor_port + 1)); do
        thumbor --port $port --conf "$work/thumbor.conf" > "$work/thumbor-$port.log" 2>&1 &
        thumbor_pids+=($!)
        pids+=($!)
        wait_for "http://127.0.0.1:$port/healthcheck"
    done
    echo "thumbor (2 processes, PROGRESSIVE_JPEG = $progressive), 16 clients:"
    python3 serve_load.py thumbor "http://127.0.0.1:$thumbor_port,http://127.0.0.1:$((thumbor_port + 1))" - \
        "$media" "$work/files" --clients 16 --requests $requests --tag t$progressive | tee "$work/thumbor-$progressive.json"
    kill ${thumbor_pids[*]} 2>/dev/null || true
    wait ${thumbor_pids[*]} 2>/dev/null || true
done

# The service's 16-client run again, so that its two runs bracket thumbor's in time: this
# machine's speed moves by 10-20% over minutes, and the ratio to thumbor takes their mean.
echo "attache serve, 16 clients, again after thumbor:"
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/files" \
    --clients 16 --requests $requests --tag a16b | tee "$work/attache16b.json"
resize_ips_after=$(resize_run)
echo "attache resize (2 processes), again after the service: $resize_ips_after images/s"

# 3. Downloads: a ~200 KB JPEG (one photo at 2000 px, Q95), stored, by its tokened URL; nginx
#    serves the same file from disk.
mkdir -p "$work/dl"
vips thumbnail work/jpeg/Fossa_by_Jasper_Roks.jpg "$work/dl/photo.jpg[Q=95,strip]" 2000
put=$("$bin" store put --store "$work/store" --json --token-ttl 1h "$work/dl/photo.jpg")
id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$put")
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$put")
size=$(stat -c %s "$work/dl/photo.jpg")
cp "$work/dl/photo.jpg" work/serve-download.jpg
url="http://127.0.0.1:$service_port/attachments/$token/$id.jpg"
curl -sf -o "$work/dl/got.jpg" "$url" && cmp -s "$work/dl/got.jpg" "$work/dl/photo.jpg"
echo "download of $size bytes, wrk -t 2 -c 64 -d ${wrk_seconds}s:"
attache_rps=$(wrk -t 2 -c 64 -d ${wrk_seconds}s "$url" | awk '/Requests\/sec/ {print $2}')
nginx_rps=$(wrk -t 2 -c 64 -d ${wrk_seconds}s "$media/serve-download.jpg" | awk '/Requests\/sec/ {print $2}')
echo "{\"attache_rps\": $attache_rps, \"nginx_rps\": $nginx_rps}" | tee "$work/downloads.json"
rm -f work/serve-download.jpg

# 4. Memory: small distinct payloads (each a new source: fetched, transformed, stored).
echo "Samples/gray.jpg" > "$work/small"
ln -sfn ../../Samples/media work/Samples
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/small" \
    --clients 16 --requests ${small[0]} --tag m1 > "$work/mem1.json"
rss1=$(rss_mb $service)
python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/small" \
    --clients 16 --requests ${small[1]} --tag m2 > "$work/mem2.json"
rss2=$(rss_mb $service)
rm -f work/Samples
echo "{\"rss_after_1000_mb\": $rss1, \"rss_after_10000_mb\": $rss2}" | tee "$work/memory.json"
kill -TERM $service && wait $service || true

python3 - "$work" "$resize_ips" "$resize_ips_after" <<'PY'
import json, sys
import figures
work, resize, resize_after = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
load = lambda n: json.load(open(f"{work}/{n}.json"))
a16, a16b, a64, a64b = load("attache16"), load("attache16b"), load("attache64"), load("attache64b")
# The service's two 16-client runs, before and after thumbor's: their mean is set against thumbor.
both = {"images_per_s": (a16["images_per_s"] + a16b["images_per_s"]) / 2, "p99_s": (a16["p99_s"] + a16b["p99_s"]) / 2}
tp, tn = load("thumbor-True"), load("thumbor-False")
dl, mem, peak = load("downloads"), load("memory"), load("peak")
tiny1, tiny2 = load("tiny-one"), load("tiny-two")
m1, m2 = load("mem1"), load("mem2")
ms = lambda s: "-" if s is None else f"{s * 1000:.0f}"
print()
print("| run (16 clients unless said) | images/s | p50 ms | p99 ms | errors | 503 |")
print("|---|---|---|---|---|---|")
print(f"| attache resize, 2 processes (no HTTP) | {resize:.2f} | | | | |")
print(f"| attache resize, again after the service's second run | {resize_after:.2f} | | | | |")
for name, r in [("attache serve", a16), ("thumbor, 2 processes, PROGRESSIVE_JPEG = True", tp),
                ("thumbor, 2 processes, PROGRESSIVE_JPEG = False", tn), ("attache serve, again after thumbor", a16b),
                ("attache serve, 64 clients, 503 retried after Retry-After", a64),
                ("attache serve, 64 clients, 503 not retried", a64b)]:
    print(f"| {name} | {r['images_per_s']:.2f} | {ms(r['p50_s'])} | {ms(r['p99_s'])} | {r['errors']} | {r['refused']} |")
print()
# The same for `attache resize`: its two runs bracket the service's two, and their means are set
# against each other; the first run of each alone (the two adjacent in time) is printed too.
resize_mean = (resize + resize_after) / 2
print(f"- attache serve / attache resize (each's two runs averaged: {both['images_per_s']:.2f} / "
      f"{resize_mean:.2f} images/s): {both['images_per_s'] / resize_mean:.2f}x; "
      f"the first runs alone {a16['images_per_s'] / resize:.2f}x")
print(f"- attache serve / thumbor (the service's two runs averaged: {both['images_per_s']:.2f} images/s, p99 "
      f"{ms(both['p99_s'])} ms): {both['images_per_s'] / tp['images_per_s']:.2f}x (PROGRESSIVE_JPEG = True), "
      f"{both['images_per_s'] / tn['images_per_s']:.2f}x (False); p99 {both['p99_s'] / tp['p99_s']:.2f}x / "
      f"{both['p99_s'] / tn['p99_s']:.2f}x thumbor's ({ms(tp['p99_s'])} / {ms(tn['p99_s'])} ms)")
print(f"- attache serve / thumbor, the first run alone: {a16['images_per_s'] / tp['images_per_s']:.2f}x / "
      f"{a16['images_per_s'] / tn['images_per_s']:.2f}x, p99 {a16['p99_s'] / tp['p99_s']:.2f}x / "
      f"{a16['p99_s'] / tn['p99_s']:.2f}x")
for name, r in [("retried", a64), ("not retried", a64b)]:
    print(f"- 64 clients ({name}): {r['refused']} answered 503, p50 {r['refused_p50_ms']} ms, p99 {r['refused_p99_ms']} ms, "
          f"max {r['refused_max_ms']} ms;"
          f" accepted p99 {ms(r['p99_s'])} ms = {r['p99_s'] / a16['p99_s']:.2f}x the p99 at 16")
floor = load("floor64")
print(f"- the load client's own floor (the same 64 clients, nginx answering 503 at once): p50 "
      f"{floor['refused_p50_ms']} ms, p99 {floor['refused_p99_ms']} ms")
# The service's own time for its 503 answers (request log, from the request to its answer).
refused = sorted(float(line.split(" ms=")[1].split()[0]) for line in open(f"{work}/service.log")
                 if "status=503" in line and " ms=" in line)
if refused:
    print(f"- 503 answers as the service timed them (its request log): {len(refused)}, "
          f"p99 {refused[int(0.99 * (len(refused) - 1))]:.2f} ms, max {refused[-1]:.2f} ms")
print(f"- downloads: attache {dl['attache_rps']:.0f} requests/s, nginx {dl['nginx_rps']:.0f}: "
      f"{dl['attache_rps'] / dl['nginx_rps']:.2f}x")
print(f"- peak RSS (VmHWM): {peak['peak_rss_16_mb']} MB through the 16-client run, {peak['peak_rss_64_mb']} MB "
      f"through the 64-client runs")
for name, t in [("one API key", tiny1), ("two API keys", tiny2)]:
    print(f"- a tiny payload beside 16 heavy clients ({name}, ?deadline={t['deadline']}): answered p50 {t['p50_ms']} ms, "
          f"p90 {t['p90_ms']} ms, p99 {t['p99_ms']} ms, max {t['max_ms']} ms; {t['attached']} of {t['tiny']} attached "
          f"({t['attached_share'] * 100:.1f}%); heavy meanwhile {t['heavy_images_per_s']} images/s")
figures.series("service: answer times, 16 clients, 5-20 MP photos", "cdf",
               {"attache serve": a16["latencies_ms"] + a16b["latencies_ms"],
                "thumbor (2 processes)": tp["latencies_ms"] + tn["latencies_ms"]}, "ms", "share of answers")
rss = [[float(t), float(mb)] for t, mb in (line.split() for line in open(f"{work}/rss.txt") if line.strip())]
figures.series("service: RSS through the 16- and the 64-client runs", "line", {"attache serve": rss}, "s", "MB")
thumbor_ips = (tp["images_per_s"] + tn["images_per_s"]) / 2
thumbor_p99 = (tp["p99_s"] + tn["p99_s"]) / 2
peer = "thumbor (2 processes, QUALITY 80)"
figures.record("service, 16 clients, 5-20 MP photos: throughput", both["images_per_s"], "images/s", peer=peer,
               peer_value=thumbor_ips, goal=">= 1.1x")
figures.record("service, 16 clients, 5-20 MP photos: p99", both["p99_s"] * 1000, "ms", peer=peer,
               peer_value=thumbor_p99 * 1000, better="lower", goal="<= 0.5x")
figures.record("service: peak RSS through 64 clients", peak["peak_rss_64_mb"], "MB", better="lower", goal="<= 300 MB")
figures.record("service: tiny payloads beside 16 heavy clients, attached in 300 ms", tiny2["attached_share"] * 100, "%",
               goal=">= 99%")
figures.record("service: tiny payloads beside 16 heavy clients, p90", tiny2["p90_ms"], "ms", better="lower",
               goal="<= 50 ms")
figures.record("service: tokened downloads, wrk -c 64", dl["attache_rps"], "requests/s", peer="nginx from disk",
               peer_value=dl["nginx_rps"], goal=">= 1.0x")
print(f"- memory: RSS {mem['rss_after_1000_mb']} MB after 1,000 requests, {mem['rss_after_10000_mb']} MB after 10,000 "
      f"({(mem['rss_after_10000_mb'] / mem['rss_after_1000_mb'] - 1) * 100:+.1f}%); "
      f"errors {m1['errors'] + m2['errors']}, {m2['images_per_s']:.0f} requests/s")
PY
