#!/usr/bin/env bash
# Makes the video and audio fixtures (committed; run again only to change them) with the ffmpeg
# CLI: an H.264/AAC MP4 with its index first (faststart) and one with it last; the first cut
# after its index (the index then points past the end) and the second cut before its index;
# VP9 in an MP4 (an iPhone does not play it); an MP4 of 40 audio streams; Opus in an M4A.
# Two seconds of ffmpeg's test pattern with a clock (the frame at 1 s differs from the one at 0).
# Needs: ffmpeg (with libx264, libvpx, libopus).
set -euo pipefail
cd "$(dirname "$0")"
source=(-f lavfi -i "testsrc=size=160x120:rate=25:duration=2" -f lavfi -i "sine=frequency=440:duration=2")
ffmpeg -v error -y "${source[@]}" -c:v libx264 -profile:v high -pix_fmt yuv420p -c:a aac -b:a 64k \
    -movflags +faststart h264.mp4
ffmpeg -v error -y "${source[@]}" -c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 64k h264-index-last.mp4
head -c $(( $(stat -c %s h264.mp4) * 6 / 10 )) h264.mp4 > cut-after-index.mp4
head -c $(( $(stat -c %s h264-index-last.mp4) / 2 )) h264-index-last.mp4 > cut-before-index.mp4
ffmpeg -v error -y -f lavfi -i "testsrc=size=160x120:rate=25:duration=1" -c:v libvpx-vp9 -b:v 100k vp9.mp4
args=()
for i in $(seq 1 40); do args+=(-map 0:a); done
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:duration=0.2" "${args[@]}" -c:a aac -b:a 16k many-streams.mp4
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:duration=1" -c:a libopus -b:a 32k -f mp4 opus.m4a
# The mp4 muxer writes the `isom` brand; an .m4a from a phone says `M4A `.
printf 'M4A ' | dd of=opus.m4a bs=1 seek=8 conv=notrunc status=none

# Read-only kinds, transcoded: VP9/Opus WebM, QuickTime (H.264 in a `qt  ` movie), Opus in Ogg,
# FLAC; a portrait clip stored landscape with a 90° display matrix; playlists that name a file.
ffmpeg -v error -y "${source[@]}" -c:v libvpx-vp9 -b:v 200k -c:a libopus -b:a 32k clip.webm
ffmpeg -v error -y "${source[@]}" -c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 64k -f mov clip.mov
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:duration=2" -c:a libopus -b:a 32k tone.ogg
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:duration=2" -c:a flac tone.flac
ffmpeg -v error -y -i h264.mp4 -c copy -metadata:s:v:0 rotate=90 -movflags +faststart rotated.mp4
printf '#EXTM3U\n#EXTINF:2,\nfile:///etc/passwd\n' > playlist.m3u8
printf 'ffconcat version 1.0\nfile /etc/passwd\n' > list.ffconcat
# An animated GIF of 300 frames (over the 200-frame budget): made MP4 whole.
ffmpeg -v error -y -f lavfi -i "testsrc=size=160x120:rate=25:duration=12" -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" long.gif
# Three seconds of an animated WebP, 80x60 (libwebp_anim keeps the frames that change: 48).
ffmpeg -v error -y -f lavfi -i "testsrc=size=80x60:rate=20:duration=3" -c:v libwebp_anim -lossless 0 -q:v 40 -loop 0 \
    animated.webp
# Six seconds of a busy pattern at 1 Mbit/s (~750 KB): re-encoded under half its size.
ffmpeg -v error -y -f lavfi -i "testsrc2=size=320x240:rate=25:duration=6" -f lavfi -i "sine=frequency=440:duration=6" \
    -c:v libx264 -b:v 1M -pix_fmt yuv420p -c:a aac -b:a 64k -movflags +faststart dense.mp4
ls -l
