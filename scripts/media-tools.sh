#!/usr/bin/env bash
# Installs the programs the tests compare with or check through, when missing: ffmpeg and
# ffprobe (the video tests compare posters with the frame the ffmpeg CLI shows and check
# encodes with ffprobe), and Prometheus with promtool (the alerting and recording rules of
# docs/operations/ are checked and unit-tested by promtool, and a real Prometheus scrapes a
# running service), and nginx (the edge of docs/operations/attache-edge.conf is tested in front
# of a running service), and jpegtran (the multi-scan JPEG tests rewrite corpus files with it),
# and PyPI's ssimulacra2 (the quality tests check the in-process score and the targets `auto`
# reaches against this public implementation), and PyPI's thumbhash (the placeholder tests check
# the hashes against it).
# The product itself only loads FFmpeg's libraries (scripts/deps.sh); it never runs these
# programs.
set -euo pipefail
if ! python3 -c "import ssimulacra2" 2>/dev/null; then
    echo "attache: installing PyPI ssimulacra2 (the quality tests check scores against it)" >&2
    python3 -m pip install -q ssimulacra2==0.3.0 >/dev/null 2>&1 ||
        echo "attache: could not install ssimulacra2; the quality tests check in-process scores only" >&2
fi
if ! python3 -c "import thumbhash" 2>/dev/null; then
    echo "attache: installing PyPI thumbhash (the placeholder tests check hashes against it)" >&2
    python3 -m pip install -q thumbhash==0.1.2 >/dev/null 2>&1 ||
        echo "attache: could not install thumbhash; the placeholder tests check the decoder's colours only" >&2
fi
need=()
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || need+=(ffmpeg)
command -v promtool >/dev/null && command -v prometheus >/dev/null || need+=(prometheus)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v jpegtran >/dev/null || need+=(libjpeg-turbo-progs)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "attache: installing ${need[*]} (the tests compare with or check through them)" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts the packaged Prometheus as a service; the tests run their own.
if [[ " ${need[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
    $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
# And nginx as a service on port 80; the edge test starts its own.
# (`if`s, not `&&` lists: where neither applies — no systemd, the package's start refused — the
# script's last status must still be 0.)
if [[ " ${need[*]} " == *" nginx-light "* ]]; then
    if command -v systemctl >/dev/null; then
        $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    if [ -f /run/nginx.pid ]; then
        $sudo /usr/sbin/nginx -s quit >/dev/null 2>&1 || true
    fi
fi
