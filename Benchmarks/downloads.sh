#!/usr/bin/env bash
# Tokened downloads against nginx (docs/benchmarks.md, "Downloads against nginx"): release build
# of `attache serve`, one ~200 KB JPEG (a photo at 2000 px, Q95) stored and downloaded by its
# tokened URL with `wrk -t 2 -c 64`, and nginx (2 workers, sendfile, tcp_nopush, no access log)
# serving the same file from disk; in one run, interleaved, best of ROUNDS (default 3) each:
#   1. a directory store, the service logging at warning (as nginx with access_log off) and at
#      info (a log line per request);
#   2. a shared store (PostgreSQL + radosgw from scripts/shared-servers.sh): a replica serving
#      its copy, the object stored by another process.
# Also the CPU each server spent per request (user and system, from /proc).
# BENCH_QUICK=1: one round of 2 s each.
#   bash Benchmarks/downloads.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
bash ../scripts/shared-servers.sh install
. ./binary.sh
need_packages nginx-light wrk curl
work=$(realpath work)/downloads
rm -rf "$work" && mkdir -p "$work/www"
nginx_port=8971 dir_port=8972 info_port=8973 shared_port=8974
key=benchmark-key-000000000000
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_RUN:-8}
[ "$quick" = 1 ] && rounds=1 seconds=2
servers=$(mktemp -d /tmp/attache-bench-servers.XXXXXX)
pids=()
cleanup() {
    kill ${pids[*]} 2>/dev/null || true
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    bash ../scripts/shared-servers.sh stop "$servers"
}
trap cleanup EXIT

vips thumbnail work/jpeg/Fossa_by_Jasper_Roks.jpg "$work/www/photo.jpg[Q=95,strip]" 2000
size=$(stat -c %s "$work/www/photo.jpg")
media_host "$nginx_port" "$work/www" 2

PG_PORT=21632 S3_PORT=25680 MON_PORT=29989 bash ../scripts/shared-servers.sh start "$servers"
. "$servers/env"
export ATTACHE_S3_ENDPOINT=$ATTACHE_TEST_S3_ENDPOINT AWS_REGION=$ATTACHE_TEST_S3_REGION
export AWS_ACCESS_KEY_ID=$ATTACHE_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$ATTACHE_TEST_S3_SECRET_KEY
ATTACHE_KEYRING_KEY=$(head -c 32 /dev/urandom | base64)
export ATTACHE_KEYRING_KEY
psql -q -X "$ATTACHE_TEST_POSTGRES" -c "CREATE DATABASE downloads" >/dev/null
shared=(--store "${ATTACHE_TEST_POSTGRES%/*}/downloads" --blobs s3://downloads)

wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }
serve() { # port log-level store options...
    local port=$1 level=$2
    shift 2
    "$bin" serve --port "$port" --api-keys $key --allow-loopback --gc-interval 0s --log-level "$level" "$@" \
        > "$work/serve-$port.log" 2>&1 &
    pids+=($!)
    echo $! > "$work/pid-$port"
    wait_for "http://127.0.0.1:$port/healthz"
}
# Stores the photo (a separate process, as a push backend's would be) and prints its URL on $port.
stored_url() { # port store options...
    local port=$1
    shift
    local put
    put=$("$bin" store put "$@" --json --token-ttl 1h "$work/www/photo.jpg")
    python3 -c 'import json,sys; p=json.loads(sys.argv[1]); print("http://127.0.0.1:%s/attachments/%s/%s.jpg" % (sys.argv[2], p["token"], p["id"]))' "$put" "$port"
}

serve $dir_port warning --store "$work/store"
serve $info_port info --store "$work/store"
serve $shared_port warning "${shared[@]}" --blob-cache "$work/cache"
dir_url=$(stored_url $dir_port --store "$work/store")
info_url=${dir_url/:$dir_port\//:$info_port/}
shared_url=$(stored_url $shared_port "${shared[@]}")
for url in "$dir_url" "$info_url" "$shared_url" "http://127.0.0.1:$nginx_port/photo.jpg"; do
    curl -sf -o "$work/got.jpg" "$url" && cmp -s "$work/got.jpg" "$work/www/photo.jpg" || { echo "wrong bytes from $url" >&2; exit 1; }
done

# One wrk run: requests/s, then user and system microseconds per request of the server's processes.
run() { # name url pids...
    local name=$1 url=$2
    shift 2
    local before after rps
    before=$(for p in "$@"; do awk '{print $14, $15}' "/proc/$p/stat"; done | awk '{u += $1; s += $2} END {print u, s}')
    rps=$(wrk -t 2 -c 64 -d "${seconds}s" "$url" | awk '/Requests\/sec/ {print $2}')
    after=$(for p in "$@"; do awk '{print $14, $15}' "/proc/$p/stat"; done | awk '{u += $1; s += $2} END {print u, s}')
    echo "$name $rps $before $after" >> "$work/runs"
}
nginx_pids=$(pgrep -f "nginx: worker" | tr '\n' ' ')
echo "downloads of $size bytes, wrk -t 2 -c 64 -d ${seconds}s, $rounds rounds interleaved:"
for round in $(seq 1 "$rounds"); do
    run nginx "http://127.0.0.1:$nginx_port/photo.jpg" $nginx_pids
    run directory "$dir_url" "$(cat "$work/pid-$dir_port")"
    run directory-info "$info_url" "$(cat "$work/pid-$info_port")"
    run shared "$shared_url" "$(cat "$work/pid-$shared_port")"
done

python3 - "$work/runs" "$seconds" "$(getconf CLK_TCK)" "$rounds" <<'PY'
import json, sys
import figures
runs, seconds, tick = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
best = {}
for line in open(runs):
    name, rps, u0, s0, u1, s1 = line.split()
    rps = float(rps)
    per = lambda a, b: (int(b) - int(a)) / tick * 1e6 / (rps * seconds)
    if name not in best or rps > best[name][0]:
        best[name] = (rps, per(u0, u1), per(s0, s1))
nginx = best["nginx"][0]
print()
print("| server | requests/s | against nginx | CPU µs per request (user + system) |")
print("|---|---|---|---|")
for name, label in [("nginx", "nginx, 2 workers, sendfile, tcp_nopush, no access log"),
                    ("directory", "attache serve, directory store, log level warning"),
                    ("directory-info", "attache serve, directory store, log level info (a line per request)"),
                    ("shared", "attache serve, shared store (PostgreSQL + radosgw), the replica's copy")]:
    rps, user, system = best[name]
    print(f"| {label} | {rps:.0f} | {rps / nginx:.2f}x | {user:.1f} + {system:.1f} |")
json.dump({k: {"rps": v[0], "user_us": v[1], "system_us": v[2]} for k, v in best.items()}, open(runs + ".json", "w"))
peer = f"nginx from disk (best of {sys.argv[4]})"
figures.record("tokened downloads, directory store, log level info (the default): throughput",
               best["directory-info"][0], "requests/s", peer=peer, peer_value=nginx, goal=">= 0.95x")
figures.record("tokened downloads, directory store, log level warning: throughput", best["directory"][0],
               "requests/s", peer=peer, peer_value=nginx)
figures.record("tokened downloads, shared store, the replica's copy: throughput", best["shared"][0],
               "requests/s", peer=peer, peer_value=nginx, goal=">= 0.9x")
figures.record("tokened downloads: CPU per request, directory store", best["directory"][1] + best["directory"][2],
               "µs", peer="nginx", peer_value=best["nginx"][1] + best["nginx"][2], better="lower")
PY
