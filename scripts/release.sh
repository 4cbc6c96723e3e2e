#!/usr/bin/env bash
# The release build: `swift build -c release` with every function (Swift, C and C++, the
# dependencies' too) in its own section, so the link can place the functions a start runs
# (Sources/attache/startup.order) side by side. Arguments go to `swift build`, e.g.
# `scripts/release.sh --product attache`; with none, everything (attache, libAttacheFaces.so).
# The binaries are in `.build/release/`.
# A plain `swift build -c release` makes the same program, only starting larger.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release \
    -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcxx -ffunction-sections \
    "$@"
