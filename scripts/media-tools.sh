#!/usr/bin/env bash
# Installs the ffmpeg and ffprobe programs when missing: the video tests compare posters with
# the frame the ffmpeg CLI shows and check encodes with ffprobe. The product itself only loads
# FFmpeg's libraries (scripts/deps.sh); it never runs these programs.
set -euo pipefail
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "attache: installing ffmpeg (the video tests compare with it)" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null
