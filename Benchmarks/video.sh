#!/usr/bin/env bash
# Video and audio (docs/video.md): posters, GIF -> MP4 and transcodes by `attache video`
# against the ffmpeg CLI with the same settings on the same files (one core: `-threads 1`, as
# Attache runs its encodes on the pipeline's worker), best of N interleaved; peak RSS by GNU time.
#   bash Benchmarks/video.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-3}
bash prepare.sh >/dev/null
command -v ffmpeg >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null)
. ./binary.sh
work=$(realpath work)/video size=1920x1080 long=60 short=20 quick_flag=()
# BENCH_QUICK=1: 640x360 files of 32 s and 5 s, in a folder of their own, and fewer of each kind.
[ "$quick" = 1 ] && work=$(realpath work)/video-quick size=640x360 long=32 short=5 quick_flag=(--quick)
mkdir -p "$work"
make() { [ -s "$work/$1" ] || ffmpeg -hide_banner -loglevel error -y "${@:2}" "$work/$1"; }
# A 1080p H.264/AAC MP4 near Apple's 50 MB cap (60 s at 6.4 Mbit/s; a keyframe every 250 frames,
# x264's default, and every 30 frames, as phones record), one over it (30 s at
# 16 Mbit/s), a 1080p VP9/Opus WebM (20 s), a 1080p QuickTime movie (10 s), a FLAC and an Ogg
# Opus voice note (60 s).
pattern=(-f lavfi -i "testsrc2=size=$size:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000")
[ "$quick" = 1 ] || make cap.mp4 "${pattern[@]}" -t 60 -c:v libx264 -preset veryfast -b:v 6400k -maxrate 6400k -bufsize 12M -pix_fmt yuv420p -c:a aac -b:a 128k -movflags +faststart
make phone.mp4 "${pattern[@]}" -t "$long" -c:v libx264 -preset veryfast -g 30 -b:v 6400k -maxrate 6400k -bufsize 12M -pix_fmt yuv420p -c:a aac -b:a 128k -movflags +faststart
[ "$quick" = 1 ] || make over.mp4 "${pattern[@]}" -t 30 -c:v libx264 -preset veryfast -b:v 16M -maxrate 16M -bufsize 32M -pix_fmt yuv420p -c:a aac -b:a 128k
make clip.webm "${pattern[@]}" -t "$short" -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 3M -c:a libopus -b:a 96k
[ "$quick" = 1 ] || make clip.mov "${pattern[@]}" -t 10 -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 128k -f mov
[ "$quick" = 1 ] || make voice.flac -f lavfi -i "sine=frequency=300:sample_rate=48000" -t 60 -c:a flac
make voice.ogg -f lavfi -i "sine=frequency=300:sample_rate=48000" -t 60 -c:a libopus -b:a 48k
# GIFs: the corpus's animations and the GIF benchmark's photo animations (bash gif.sh makes them).
gifs=$(awk -F'\t' '$2=="GIF" && $5>1 && $6=="ok" {print $1}' ../../shared/corpus/manifest.tsv | sed "s|^|$(realpath ../../shared/corpus)/|")
photo_gifs=$(ls work/gif/photo*.gif 2>/dev/null || true)
[ "$quick" = 1 ] && runs=1
python3 video.py --attache "$bin" --work "$work" --runs "$runs" "${quick_flag[@]}" --gifs $gifs --photo-gifs $photo_gifs
