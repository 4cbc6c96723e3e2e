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
. ./binary.sh

rm -rf work/fetch && mkdir -p work/fetch/www work/fetch/nginx
work=$(cd work/fetch && pwd)
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

: > "$work/urls.txt"; : > "$work/curl-null.conf"; : > "$work/curl-files.conf"
transfers=1000 runs=5
[ "$quick" = 1 ] && transfers=200 runs=1
for i in $(seq 1 "$transfers"); do
    url="http://127.0.0.1:$port/media.jpg?i=$i"
    echo "$url" >> "$work/urls.txt"
    printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >> "$work/curl-null.conf"
    printf 'url = "%s"\noutput = "%s/out-curl/%d.jpg"\n' "$url" "$work" "$i" >> "$work/curl-files.conf"
done

# seconds of the fastest of 5 runs of a command (client pinned to core 0)
best() {
    local best=999 t0 t1 d
    for run in $(seq 1 "$runs"); do
        rm -rf "$work/out-attache" "$work/out-curl"; mkdir -p "$work/out-attache" "$work/out-curl"; sync
        t0=$(date +%s.%N)
        taskset -c 0 "$@" >/dev/null 2>"$work/last.log"
        t1=$(date +%s.%N)
        d=$(echo "$t1 - $t0" | bc)
        best=$(echo "if ($d < $best) $d else $best" | bc)
    done
    echo "$best"
}
row() { printf '| %s | %.3f | %.0f | %.2fx |\n' "$1" "$2" "$(echo "$transfers / $2" | bc -l)" "$(echo "$3 / $2" | bc -l)"; }

a_mem=$(best "$bin" fetch --allow-loopback --concurrency 64 --quiet --urls "$work/urls.txt")
grep -q "(0 failed" "$work/last.log" || { cat "$work/last.log"; exit 1; }
c_null=$(best curl --parallel --parallel-max 64 -s -K "$work/curl-null.conf")
a_files=$(best "$bin" fetch --allow-loopback --concurrency 64 --quiet --out "$work/out-attache" --urls "$work/urls.txt")
grep -q "(0 failed" "$work/last.log" || { cat "$work/last.log"; exit 1; }
c_files=$(best curl --parallel --parallel-max 64 -s -K "$work/curl-files.conf")
cmp -s "$work/out-attache/$transfers.jpg" "$work/www/media.jpg" && cmp -s "$work/out-curl/$transfers.jpg" "$work/www/media.jpg"

echo "$transfers transfers x 200 KB from nginx on 127.0.0.1 (core 1), 64 in flight, client on core 0, best of $runs"
echo "| run | seconds | transfers/s | vs curl |"
echo "|---|---|---|---|"
row "attache fetch --out DIR (every body saved)" "$a_files" "$c_files"
row "curl --parallel --parallel-max 64, -o per URL" "$c_files" "$c_files"
row "attache fetch (bodies kept in memory, dropped)" "$a_mem" "$c_null"
row "curl --parallel --parallel-max 64 -o /dev/null" "$c_null" "$c_null"
figure "200 KB fetches, 64 in flight, bodies saved: throughput" "$(echo "$transfers / $a_files" | bc -l)" transfers/s \
    --peer "curl --parallel" --peer-value "$(echo "$transfers / $c_files" | bc -l)" --goal ">= 1.0x"
figure "200 KB fetches, 64 in flight, in memory: throughput" "$(echo "$transfers / $a_mem" | bc -l)" transfers/s \
    --peer "curl --parallel -o /dev/null" --peer-value "$(echo "$transfers / $c_null" | bc -l)" --goal ">= 1.0x"
