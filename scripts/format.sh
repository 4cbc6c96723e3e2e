#!/usr/bin/env bash
# The formatters in lint mode (what CI runs after the tests): swift-format on the Swift, and
# clang-format (.clang-format; installed when missing) on the C and C++ shims, the fuzz and
# benchmark helpers and scripts/functrace.c. `bash scripts/format.sh --fix` rewrites the files.
# Lint mode also checks the size limits (scripts/limits.py: files ≤ 500 lines, functions ≤ 80).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "attache: installing clang-format" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-format >/dev/null
fi
mapfile -t c_files < <(git ls-files 'Sources/*.c' 'Sources/*.h' 'Sources/*.cpp' 'Fuzz/*.c' 'Benchmarks/*.c' \
    'Tests/*.c' 'Tests/*.h' 'scripts/*.c')
if [ "${1:-}" = --fix ]; then
    swift format -i -r Sources Tests
    clang-format -i "${c_files[@]}"
else
    swift format lint --strict -r Sources Tests
    clang-format --dry-run --Werror "${c_files[@]}"
    python3 scripts/limits.py
fi
