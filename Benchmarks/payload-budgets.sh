#!/usr/bin/env bash
# Hostile payloads against the release build, on loopback:
#  - 5,000 media URLs in one payload with a 2 s deadline: with the defaults (the payload is
#    already over 4096 bytes, so nothing is fetched), then with --max-sources 1000 and the
#    payload limit lifted, so a thousand attachments are fetched, stored and written (and, at
#    300,000 bytes, trimmed), cold and warm store;
#  - 80 URLs of 45 MB video bodies in one 4 KB payload: peak RSS and store growth.
#   bash Benchmarks/payload-budgets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/release.sh --product attache >/dev/null
bin=$(swift build -c release --show-bin-path)/attache
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/media"
cp Samples/media/gray.jpg "$work/media/small.jpg"
# An MP4 (ftyp isom) of 45,000,000 bytes: valid by its first bytes, under the 50 MB video cap.
python3 -c "
import sys
head = bytes.fromhex('00000018') + b'ftypisom' + bytes(4) + b'isomavc1'
open(sys.argv[1], 'wb').write(head + bytes(45_000_000 - len(head)))" "$work/media/big.mp4"
"$bin" serve-files --port 0 "$work/media" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q serving "$work/server.log" && break; sleep 0.05; done
base=$(awk '{print $NF}' "$work/server.log")

payload() { # name count file
    python3 -c "
import json, sys
n, base, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
att = {'k%d' % i: '%s%s?n=%d' % (base, name, i) for i in range(n)}
print(json.dumps({'aps': {'alert': 'hi', 'mutable-content': 1}, 'att': att}, separators=(',', ':')))" "$2" "$base" "$3" > "$work/$1.json"
}
payload urls5000 5000 small.jpg
payload videos80 80 big.mp4
echo "payloads: $(wc -c < "$work/urls5000.json") bytes (5,000 URLs), $(wc -c < "$work/videos80.json") bytes (80 video URLs)"
echo
echo "| payload | options | store | wall s | peak RSS MB | attached | too_many_sources | budget_exceeded | payload_too_large | answer bytes |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run() { # label payload store state options...
    local label=$1 file=$2 store=$3 state=$4
    shift 4
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" process --deadline 2s --allow-loopback --store "$store" \
        --base-url https://a.example/a --report "$@" "$work/$file.json" > "$work/answer" 2> "$work/report"
    read -r wall rss < "$work/time"
    python3 - "$work/report" "$label" "$state" "$wall" "$rss" "$(wc -c < "$work/answer")" "$*" <<'PY'
import json, sys
report = json.loads(open(sys.argv[1]).read().splitlines()[-1])
reasons = [a["reason"] for a in report["attachments"]]
count = lambda r: sum(1 for x in reasons if x == r)
print("| %s | %s | %s | %s | %d | %d | %d | %d | %d | %s |" % (
    sys.argv[2], sys.argv[7] or "defaults", sys.argv[3], sys.argv[4], int(sys.argv[5]) // 1024,
    count("attached"), count("too_many_sources"), count("budget_exceeded"), count("payload_too_large"), sys.argv[6]))
PY
}
run "5,000 URLs" urls5000 "$work/s1" cold
# The same payload with the 4096-byte limit lifted, so a thousand of its URLs are fetched,
# stored and written into the block (then trimmed to the lifted limit).
run "5,000 URLs" urls5000 "$work/s2" cold --max-sources 1000 --max-payload-bytes 1048576
run "5,000 URLs" urls5000 "$work/s2" warm --max-sources 1000 --max-payload-bytes 1048576
run "5,000 URLs" urls5000 "$work/s3" cold --max-sources 1000 --max-payload-bytes 300000
before=$(du -sb "$work/s4" 2>/dev/null | cut -f1 || echo 0)
run "80 x 45 MB" videos80 "$work/s4" cold
after=$(du -sb "$work/s4" | cut -f1)
echo
echo "80 x 45 MB: store grew by $((after - ${before:-0})) bytes (budget --max-payload-store-bytes 100000000)"
