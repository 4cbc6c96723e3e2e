#!/usr/bin/env bash
# Tenants under attack, on loopback (docs/benchmarks.md, "Tenants"): release build of `attache
# serve`, nginx serving the photos as the media host, and in one run:
#   1. isolation: tenant A posts payloads naming distinct 5-20 MP photos on 40 connections as fast
#      as it can; tenant B posts a tiny payload (a 128x96 JPEG, a distinct URL, ?deadline=300ms)
#      every 100 ms: B's answer times and how many were attached within 300 ms — with a tenants
#      file, and at the defaults (two --api-keys, no file);
#   2. a burst: tenant C (rate 20/s, burst 20) posts tiny payloads on 4 connections at 10x its
#      rate (200/s), then as fast as it can (mostly answered 429), while B posts as in 1; B's p99
#      against B alone;
#   3. rotation under load: 16 clients post small payloads on three keys of one tenant; the file
#      is rewritten (one key out, one in) and the service gets SIGHUP: the answers on the keys
#      that stayed valid that were not 200, and how soon the old key was refused.
# BENCH_QUICK=1: 30 tiny payloads a run instead of 300.
#   bash Benchmarks/tenants.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
need_packages nginx-light curl
work=$(realpath work)/tenants
rm -rf "$work" && mkdir -p "$work"
media_port=8911 service_port=8912
key_a=tenant-a-key-0000000000000000 key_b=tenant-b-key-0000000000000000 key_c=tenant-c-key-0000000000000000
key_keep=rotation-keep-000000000000000 key_old=rotation-old-0000000000000000 key_new=rotation-new-0000000000000000
pids=()
trap 'kill ${pids[*]} 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true' EXIT
tiny=300
[ "$quick" = 1 ] && tiny=30
digest() { printf 'sha256:%s' "$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)"; }

photos_5_20mp > "$work/files"
python3 -c "from PIL import Image; Image.radial_gradient('L').resize((128, 96)).convert('RGB').save('work/tiny.jpg', quality=85)"
echo "tiny.jpg" > "$work/tiny-files"

media_host "$media_port" "$PWD/work" 2
media="http://127.0.0.1:$media_port"
wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

start_service() {
    "$bin" serve --port $service_port --store "$work/store" --allow-loopback --gc-interval 0s --log-level warning \
        "$@" > "$work/service.log" 2>&1 &
    service=$!
    pids+=($service)
    wait_for "http://127.0.0.1:$service_port/healthz"
}
stop_service() { kill "$service"; wait "$service" 2>/dev/null || true; }

cat > "$work/tenants.json" <<JSON
{"tenants": [
  {"id": "a", "keys": ["$(digest $key_a)"]},
  {"id": "b", "keys": ["$(digest $key_b)"]},
  {"id": "c", "keys": ["$(digest $key_c)"], "rate": 20, "burst": 20}
]}
JSON

# 1. Isolation, with the tenants file and at the defaults.
start_service --tenants "$work/tenants.json"
echo "B's tiny payloads every 100 ms beside A on 40 connections (tenants file):"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_a $key_b "$media" "$work/files" tiny.jpg \
    --clients 40 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag file | tee "$work/isolation-file.json"

# 2. A burst of C beside B; B alone first.
echo "B alone:"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_c $key_b "$media" "$work/tiny-files" tiny.jpg \
    --clients 0 --warm 0 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag alone | tee "$work/burst-alone.json"
echo "B beside C at its rate on 4 connections (C: rate 20/s, burst 20):"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_c $key_b "$media" "$work/tiny-files" tiny.jpg \
    --clients 4 --pace 5 --warm 1 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag atrate | tee "$work/atrate.json"
echo "B beside C at 10x its rate on 4 connections:"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_c $key_b "$media" "$work/tiny-files" tiny.jpg \
    --clients 4 --pace 50 --warm 1 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag burst | tee "$work/burst.json"
echo "B beside C as fast as it can on 4 connections:"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_c $key_b "$media" "$work/tiny-files" tiny.jpg \
    --clients 4 --warm 1 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag flood | tee "$work/flood.json"
