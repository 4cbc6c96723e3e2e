#!/usr/bin/env bash
# Runs the whole test suite (installs missing system packages first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/api-tools.sh
bash scripts/browser.sh
swift build --build-tests
swift test --skip-build --disable-xctest "$@"
