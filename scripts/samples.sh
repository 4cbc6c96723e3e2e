#!/usr/bin/env bash
# The main job on the bundled samples: serve Samples/media on 127.0.0.1:8765, run the pipeline
# on every payload in Samples/payloads (fetch, validate, downscale, store, attach), write the
# mutated payloads to Samples/out/payloads/ and print a short summary; run the same payloads as a
# batch (manifest, JSONL of payloads, summary table, HTML report in Samples/out/); write the
# platform preview of one send body (Samples/out/preview.html); then start the HTTP
# service (attache serve) on 127.0.0.1:8766, post one payload to it with curl, download the
# attachment by the URL it answered, and stop the service with SIGTERM.
# Installs missing system packages and builds first (the debug build the tests share).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# The debug build, which the test command builds on (the media target's pixel loops are optimised
# in it too): the README's two commands share one build (scripts/build.sh). Deployments and
# benchmarks build with scripts/release.sh.
bash scripts/build.sh --product attache
# The face detector (--faces), loaded from beside the binary on first use.
bash scripts/build.sh --product AttacheFaces
bin=$(swift build --show-bin-path)/attache
out=${1:-Samples/out}
port=8765
mkdir -p "$out"

# Waits (up to 10 s) for a server's log to say it is ready: wait_for_line LOG WORD PID MESSAGE.
wait_for_line() {
    for _ in $(seq 1 100); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "$2" "$1" && return 0
    cat "$1" >&2
    echo "samples: $4" >&2
    exit 1
}

"$bin" serve-files --port "$port" Samples/media > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
wait_for_line "$out/server.log" serving $server "could not serve Samples/media on 127.0.0.1:$port"

echo "== attache process --deadline 2s --allow-loopback --summary Samples/payloads/*.json"
"$bin" process --deadline 2s --allow-loopback --store "$out/store" \
    --base-url https://attachments.example/a --out "$out/payloads" --summary Samples/payloads/*.json
echo
echo "== $out/payloads/01-apns-my-attachment.json (every other payload is in $out/payloads/)"
cat "$out/payloads/01-apns-my-attachment.json"
echo
echo
echo "== attache store stats / verify"
"$bin" store stats --store "$out/store"
"$bin" store verify --store "$out/store"

echo
echo "== attache batch --deadline 2s --allow-loopback --out $out/batch.jsonl --report $out/report.html Samples/payloads"
# A fresh campaign each time (run again, the same command would skip every recorded item).
rm -rf "$out/batch.jsonl" "$out/batch.manifest.jsonl" "$out/batch.manifest.jsonl.started" "$out/batch-store"
"$bin" batch --deadline 2s --allow-loopback --store "$out/batch-store" --base-url https://attachments.example/a \
    --out "$out/batch.jsonl" --report "$out/report.html" Samples/payloads
echo "-- manifest $out/batch.manifest.jsonl ($(wc -l < "$out/batch.manifest.jsonl") lines), payloads $out/batch.jsonl,"
echo "   report $out/report.html ($(wc -c < "$out/report.html") bytes, self-contained: open it in a browser)"

echo
echo "== attache preview --allow-loopback Samples/payloads/12-fcm-v1-every-platform.json --out $out/preview.html"
"$bin" preview --deadline 5s --allow-loopback --store "$out/store" \
    Samples/payloads/12-fcm-v1-every-platform.json --out "$out/preview.html"
echo "-- $out/preview.html ($(wc -c < "$out/preview.html") bytes): iOS, Android and web push as each draws it"

echo
key=samples-api-key-0000000000
service_port=8766
echo "== attache serve --port $service_port --allow-loopback (log in $out/service.log)"
"$bin" serve --port "$service_port" --store "$out/service-store" --api-keys "$key" --allow-loopback \
    --base-url "http://127.0.0.1:$service_port/attachments" > "$out/service.log" 2>&1 &
service=$!
trap 'kill $server $service 2>/dev/null || true' EXIT
wait_for_line "$out/service.log" listening $service "attache serve did not start on 127.0.0.1:$service_port"
echo "-- POST /v1/notifications with Samples/payloads/01-apns-my-attachment.json"
curl -sS -D "$out/service-headers" -o "$out/service-answer.json" -H "Authorization: Bearer $key" \
    --data-binary @Samples/payloads/01-apns-my-attachment.json "http://127.0.0.1:$service_port/v1/notifications"
grep -iE '^(HTTP/|attache-)' "$out/service-headers" | tr -d '\r'
cat "$out/service-answer.json"
echo
url=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["attachments"]; print(a[0]["url"])' \
    "$out/service-answer.json")
echo "-- GET the attachment by that URL"
curl -sS -o "$out/service-attachment" -w 'status %{http_code}, %{content_type}, %{size_download} bytes\n' "$url"
echo "sha256 $(sha256sum "$out/service-attachment" | cut -d' ' -f1) (the id in the URL)"
echo "-- GET /metrics (a few lines)"
curl -sS "http://127.0.0.1:$service_port/metrics" | grep -E '^attache_(http_requests_total|bytes_total|store_objects)' | head -6
kill -TERM $service
wait $service && echo "-- attache serve stopped on SIGTERM (exit 0)"
