# Sourced by the benchmark scripts (from Benchmarks/): builds the binary they measure and sets
#   bin     the attache binary: the release build of scripts/release.sh, or with BENCH_BUILD=debug
#           the test build of scripts/build.sh (a `--quick` run that only checks the scripts)
#   build_dir  the folder it is in (build_product NAME FILE builds another product there)
#   quick   1 when BENCH_QUICK=1 asks for the small subset, else 0
# and defines `figure NAME VALUE UNIT [--peer P --peer-value V] [--lower] [--goal G]`, which
# records a figure in $BENCH_FIGURES for Benchmarks/run.sh (nothing when it is unset).
quick=${BENCH_QUICK:-0}
bench_dir=$(pwd)
# A binary newer than every source and the manifest is used as it is: asking SwiftPM costs up to
# a minute of planning even when nothing is to be built, and a run asks once per step.
fresh() { [ -x "$1" ] && [ -z "$(cd .. && find Sources Package.swift -newer "$1" -print -quit)" ]; }
if [ "${BENCH_BUILD:-release}" = debug ]; then
    build_dir=$(cd .. && pwd)/.build/debug build_script=build.sh
else
    build_dir=$(cd .. && pwd)/.build/release build_script=release.sh
fi
bin=$build_dir/attache
fresh "$bin" || (cd .. && bash "scripts/$build_script" --product attache >/dev/null)
# build_product NAME FILE: another product of the package (a library beside the binary), built
# the same way when FILE is older than the sources.
build_product() { fresh "$build_dir/$2" || (cd .. && bash "scripts/$build_script" --product "$1" >/dev/null); }
figure() { [ -z "${BENCH_FIGURES:-}" ] || python3 "$bench_dir/figures.py" "$@"; }
# BENCH_SLOWDOWN=0.1 (run.sh --slowdown 0.1): each attache command that ends takes 10% longer
# (it sleeps a tenth of its own time after it), so that `run.sh --compare` can be checked on a
# change of known size. A service's own answers are not slowed.
if [ -n "${BENCH_SLOWDOWN:-}" ] && [ "${BENCH_SLOWDOWN}" != 0 ]; then
    slow=$(mktemp -d /tmp/attache-slow.XXXXXX)
    cat > "$slow/attache" <<SLOW
#!/usr/bin/env bash
start=\$(date +%s.%N)
"$bin" "\$@"
code=\$?
sleep "\$(echo "(\$(date +%s.%N) - \$start) * $BENCH_SLOWDOWN" | bc)"
exit \$code
SLOW
    chmod +x "$slow/attache"
    bin=$slow/attache
fi
