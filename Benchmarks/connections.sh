#!/usr/bin/env bash
# Connections held by hostile clients (docs/benchmarks.md, "Connections held open"): the
# release build of `attache serve` at its default timeouts, and in one run
#   1. 1,000 idle connections and 1,000 slowloris heads (a byte every 10 s) opened at once:
#      the service's descriptors and RSS every 10 s for 90 s, how many of them it has closed, and
#      the latency of a payload posted every second on a fresh connection meanwhile;
#   2. the same under `ulimit -n 256` (prlimit): 240 connections held, a payload on a fresh
#      connection (503 at once, not a hang) and on one of the accepted ones (attached: the
#      store keeps its descriptors).
#   bash Benchmarks/connections.sh
set -euo pipefail
cd "$(dirname "$0")"
. ./binary.sh
python3 connections.py "$bin" ../Samples/media
