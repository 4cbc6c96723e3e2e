#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS under the address sanitizer (two at a time on a
# 2-core machine), from seeds made of the project's fixtures, and prints a table: executions,
# executions per second, corpus size and findings. Findings (crash-*, leak-*, timeout-*,
# oom-*) are left in Fuzz/runs/<target>/; once fixed, copy each into
# Tests/Fixtures/fuzz/<target>/, which the test suite replays (FuzzRegressionTests).
#   bash Fuzz/run.sh [SECONDS=600] [TARGET ...]    targets: json sniffer exif token head url gif image seal icc modern av poster encode
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(json sniffer exif token head url gif image seal icc modern av poster encode)
bash ../scripts/deps.sh
swift build -c release --scratch-path .build -Xswiftc -sanitize=fuzzer,address \
    -Xcc -fsanitize=fuzzer-no-link,address -Xswiftc -use-ld=lld 2>&1 | tail -1
python3 seeds.py runs > /dev/null
jobs=$(nproc)
run() {
    local t=$1
    mkdir -p "runs/$t/corpus"
    ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$PWD/lsan.supp" ".build/release/fuzz-$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="runs/$t/" "runs/$t/corpus" "runs/$t/seeds" > "runs/$t/log" 2>&1 || true
}
running=0
for t in "${targets[@]}"; do
    run "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
echo "| target | seconds | executions | exec/s | corpus | findings |"
echo "|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "runs/$t/log" | grep -o '[0-9]*$' || echo 0)
    took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "runs/$t/log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "$seconds")
    corpus=$(ls "runs/$t/corpus" | wc -l)
    findings=$(ls "runs/$t" | grep -cE '^(crash|leak|timeout|oom|slow-unit)-' || true)
    echo "| $t | ${took:-$seconds} | ${runs:-0} | $(( ${runs:-0} / (${took:-$seconds} > 0 ? ${took:-$seconds} : 1) )) | $corpus | $findings |"
done
