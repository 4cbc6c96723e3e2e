// A thin shim over FFmpeg's libavformat, libavcodec and libswscale: container checks and
// poster frames for video and audio held in memory. No FFmpeg protocol, file or network is
// ever opened: the bytes come through a custom AVIO, nested opens are refused, demuxers and
// decoders are on allow-lists, and every call is interruptible at a deadline.
#ifndef ATTACHE_AV_H
#define ATTACHE_AV_H

#include <stddef.h>
#include <stdint.h>

#include "attache_shim.h"

// Failures come back as att_error (attache_shim.h, shared by every shim): a code and a message.

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
    /// Seconds the packets span, from a pass over every packet (nothing decoded); negative
    /// when the pass was not asked for.
    double demuxed_duration;
    /// What the first video stream's decoder holds at most (its reference frames), in bytes.
    int64_t decoder_bytes;
} att_av_info;

/// What opening a container may cost, checked before it is spent.
typedef struct {
    /// Streams at most (more: ATT_ERR_STREAMS, before libavformat reads them where the file
    /// says how many it has).
    int32_t max_streams;
    /// Bytes read to find the streams.
    int64_t probe_bytes;
    /// Pixels of one video frame at most, for the decoders opened to find the streams.
    int64_t max_pixels;
    /// What a video decoder may hold: a stream whose size (from the header) needs more is
    /// refused (ATT_ERR_MEMORY_LIMIT) before a frame is decoded. 0: no cap.
    int64_t max_decoder_bytes;
    /// 1: every packet is read (not decoded) to find how long the media really are, whatever
    /// the header says; longer than `max_seconds` is ATT_ERR_DURATION.
    int32_t scan;
    double max_seconds;
} att_av_limits;

typedef struct att_av att_av;

/// Opens `data` with the allowed demuxers and reads its streams within `limits`, checking
/// `deadline` (a CLOCK_MONOTONIC nanosecond cell, 0 = none) as it goes.
att_av *att_av_open(const uint8_t *data, size_t length, const att_av_limits *limits, const uint64_t *deadline,
                    att_av_info *info, att_error *error);

/// Decodes the video frame shown at `seconds` (from the keyframe before it, at most
/// `max_frames` decoded; the last frame when the time is past the end) into RGB24, scaled by
/// swscale to its shown shape (sample aspect ratio) fitting inside `max_side` (0 = as stored),
/// malloc'ed into `*rgb` (att_av_free). `*shown` is the frame's own time. At most `max_pixels`
/// pixels decoded; the decoder's frames hold at most `max_decoder_bytes` at once (0: no cap).
int32_t att_av_poster(att_av *av, double seconds, int32_t max_frames, int64_t max_pixels, int64_t max_decoder_bytes,
                      int32_t max_side, uint8_t **rgb, int32_t *width, int32_t *height, double *shown,
                      att_error *error);

/// The first video stream's display rotation, clockwise: 0, 90, 180 or 270.
int32_t att_av_rotation(att_av *av);

/// What an encoded MP4 or M4A is to be.
typedef struct {
    /// Video: the output size (even), 0 = no video (an M4A).
    int32_t width;
    int32_t height;
    /// The time base of the timestamps given to att_av_writer_rgba (a transcode uses its source's).
    int32_t time_base_num;
    int32_t time_base_den;
    /// Frames a second, a hint for rate control.
    double frame_rate;
    /// H.264 by libx264: `crf` (0 = 23), capped by `max_rate` bits a second when over 0 (a VBV
    /// of twice that); `bit_rate` over 0 asks for that average instead of a constant quality.
    int32_t crf;
    int64_t bit_rate;
    int64_t max_rate;
    /// x264's preset (`veryfast`, `medium`, …).
    char preset[16];
    /// 1: no B-frames (frames never reordered).
    int32_t no_b_frames;
    /// AAC bits a second, 0 = no audio; the output rate and channels (1 or 2).
    int32_t audio_bit_rate;
    int32_t sample_rate;
    int32_t channels;
    /// The output may not pass this many bytes: writing past it fails the encode.
    int64_t max_bytes;
    /// At most this many video frames are decoded (a transcode).
    int64_t max_frames;
    /// The decoders' frames hold at most this many bytes at once (a transcode; 0: no cap).
    int64_t max_decoder_bytes;
    /// Colour tags for the video (FFmpeg's AVColorPrimaries, AVColorTransferCharacteristic,
    /// AVColorSpace; 0 = not said). Frames given as RGBA are converted with BT.709's matrix.
    int32_t color_primaries;
    int32_t color_trc;
    int32_t colorspace;
    /// The source's display matrix, kept on the video track (transcodes): `has_matrix` 1.
    int32_t display_matrix[9];
    int32_t has_matrix;
} att_av_output;

/// Whether this FFmpeg has libx264 (H.264 encoding); without it posters and checks still work.
int32_t att_av_can_encode(void);

typedef struct att_av_writer att_av_writer;

/// An MP4 (H.264, faststart) or M4A (AAC) written into memory.
att_av_writer *att_av_writer_open(const att_av_output *output, const uint64_t *deadline, att_error *error);

/// Adds a frame of `width`×`height` RGBA pixels (`stride` bytes a row), shown from `pts` for
/// `duration` (the writer's time base); scaled to the output size.
int32_t att_av_writer_rgba(att_av_writer *writer, const uint8_t *rgba, int32_t width, int32_t height, int32_t stride,
                           int64_t pts, int64_t duration, att_error *error);

/// Flushes the encoders and finishes the file: `*bytes` (att_av_free) of `*length`.
int32_t att_av_writer_finish(att_av_writer *writer, uint8_t **bytes, size_t *length, att_error *error);

void att_av_writer_close(att_av_writer *writer);

/// Re-encodes an opened container's first video stream (when `output->width` > 0) and first
/// audio stream (when `output->audio_bit_rate` > 0) into an MP4 (or an M4A when there is no
/// video), decoding and encoding on the calling thread only.
int32_t att_av_transcode(att_av *av, const att_av_output *output, uint8_t **bytes, size_t *length, att_error *error);

void att_av_close(att_av *av);
void att_av_free(void *pointer);

#endif
