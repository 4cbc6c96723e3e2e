#!/usr/bin/env bash
# The debug build both README commands share (scripts/samples.sh builds the binaries, scripts/test.sh
# the tests on top of them): `swift build` without the index store, which only editors read and
# which a command-line build would otherwise write for every file (16% of a clean build here).
# The test targets still write theirs (Package.swift's testSettings): SwiftPM finds their suites
# in it. An editor's own build (with the index store) compiles the tree again.
#   bash scripts/build.sh [swift build options...]
set -euo pipefail
cd "$(dirname "$0")/.."
exec swift build --disable-index-store "$@"
