#!/usr/bin/env bash
# Peak RSS (GNU time's %M, or VmHWM for the service) of a release `attache` at start:
# `--version`, `serve` idle once ready, and the 48 MP baseline JPEG to 1024 px on one core;
# vipsthumbnail's `--version` beside them. Three runs each, the machine otherwise idle.
# `bash startup.sh [BINARY...]`: other builds of attache measured in the same run, after this one.
set -euo pipefail
cd "$(dirname "$0")"
bash prepare.sh >/dev/null
. ./binary.sh
bins=("$bin" "$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peak() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.1f", $1 / 1024}'; }

# row LABEL COMMAND: the command's figure three times (once with BENCH_QUICK=1); `least` keeps the smallest.
row() {
    local label=$1 values=()
    shift
    for _ in $(seq 1 "$([ "$quick" = 1 ] && echo 1 || echo 3)"); do values+=("$("$@")"); done
    echo "| $label | ${values[*]} |"
    least=$(printf '%s\n' "${values[@]}" | sort -n | head -1)
}

version() { peak "$bin" --version; }
vips_version() { peak vipsthumbnail --version; }
jpeg() {
    rm -rf "$tmp/out"
    peak taskset -c 0 "$bin" resize --max-side 1024 --out "$tmp/out" work/big/48mp-baseline.jpg
}
idle() {
    rm -rf "$tmp/store"
    ATTACHE_API_KEYS=startup-benchmark-key-00 "$bin" serve --port 0 --store "$tmp/store" >"$tmp/serve.log" 2>&1 &
    local service=$!
    for _ in $(seq 1 100); do
        grep -q listening "$tmp/serve.log" && break
        sleep 0.1
    done
    sleep 2
    awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$service/status"
    kill -TERM "$service"
    wait "$service"
}

echo "| process | build | peak RSS, MB (three runs) |"
echo "|---|---|---|"
declare -A first
for what in version idle jpeg; do
    for bin in "${bins[@]}"; do
        case $what in
        version) row "attache --version | $bin" version ;;
        idle) row "attache serve, idle after start | $bin" idle ;;
        jpeg) row "48 MP baseline JPEG to 1024 px (taskset -c 0) | $bin" jpeg ;;
        esac
        [ -n "${first[$what]:-}" ] || first[$what]=$least
    done
done
row "vipsthumbnail --version | $(vipsthumbnail --version)" vips_version
figure "the process at start: --version, peak RSS" "${first[version]}" MB --peer "vipsthumbnail --version" \
    --peer-value "$least" --lower --goal "<= 1.0x"
figure "the service idle after start: peak RSS" "${first[idle]}" MB --lower
