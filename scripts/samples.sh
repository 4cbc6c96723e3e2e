#!/usr/bin/env bash
# The main job on the bundled samples: serve Samples/media on 127.0.0.1:8765, run the pipeline
# on every payload in Samples/payloads (fetch, validate, downscale, store, attach), write the
# mutated payloads to Samples/out/payloads/ and print a short summary.
# Installs missing system packages and builds release first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
swift build -c release --product attache
bin=$(swift build -c release --show-bin-path)/attache
out=${1:-Samples/out}
port=8765
mkdir -p "$out"

"$bin" serve-files --port "$port" Samples/media > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    grep -q serving "$out/server.log" 2>/dev/null && break
    kill -0 $server 2>/dev/null || break
    sleep 0.1
done
if ! grep -q serving "$out/server.log"; then
    cat "$out/server.log" >&2
    echo "samples: could not serve Samples/media on 127.0.0.1:$port" >&2
    exit 1
fi

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
