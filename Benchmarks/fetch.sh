#!/usr/bin/env bash
# Fetch benchmark: 1,000 transfers of one 200 KB file from an nginx on 127.0.0.1, 64 at a time,
# `attache fetch` against `curl --parallel --parallel-max 64` over the same URLs. The client is
# pinned to core 0 and nginx to core 1; best of 5 runs each, alternating.
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v nginx >/dev/null || need+=(nginx-light)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
(cd .. && swift build -c release --product attache >/dev/null)
bin=$(cd .. && swift build -c release --show-bin-path)/attache

work=$PWD/work/fetch
rm -rf "$work" && mkdir -p "$work/www" "$work/nginx"
# 200 KB whose first bytes are a JPEG's (the fetch checks the type from the first bytes).
python3 - "$work/www/media.jpg" <<'PY'
import sys, random
random.seed(1)
body = bytes([0xFF, 0xD8, 0xFF, 0xE0]) + bytes(random.getrandbits(8) for _ in range(200 * 1024 - 4))
open(sys.argv[1], "wb").write(body)
PY
port=18080
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon on;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path $work/nginx;
    server {
        listen 127.0.0.1:$port;
        root $work/www;
    }
}
CONF
taskset -c 1 nginx -c "$work/nginx/nginx.conf"
trap 'kill $(cat "$work/nginx/nginx.pid") 2>/dev/null || true' EXIT
sleep 0.5

: > "$work/urls.txt"; : > "$work/curl.conf"
for i in $(seq 1 1000); do
    url="http://127.0.0.1:$port/media.jpg?i=$i"
    echo "$url" >> "$work/urls.txt"
    printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >> "$work/curl.conf"
done

best_attache=999; best_curl=999
for run in 1 2 3 4 5; do
    t0=$(date +%s.%N)
    taskset -c 0 "$bin" fetch --allow-loopback --concurrency 64 --quiet --urls "$work/urls.txt" 2>"$work/attache.log"
    t1=$(date +%s.%N)
    taskset -c 0 curl --parallel --parallel-max 64 -s -K "$work/curl.conf"
    t2=$(date +%s.%N)
    a=$(echo "$t1 - $t0" | bc); c=$(echo "$t2 - $t1" | bc)
    best_attache=$(echo "if ($a < $best_attache) $a else $best_attache" | bc)
    best_curl=$(echo "if ($c < $best_curl) $c else $best_curl" | bc)
done
grep -q "(0 failed" "$work/attache.log" || { cat "$work/attache.log"; echo "attache had failures" >&2; exit 1; }
printf '1000 transfers x 200 KB, loopback nginx, 64 in flight, client on one core, best of 5\n'
printf '| tool | seconds | transfers/s | vs curl |\n|---|---|---|---|\n'
printf '| attache fetch | %.3f | %.0f | %.2fx |\n' "$best_attache" "$(echo "1000 / $best_attache" | bc -l)" "$(echo "$best_curl / $best_attache" | bc -l)"
printf '| curl --parallel --parallel-max 64 | %.3f | %.0f | 1.00x |\n' "$best_curl" "$(echo "1000 / $best_curl" | bc -l)"
