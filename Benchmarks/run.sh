#!/usr/bin/env bash
# Every comparison of Benchmarks/ against its peers in one command, a record of the run and a
# page a person reads (Benchmarks/run.py says it all; `bash Benchmarks/run.sh --help`):
#   bash Benchmarks/run.sh [--quick] [--only jpeg,service,...] [--rounds N]
#   bash Benchmarks/run.sh --compare RESULTS_A RESULTS_B
set -euo pipefail
cd "$(dirname "$0")"
exec python3 run.py "$@"
