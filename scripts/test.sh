#!/usr/bin/env bash
# Runs the whole test suite (installs missing system packages first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/api-tools.sh
bash scripts/browser.sh
bash scripts/media-tools.sh
bash scripts/shared-servers.sh install
# The project's own code builds without warnings: a new one fails the run (dependencies' are
# not ours to fix). A clean checkout compiles every file, so every warning is seen.
build_log=$(mktemp /tmp/attache-build.XXXXXX)
bash scripts/build.sh --build-tests 2>&1 | tee "$build_log"
if grep -E "^$PWD/(Sources|Tests|Benchmarks|Fuzz)/[^:]+:[0-9]+:[0-9]+: warning:" "$build_log"; then
    echo "attache: the warnings above are in the project's own code; fix them" >&2
    rm -f "$build_log"
    exit 1
fi
rm -f "$build_log"

# PostgreSQL and radosgw for the shared-store suites, on 127.0.0.1, gone when the tests end.
servers=$(mktemp -d /tmp/attache-servers.XXXXXX)
trap 'bash scripts/shared-servers.sh stop "$servers"' EXIT
PG_PORT=$((20000 + RANDOM % 4000)) S3_PORT=$((24000 + RANDOM % 4000)) MON_PORT=$((28000 + RANDOM % 4000)) \
    bash scripts/shared-servers.sh start "$servers"
set -a
. "$servers/env"
set +a

# The run's issues again at its end, where a log cut to its last lines still shows them (an
# issue's first detail line starts with ↳, the further ones with two spaces).
log=$(mktemp /tmp/attache-tests.XXXXXX)
status=0
swift test --skip-build --disable-xctest "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
    echo "attache: the issues the run recorded:" >&2
    awk '/recorded an issue/ { keep = 1; n = 0 } !/recorded an issue/ && !/^[[:space:]]*↳/ && !/^  / { keep = 0 }
        keep && n < 40 { print; n++ }' "$log" | tail -n 200 >&2
fi
rm -f "$log"
exit "$status"
