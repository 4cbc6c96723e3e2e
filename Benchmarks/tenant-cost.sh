#!/usr/bin/env bash
# What the tenant lookup and limits cost the service (docs/tenants.md): `attache serve` with its
# key given plainly (`--api-keys`: a tenant per key) and the same key as a tenants file's row
# (its digest looked up, a share, a request rate, allowed media hosts checked on every hop, a
# setting of its own over the service's), run after run in turns on the same photos (16 clients,
# distinct 5-20 MP JPEGs, each run's URLs new so every request fetches and decodes), nginx as
# the media host. Prints each run's images/s and the ratio of the means.
#   bash Benchmarks/tenant-cost.sh [ROUNDS]   (default 6)
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-6}
bash prepare.sh >/dev/null
python3 -c "import uvloop" 2>/dev/null || pip install -q uvloop
. ./binary.sh
need_packages nginx-light
work=$(realpath work)/tenant-cost
rm -rf "$work" && mkdir -p "$work"
media_port=8911 service_port=8912
key=benchmark-key-000000000000
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true' EXIT

photos_5_20mp > "$work/files"
requests=$(($(wc -l < "$work/files") * 4))
# BENCH_QUICK=1: one round of one pass.
[ "$quick" = 1 ] && rounds=${1:-1} requests=$(wc -l < "$work/files")
digest=$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)
cat > "$work/tenants.json" <<JSON
{"tenants": [{"id": "acme", "keys": ["sha256:$digest"], "share": 2, "rate": 10000, "burst": 10000,
  "sources": {"allow": ["127.0.0.1", "*.example"], "deny": ["old.example"]},
  "settings": {"qualityTarget": 80}}]}
JSON
media_host "$media_port" "$PWD/work" 2
wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

# run KIND ROUND: one service, one run; prints its images/s.
run() {
    local args
    if [ "$1" = plain ]; then args=(--api-keys "$key"); else args=(--tenants "$work/tenants.json"); fi
    rm -rf "$work/store"
    "$bin" serve --port $service_port --store "$work/store" "${args[@]}" --allow-loopback --gc-interval 0s \
        > "$work/service-$1-$2.log" 2>&1 &
    local service=$!
    pids+=($service)
    wait_for "http://127.0.0.1:$service_port/healthz"
    python3 serve_load.py attache "http://127.0.0.1:$service_port" $key "http://127.0.0.1:$media_port" "$work/files" \
        --clients 16 --requests $requests --tag "$1$2" > "$work/$1-$2.json"
    kill $service
    wait $service 2>/dev/null || true
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['images_per_s'])" "$work/$1-$2.json"
}
plain=() tenant=()
# In turns, the first of each round alternating, so that neither is always the one after a rest.
for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then
        plain+=("$(run plain "$round")")
        tenant+=("$(run tenant "$round")")
    else
        tenant+=("$(run tenant "$round")")
        plain+=("$(run plain "$round")")
    fi
    echo "round $round: plain key ${plain[-1]} images/s, tenants file ${tenant[-1]} images/s"
done
python3 - "${plain[*]}" "${tenant[*]}" <<'PY'
import statistics, sys
import figures
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
print(f"plain key: mean {statistics.mean(a):.2f} images/s ({min(a):.2f}-{max(a):.2f}); "
      f"tenants file: mean {statistics.mean(b):.2f} ({min(b):.2f}-{max(b):.2f}); "
      f"ratio {statistics.mean(b) / statistics.mean(a):.3f}")
figures.record("service behind a tenants file: throughput", statistics.mean(b), "images/s",
               peer="attache, a plain API key", peer_value=statistics.mean(a), goal=">= 0.98x")
PY