stop_service

start_service --api-keys $key_a,$key_b
echo "B's tiny payloads every 100 ms beside A on 40 connections (defaults: two --api-keys):"
python3 tiny_beside.py "http://127.0.0.1:$service_port" $key_a $key_b "$media" "$work/files" tiny.jpg \
    --clients 40 --tiny "$tiny" --interval 0.1 --deadline 300ms --tag defaults | tee "$work/isolation-defaults.json"
stop_service

# 3. Rotation under load.
cat > "$work/rotation.json" <<JSON
{"tenants": [{"id": "r", "keys": ["$(digest $key_keep)", "$(digest $key_old)"]}]}
JSON
cat > "$work/rotation-new.json" <<JSON
{"tenants": [{"id": "r", "keys": ["$(digest $key_keep)", "$(digest $key_new)"]}]}
JSON
start_service --tenants "$work/rotation.json"
echo "rotation under load (16 clients; one key out, one in, SIGHUP):"
python3 rotation.py "http://127.0.0.1:$service_port" "$media" tiny.jpg "$work/rotation.json" "$work/rotation-new.json" \
    "$service" $key_keep $key_old $key_new --clients 16 | tee "$work/rotation.json.out"
stop_service

python3 - "$work" <<'PY'
import json, sys
import figures
w = sys.argv[1]
file, defaults = (json.load(open(f"{w}/isolation-{n}.json")) for n in ("file", "defaults"))
alone, burst = json.load(open(f"{w}/burst-alone.json")), json.load(open(f"{w}/burst.json"))
flood, atrate = json.load(open(f"{w}/flood.json")), json.load(open(f"{w}/atrate.json"))
rotation = json.loads(open(f"{w}/rotation.json.out").read())
for name, r in (("tenants file", file), ("defaults", defaults)):
    print(f"isolation ({name}): B p50 {r['p50_ms']} ms, p90 {r['p90_ms']} ms, p99 {r['p99_ms']} ms, "
          f"attached within 300 ms {r['within_300ms_attached']}/{r['tiny']}; A {r['heavy_images_per_s']} images/s, "
          f"A's answers {r['heavy_statuses']}")
for name, r in (("at its rate", atrate), ("at 10x its rate", burst), ("as fast as it can", flood)):
    print(f"C {name} ({r['heavy_requests_per_s']} requests/s): B p99 {r['p99_ms']} ms against {alone['p99_ms']} ms "
          f"alone ({r['p99_ms'] / alone['p99_ms']:.2f}x), p50 {r['p50_ms']} against {alone['p50_ms']}; "
          f"C's answers {r['heavy_statuses']}; against B beside C at its rate {r['p99_ms'] / atrate['p99_ms']:.2f}x")
print(f"rotation: {rotation['answers']} answers; keep not 200: {rotation['keep_not_200']}/{rotation['keep']}, "
      f"new after its first 200 not 200: {rotation['new_after_not_200']}/{rotation['new_after_first_200']}, "
      f"old refused {rotation['old_refused_after_s']} s after SIGHUP, old 200s later than 1 s: "
      f"{rotation['old_200_later_than_1s']}, new accepted {rotation['new_accepted_after_s']} s after")
for name, r in (("a tenants file", file), ("the defaults (two --api-keys)", defaults)):
    figures.record(f"tenant B beside A's 40 heavy connections, {name}: attached within 300 ms",
                   100 * r["within_300ms_attached"] / r["tiny"], "%", goal=">= 99%")
    figures.record(f"tenant B beside A's 40 heavy connections, {name}: p90", r["p90_ms"], "ms", better="lower",
                   goal="<= 50 ms")
figures.record("tenant B beside C flooding past its rate: p99", flood["p99_ms"], "ms", better="lower",
               peer="B alone", peer_value=alone["p99_ms"])
figures.record("keys rotated under load: answers on the kept key not 200", rotation["keep_not_200"], "requests",
               better="lower", goal="0")
PY
