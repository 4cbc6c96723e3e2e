// A thin shim over FFmpeg's libavformat, libavcodec and libswscale: container checks and
// poster frames for video and audio held in memory. No FFmpeg protocol, file or network is
// ever opened: the bytes come through a custom AVIO, nested opens are refused, demuxers and
// decoders are on allow-lists, and every call is interruptible at a deadline.
#ifndef ATTACHE_AV_H
#define ATTACHE_AV_H

#include <stddef.h>
#include <stdint.h>

/// Outcome codes, as the codec shim's (attache_codecs.h) so Swift maps them the same way.
enum {
    ATT_AV_OK = 0,
    ATT_AV_CORRUPT = 1,
    ATT_AV_TRUNCATED = 2,
    ATT_AV_UNSUPPORTED = 3,
    ATT_AV_MEMORY_LIMIT = 4,
    ATT_AV_TIMEOUT = 7,
    ATT_AV_INTERNAL = 8,
};

typedef struct {
    int32_t status;
    char message[240];
} att_av_error;

typedef struct {
    /// The demuxer's name (`mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`, `avi`, …).
    char format[48];
    int32_t streams;
    int32_t video_streams;
    int32_t audio_streams;
    /// Seconds; negative when the container does not say.
    double duration;
    /// The first video stream: codec, profile (FFmpeg's number), pixel format, size, frame rate.
    char video_codec[24];
    int32_t video_profile;
    char pixel_format[24];
    int32_t width;
    int32_t height;
    double frame_rate;
    /// The first audio stream.
    char audio_codec[24];
    int32_t sample_rate;
    int32_t channels;
    /// The furthest byte the index says a packet needs (mp4/mov, avi, mkv with cues); -1 when
    /// there is no index to tell.
    int64_t indexed_end;
    /// MP4/MOV: the index (moov) comes before the media (mdat).
    int32_t index_first;
} att_av_info;

typedef struct att_av att_av;

/// Opens `data` with the allowed demuxers and reads its streams (at most `max_streams`, at
/// most `probe_bytes` of it to find them), checking `deadline` (a CLOCK_MONOTONIC nanosecond
/// cell, 0 = none) as it goes.
att_av *att_av_open(
    const uint8_t *data, size_t length, int32_t max_streams, int64_t probe_bytes, const uint64_t *deadline,
    att_av_info *info, att_av_error *error);

/// Decodes the video frame shown at `seconds` (from the keyframe before it, at most
/// `max_frames` decoded) into RGB24 at the stream's size, malloc'ed into `*rgb` (att_av_free).
/// `*shown` is the frame's own time. At most `max_pixels` pixels.
int32_t att_av_poster(
    att_av *av, double seconds, int32_t max_frames, int64_t max_pixels, uint8_t **rgb, int32_t *width,
    int32_t *height, double *shown, att_av_error *error);

void att_av_close(att_av *av);
void att_av_free(void *pointer);

#endif
