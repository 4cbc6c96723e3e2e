#!/usr/bin/env bash
# What traces cost (docs/benchmarks.md, "Traces"): the release `attache serve`, nginx as the media
# host and as the OTLP/HTTP collector (it takes each export and answers 200), and in one run, runs
# alternating between traces off (no OTEL_* variable) and traces on (OTEL_TRACES_SAMPLER=always_on,
# every request's spans exported: a batch every 500 ms, a queue of 16,384 spans; the count of any
# dropped is printed):
#   1. photos: payloads each naming a distinct 5-20 MP JPEG, 16 clients;
#   2. small: 3,000 payloads naming a 128 px JPEG, 16 clients (the per-request cost shows most).
#   bash Benchmarks/traces.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
need_packages nginx-light curl
work=$(realpath work)/traces
rm -rf "$work" && mkdir -p "$work"
media_port=8911 collector_port=8912 service_port=8913
key=benchmark-key-000000000000
service=""
trap '[ -n "$service" ] && kill $service 2>/dev/null; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true' EXIT

photos_5_20mp > "$work/files"
echo "Samples/gray.jpg" > "$work/small"
ln -sfn ../../Samples/media work/Samples
count=$(wc -l < "$work/files")

cat > "$work/nginx.conf" <<CONF
user root;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    types { image/jpeg jpg; }
    log_format export '\$content_length';
    server { listen 127.0.0.1:$media_port; root $PWD/work; }
    server {
        listen 127.0.0.1:$collector_port;
        client_max_body_size 64m;
        location = /v1/traces {
            access_log $work/exports.log export;
            default_type application/x-protobuf;
            return 200 "";
        }
    }
}
CONF
nginx -c "$work/nginx.conf"
wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; exit 1; }

start_service() { # $1: on or off
    if [ "$1" = on ]; then
        # Every span exported: batches every 500 ms, a queue that holds a second of them.
        OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$collector_port OTEL_TRACES_SAMPLER=always_on \
            OTEL_BSP_SCHEDULE_DELAY=500 OTEL_BSP_MAX_QUEUE_SIZE=16384 \
            "$bin" serve --port $service_port --store "$work/store-$1" --api-keys $key --allow-loopback \
            --max-queued 14 --gc-interval 0s > "$work/service-$1.log" 2>&1 &
    else
        "$bin" serve --port $service_port --store "$work/store-$1" --api-keys $key --allow-loopback \
            --max-queued 14 --gc-interval 0s > "$work/service-$1.log" 2>&1 &
    fi
    service=$!
    wait_for "http://127.0.0.1:$service_port/healthz"
}
stop_service() { kill -TERM "$service" && wait "$service" || true; service=""; }

media="http://127.0.0.1:$media_port"
rounds=3 small=3000
# BENCH_QUICK=1: one round, 300 small payloads.
[ "$quick" = 1 ] && rounds=1 small=300
for round in $(seq 1 "$rounds"); do
    for mode in off on; do
        rm -rf "$work/store-$mode"
        start_service $mode
        python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/files" \
            --clients 16 --requests $((count * 2)) --tag p$mode$round > "$work/photos-$mode-$round.json"
        python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "$media" "$work/small" \
            --clients 16 --requests $small --tag s$mode$round > "$work/small-$mode-$round.json"
        stop_service
        echo "round $round, traces $mode: photos $(python3 -c "import json; print(json.load(open('$work/photos-$mode-$round.json'))['images_per_s'])")/s, small $(python3 -c "import json; print(json.load(open('$work/small-$mode-$round.json'))['images_per_s'])")/s"
    done
done
rm -f work/Samples
exports=$(wc -l < "$work/exports.log" 2>/dev/null || echo 0)
dropped=$({ grep -o "dropped_count=[0-9]*" "$work/service-on.log" || true; } | awk -F= '{s += $2} END {print s + 0}')
failed=$(grep -c "Failed to export" "$work/service-on.log" || true)
bytes=$(awk '{s += $1} END {print s + 0}' "$work/exports.log" 2>/dev/null || echo 0)

python3 - "$work" "$exports" "$bytes" "$dropped" "$failed" "$rounds" <<'PY'
import json, sys
import figures
work, exports, sent, dropped, failed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rounds = range(1, int(sys.argv[6]) + 1)
load = lambda n: json.load(open(f"{work}/{n}.json"))
print()
print("| run (16 clients) | traces off, images/s | traces on, images/s | on / off | errors |")
print("|---|---|---|---|---|")
for kind, label in [("photos", "5-20 MP JPEGs"), ("small", "128 px JPEG")]:
    off = [load(f"{kind}-off-{r}") for r in rounds]
    on = [load(f"{kind}-on-{r}") for r in rounds]
    mean = lambda runs: sum(r["images_per_s"] for r in runs) / len(runs)
    errors = sum(r["errors"] for r in off + on)
    print(f"| {label} (mean of {len(rounds)} alternating runs) | {mean(off):.2f} | {mean(on):.2f} | "
          f"{mean(on) / mean(off):.3f}x | {errors} |")
    figures.record(f"service with every request traced, {label}: throughput", mean(on), "images/s",
                   peer="attache, traces off", peer_value=mean(off), goal=">= 0.95x")
print()
print(f"- exports the collector took: {exports} requests, {sent / 1e6:.1f} MB; spans dropped: {dropped}; "
      f"failed exports: {failed}")
PY
