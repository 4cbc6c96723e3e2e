#!/usr/bin/env bash
# The shared store (docs/benchmarks.md, "Shared store across replicas"): PostgreSQL + radosgw from scripts/shared-servers.sh,
# release build of attache, nginx as the media host; in one run:
#   1. mutate throughput, 16 clients, 5-20 MP photos: one replica pinned to core 0, then two
#      replicas pinned to cores 0 and 1 behind a round-robin client (the servers, nginx and the
#      client run unpinned);
#   2. 10,000 tokened downloads spread over both replicas, every byte checked: 50 photos mutated
#      through the replicas in turn, then downloaded from either (each replica with a copy cache
#      of its own) against the same over two replicas sharing one local directory store;
#   3. a 2,000-item campaign, two `attache batch --campaign` workers, 20 SIGKILLs of a random
#      worker (restarted at once): manifest lines, completions per item, `store verify`.
# BENCH_QUICK=1: the sample photos instead of 5-20 MP ones, 1,000 downloads, 200 items, 4 kills.
#   bash Benchmarks/shared.sh
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
bash ../scripts/shared-servers.sh install
. ./binary.sh
need_packages nginx-light curl
work=$(realpath work)/shared
rm -rf "$work" && mkdir -p "$work"
media_port=8911 a_port=8912 b_port=8913
key=benchmark-key-000000000000
servers=$(mktemp -d /tmp/attache-bench-servers.XXXXXX)
pids=()
cleanup() {
    kill ${pids[*]} 2>/dev/null || true
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    bash ../scripts/shared-servers.sh stop "$servers"
}
trap cleanup EXIT
PG_PORT=21532 S3_PORT=25580 MON_PORT=29889 bash ../scripts/shared-servers.sh start "$servers"
. "$servers/env"
export ATTACHE_S3_ENDPOINT=$ATTACHE_TEST_S3_ENDPOINT AWS_REGION=$ATTACHE_TEST_S3_REGION
export AWS_ACCESS_KEY_ID=$ATTACHE_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$ATTACHE_TEST_S3_SECRET_KEY
ATTACHE_KEYRING_KEY=$(head -c 32 /dev/urandom | base64)
export ATTACHE_KEYRING_KEY
psql -q -X "$ATTACHE_TEST_POSTGRES" -c "CREATE DATABASE bench" >/dev/null
pg=${ATTACHE_TEST_POSTGRES%/*}/bench
shared=(--store "$pg" --blobs s3://bench)

downloads=10000 items=2000 kill_count=20
ln -sfn ../../Samples/media work/Samples
if [ "$quick" = 1 ]; then
    downloads=1000 items=200 kill_count=4
    printf '%s\n' Samples/waterfall-rotated.jpg Samples/portrait-progressive.jpg Samples/gray.jpg > "$work/files"
else
    photos_5_20mp > "$work/files"
fi
count=$(wc -l < "$work/files")
requests=$((count * 3))
media_host "$media_port" "$PWD/work"
media="http://127.0.0.1:$media_port"
wait_for() { for _ in $(seq 1 300); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

# replica NAME CORE PORT STORE-ARGS...: one `attache serve` pinned to CORE.
replica() {
    local name=$1 core=$2 port=$3
    shift 3
    taskset -c "$core" "$bin" serve --port "$port" --api-keys $key --allow-loopback --max-concurrent 1 \
        --max-queued 64 --gc-interval 0s --base-url "http://127.0.0.1:$port/attachments" "$@" \
        > "$work/$name.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/healthz"
}
stop_replicas() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}

# 1. Mutate throughput.
replica a 0 $a_port "${shared[@]}" --blob-cache "$work/cache-a"
echo "one replica (core 0), 16 clients:"
python3 serve_load.py attache "http://127.0.0.1:$a_port" $key "$media" "$work/files" \
    --clients 16 --requests $requests --tag one | tee "$work/one.json"
replica b 1 $b_port "${shared[@]}" --blob-cache "$work/cache-b"
echo "two replicas (cores 0 and 1), round robin, 16 clients:"
python3 serve_load.py attache "http://127.0.0.1:$a_port,http://127.0.0.1:$b_port" $key "$media" "$work/files" \
    --clients 16 --requests $((requests * 2)) --tag two | tee "$work/two.json"

# 2. Downloads: 50 photos mutated through the two replicas in turn (each keeps a copy of what
#    it stored; the other fetches it from the bucket on its first download of it), then 10,000
#    downloads by their tokened URLs spread over both replicas. The same with two replicas over
#    one local directory store.
mutate_all() { # PORT PORT -> lines "<path>\t<sha256>"
    local i=0
    head -n 50 "$work/files" | while read -r f; do
        port=$([ $((i % 2)) -eq 0 ] && echo "$1" || echo "$2")
        i=$((i + 1))
        curl -sf -X POST -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
            --data "{\"aps\":{\"alert\":\"x\",\"mutable-content\":1},\"image\":\"$media/$f?dl=$i\"}" \
            "http://127.0.0.1:$port/v1/notifications" | python3 -c '
import json, sys, urllib.parse
body = json.loads(sys.stdin.read())
url = (body.get("payload", body))["attachments"][0]["url"]
path = urllib.parse.urlsplit(url).path
print("%s\t%s" % (path, path.rsplit("/", 1)[1].split(".")[0]))'
    done
}
mutate_all $a_port $b_port > "$work/shared-urls"
echo "$downloads downloads over both replicas, shared store:"
python3 shared_downloads.py "$work/shared-urls" "http://127.0.0.1:$a_port,http://127.0.0.1:$b_port" \
    --requests $downloads --clients 16 | tee "$work/dl-shared.json"
stop_replicas
replica la 0 $a_port --store "$work/local"
replica lb 1 $b_port --store "$work/local"
mutate_all $a_port $b_port > "$work/local-urls"
echo "$downloads downloads over both replicas, one local directory store:"
python3 shared_downloads.py "$work/local-urls" "http://127.0.0.1:$a_port,http://127.0.0.1:$b_port" \
    --requests $downloads --clients 16 | tee "$work/dl-local.json"
stop_replicas

# 3. A 2,000-item campaign, two workers, 20 SIGKILLs of a random worker (restarted at once).
for i in $(seq 1 "$items"); do echo "$media/Samples/waterfall-rotated.jpg?item=$i"; done > "$work/campaign.txt"
declare -A worker_pid
start_worker() { # N: a worker, a child of this shell (so it can be waited for)
    "$bin" batch "$work/campaign.txt" --campaign spring --lease 3 --jobs 8 --allow-loopback \
        --manifest "$work/manifest-$1.jsonl" "${shared[@]}" > "$work/worker-$1.out" 2> "$work/worker-$1.log" &
    worker_pid[$1]=$!
}
start_worker 1
start_worker 2
kills=0
campaign_start=$(date +%s.%N)
while [ $kills -lt "$kill_count" ]; do
    sleep "$(python3 -c 'import random; print(round(random.uniform(0.1, 0.5), 2))')"
    n=$((RANDOM % 2 + 1))
    if kill -0 "${worker_pid[$n]}" 2>/dev/null; then
        kill -KILL "${worker_pid[$n]}"
        wait "${worker_pid[$n]}" 2>/dev/null || true
        kills=$((kills + 1))
        start_worker $n
    else
        break
    fi
done
status=0
wait "${worker_pid[1]}" || status=$?
wait "${worker_pid[2]}" || status=$?
[ $status -eq 0 ] || { echo "a worker failed: $(tail -3 "$work"/worker-*.log)" >&2; exit 1; }
campaign_s=$(python3 -c "import time; print(round(time.time() - $campaign_start, 1))")
rm -f work/Samples
lines=$(wc -l < "$work/manifest-1.jsonl")
distinct=$(python3 -c 'import json,sys; print(len({json.loads(l)["ref"] for l in open(sys.argv[1])}))' "$work/manifest-1.jsonl")
table=$(psql -X -A -t "$pg" -c "SELECT count(*), count(*) FILTER (WHERE state = 'done'), min(completions), max(completions), sum(attempts) FROM attache_job WHERE campaign = 'spring'")
verify=$("$bin" store verify --json "${shared[@]}" || true)
echo "{\"kills\": $kills, \"seconds\": $campaign_s, \"manifest_lines\": $lines, \"distinct\": $distinct, \"table\": \"$table\", \"verify\": $verify}" | tee "$work/campaign.json"

python3 - "$work" <<'PY'
import json, sys
import figures
work = sys.argv[1]
load = lambda n: json.load(open(f"{work}/{n}.json"))
one, two = load("one"), load("two")
ds, dl, c = load("dl-shared"), load("dl-local"), load("campaign")
print()
print("| run | images/s | p50 ms | p99 ms | errors |")
print("|---|---|---|---|---|")
for name, r in [("one replica (core 0)", one), ("two replicas (cores 0, 1), round robin", two)]:
    print(f"| {name} | {r['images_per_s']:.2f} | {r['p50_s'] * 1000:.0f} | {r['p99_s'] * 1000:.0f} | {r['errors'] + r['refused']} |")
print()
print(f"- mutate: two replicas / one = {two['images_per_s'] / one['images_per_s']:.2f}x, errors {one['errors'] + two['errors']}")
print(f"- downloads ({ds['requests']:,} over both replicas): shared p50 {ds['p50_ms']} ms, p99 {ds['p99_ms']} ms, {ds['per_s']}/s; "
      f"local directory p50 {dl['p50_ms']} ms, p99 {dl['p99_ms']} ms, {dl['per_s']}/s; "
      f"p99 ratio {ds['p99_ms'] / dl['p99_ms']:.2f}x; errors {ds['errors'] + dl['errors']}, "
      f"wrong bytes {ds['mismatches'] + dl['mismatches']}; first download of an object from a replica: "
      f"shared p50 {ds['first_per_replica_p50_ms']} ms, max {ds['first_per_replica_max_ms']} ms, "
      f"local p50 {dl['first_per_replica_p50_ms']} ms, max {dl['first_per_replica_max_ms']} ms")
total, done, low, high, attempts = c["table"].split("|")
print(f"- campaign: {c['kills']} SIGKILLs, {c['manifest_lines']} manifest lines ({c['distinct']} distinct), "
      f"{done}/{total} done, completions per item {low}..{high}, {attempts} claims, {c['seconds']} s; "
      f"store verify clean={c['verify']['clean']} objects={c['verify']['objects']} orphans={c['verify']['orphans']}")
figures.record("mutate through two replicas of a shared store: throughput", two["images_per_s"], "images/s",
               peer="one replica", peer_value=one["images_per_s"])
figures.record("downloads over two replicas, shared store: p99", ds["p99_ms"], "ms", better="lower",
               peer="two replicas over one local directory", peer_value=dl["p99_ms"])
figures.record("downloads over two replicas: errors and wrong bytes",
               ds["errors"] + dl["errors"] + ds["mismatches"] + dl["mismatches"], "requests", better="lower", goal="0")
figures.record("a campaign, two workers killed at random: items not done", int(total) - int(done), "items",
               better="lower", goal="0")
figures.record("a campaign, two workers killed at random: most completions of one item", int(high), "completions",
               better="lower", goal="1")
PY
