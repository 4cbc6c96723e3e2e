#!/usr/bin/env bash
# Runs the whole test suite (installs missing system packages first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/api-tools.sh
bash scripts/browser.sh
bash scripts/shared-servers.sh install
swift build --build-tests

# PostgreSQL and radosgw for the shared-store suites, on 127.0.0.1, gone when the tests end.
servers=$(mktemp -d /tmp/attache-servers.XXXXXX)
trap 'bash scripts/shared-servers.sh stop "$servers"' EXIT
PG_PORT=$((20000 + RANDOM % 4000)) S3_PORT=$((24000 + RANDOM % 4000)) MON_PORT=$((28000 + RANDOM % 4000)) \
    bash scripts/shared-servers.sh start "$servers"
set -a
. "$servers/env"
set +a

swift test --skip-build --disable-xctest "$@"
