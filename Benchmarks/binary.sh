# Sourced by the benchmark scripts (from Benchmarks/): builds the binary they measure and sets
#   bin     the attache binary: the release build of scripts/release.sh, or with BENCH_BUILD=debug
#           the test build of scripts/build.sh (a `--quick` run that only checks the scripts)
#   build_dir  the folder it is in (build_product NAME FILE builds another product there)
#   quick   1 when BENCH_QUICK=1 asks for the small subset, else 0
# and defines `figure NAME VALUE UNIT [--peer P --peer-value V] [--lower] [--goal G]`, which
# records a figure in $BENCH_FIGURES for Benchmarks/run.sh (nothing when it is unset), and the
# helpers `need_packages`, `build_product`, `photos_5_20mp`, `photo_sets` and `media_host` below.
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
# need_packages PKG...: installs the Debian packages of these that are missing (peers, media hosts).
need_packages() {
    local need=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
    done
    [ ${#need[@]} -eq 0 ] ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
}
# photos_5_20mp: the benchmark photos of 5-20 MP (work/jpeg), a path relative to work/ a line.
photos_5_20mp() {
    python3 - <<'PY'
import glob
from PIL import Image
for f in sorted(glob.glob("work/jpeg/*.jpg")):
    w, h = Image.open(f).size
    if 5e6 <= w * h <= 20e6:
        print(f[len("work/"):])
PY
}
# codec_harness OUT SOURCE: a C harness over the codec shim's JPEG and quality code (score-parts.c,
# score-accuracy.c, encoder-gain.c), built with clang as SwiftPM builds the C targets (gcc -O2
# does not vectorise them).
codec_harness() {
    local c=../Sources/CAttacheCodecs
    clang -O2 -I"$c/include" -I../Sources/CAttacheShim/include -o "$1" "$2" "$c/quality.c" "$c/quality_planes.c" "$c/blocking.c" \
        "$c/jpeg.c" "$c/jpeg_common.c" "$c/jpeg_encode.c" "$c/jpeg_chroma.c" "$c/jpeg_trellis.c" \
        "$c/jpeg_progressive.c" "$c/jpeg_scan_writer.c" "$c/jpeg_held.c" \
        "$c/jpeg_coefficients.c" "$c/jpeg_scans.c" "$c/jpeg_scan_decode.c" "$c/icc.c" "$c/util.c" \
        ../Sources/CAttacheShim/shim.c -ljpeg -llcms2 -lm -lpthread
}
# photo_sets: copies the three photo sets of the quality benchmarks into work/lomiri, work/plasma
# and work/ukui (needs prepare.sh's work/jpeg): the photo benchmark (lomiri-wallpapers, which the
# defaults were calibrated on) and two the calibration never saw, chosen by a rule before any
# result: every JPEG of plasma-workspace-wallpapers (each theme's largest) and of ukui-wallpapers.
photo_sets() {
    need_packages plasma-workspace-wallpapers ukui-wallpapers
    mkdir -p work/lomiri work/plasma work/ukui
    local f d largest
    for f in work/jpeg/*.jpg; do
        case "$f" in *_baseline.jpg) ;; *) cp -n "$f" work/lomiri/ ;; esac
    done
    for d in /usr/share/wallpapers/*/contents/images; do
        largest=$(ls "$d" | grep '\.jpg$' | sort -t x -k1,1n | tail -1 || true)
        [ -n "$largest" ] && cp -n "$d/$largest" "work/plasma/$(basename "$(dirname "$(dirname "$d")")").jpg"
    done
    for f in $(dpkg -L ukui-wallpapers | grep '^/usr/share/backgrounds/.*\.jpg$'); do cp -n "$f" work/ukui/; done
}
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
# media_host PORT ROOT [WORKERS] [DIRECTIVES]: nginx serving ROOT on 127.0.0.1:PORT as the media
# host (sendfile, keep-alive, no access log; WORKERS processes, default 1; DIRECTIVES added to its
# server block), its config, pid and log in $work/ as nginx.conf, nginx.pid, nginx-error.log; one
# left over from an interrupted run is stopped first. The download benchmarks' nginx is this one.
media_host() {
    cat > "$work/nginx.conf" <<CONF
user root;
worker_processes ${3:-1};
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    types { image/jpeg jpg; image/png png; image/gif gif; }
    default_type application/octet-stream;
    server { listen 127.0.0.1:$1; root $2; ${4:-} }
}
CONF
    if [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; then sleep 0.5; fi
    nginx -c "$work/nginx.conf"
}
