// FFmpeg's functions, reached through one table filled by dlopen/dlsym (ff.c): linked in,
// FFmpeg's libraries and theirs (x264, x265, vpx, aom, …: over a hundred) cost every process
// 26 ms at start-up, images-only runs included (measured). Private to CAttacheAV.
#ifndef ATT_FF_H
#define ATT_FF_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

// Every function used, by library.
#define FFMPEG_FUNCTIONS                                                                                               \
    X(avutil, av_log_set_level)                                                                                        \
    X(avutil, av_max_alloc)                                                                                            \
    X(avutil, av_malloc)                                                                                               \
    X(avutil, av_calloc)                                                                                               \
    X(avutil, av_free)                                                                                                 \
    X(avutil, av_freep)                                                                                                \
    X(avutil, av_strdup)                                                                                               \
    X(avutil, av_strerror)                                                                                             \
    X(avutil, av_dict_set)                                                                                             \
    X(avutil, av_dict_free)                                                                                            \
    X(avutil, av_get_pix_fmt_name)                                                                                     \
    X(avutil, av_buffer_create)                                                                                        \
    X(avutil, av_buffer_unref)                                                                                         \
    X(avutil, av_frame_alloc)                                                                                          \
    X(avutil, av_frame_unref)                                                                                          \
    X(avutil, av_frame_move_ref)                                                                                       \
    X(avutil, av_frame_free)                                                                                           \
    X(avutil, av_frame_get_buffer)                                                                                     \
    X(avutil, av_frame_make_writable)                                                                                  \
    X(avutil, av_opt_set)                                                                                              \
    X(avutil, av_opt_set_int)                                                                                          \
    X(avutil, av_channel_layout_default)                                                                               \
    X(avutil, av_channel_layout_copy)                                                                                  \
    X(avutil, av_channel_layout_uninit)                                                                                \
    X(avutil, av_audio_fifo_alloc)                                                                                     \
    X(avutil, av_audio_fifo_free)                                                                                      \
    X(avutil, av_audio_fifo_write)                                                                                     \
    X(avutil, av_audio_fifo_read)                                                                                      \
    X(avutil, av_audio_fifo_size)                                                                                      \
    X(avutil, av_rescale_q)                                                                                            \
    X(avutil, av_display_rotation_get)                                                                                 \
    X(avformat, avio_alloc_context)                                                                                    \
    X(avformat, avio_context_free)                                                                                     \
    X(avformat, avio_flush)                                                                                            \
    X(avformat, avformat_alloc_context)                                                                                \
    X(avformat, avformat_open_input)                                                                                   \
    X(avformat, avformat_find_stream_info)                                                                             \
    X(avformat, avformat_close_input)                                                                                  \
    X(avformat, avformat_index_get_entries_count)                                                                      \
    X(avformat, avformat_index_get_entry)                                                                              \
    X(avformat, av_find_best_stream)                                                                                   \
    X(avformat, av_seek_frame)                                                                                         \
    X(avformat, av_read_frame)                                                                                         \
    X(avformat, avformat_alloc_output_context2)                                                                        \
    X(avformat, avformat_new_stream)                                                                                   \
    X(avformat, avformat_write_header)                                                                                 \
    X(avformat, av_interleaved_write_frame)                                                                            \
    X(avformat, av_write_trailer)                                                                                      \
    X(avformat, avformat_free_context)                                                                                 \
    X(avformat, av_stream_get_side_data)                                                                               \
    X(avformat, av_stream_new_side_data)                                                                               \
    X(avcodec, avcodec_get_name)                                                                                       \
    X(avcodec, avcodec_alloc_context3)                                                                                 \
    X(avcodec, avcodec_default_get_buffer2)                                                                            \
    X(avcodec, avcodec_parameters_to_context)                                                                          \
    X(avcodec, avcodec_open2)                                                                                          \
    X(avcodec, avcodec_send_packet)                                                                                    \
    X(avcodec, avcodec_receive_frame)                                                                                  \
    X(avcodec, avcodec_free_context)                                                                                   \
    X(avcodec, av_packet_alloc)                                                                                        \
    X(avcodec, av_packet_unref)                                                                                        \
    X(avcodec, av_packet_free)                                                                                         \
    X(avcodec, avcodec_find_encoder_by_name)                                                                           \
    X(avcodec, avcodec_send_frame)                                                                                     \
    X(avcodec, avcodec_receive_packet)                                                                                 \
    X(avcodec, avcodec_parameters_from_context)                                                                        \
    X(avcodec, av_packet_rescale_ts)                                                                                   \
    X(swscale, sws_getContext)                                                                                         \
    X(swscale, sws_scale)                                                                                              \
    X(swscale, sws_freeContext)                                                                                        \
    X(swscale, sws_setColorspaceDetails)                                                                               \
    X(swscale, sws_getCoefficients)                                                                                    \
    X(swresample, swr_alloc_set_opts2)                                                                                 \
    X(swresample, swr_init)                                                                                            \
    X(swresample, swr_convert)                                                                                         \
    X(swresample, swr_free)

struct att_ff {
#define X(library, name) __typeof__(name) *name;
    FFMPEG_FUNCTIONS
#undef X
};
extern struct att_ff att_ff;

/// Loads FFmpeg once; NULL when it is there, else why not.
const char *att_ff_load(void);

#ifndef ATT_FF_LOADER
// Calls go through the table.
#define av_log_set_level att_ff.av_log_set_level
#define av_max_alloc att_ff.av_max_alloc
#define av_malloc att_ff.av_malloc
#define av_calloc att_ff.av_calloc
#define av_free att_ff.av_free
#define av_freep att_ff.av_freep
#define av_strdup att_ff.av_strdup
#define av_strerror att_ff.av_strerror
#define av_dict_set att_ff.av_dict_set
#define av_dict_free att_ff.av_dict_free
#define av_get_pix_fmt_name att_ff.av_get_pix_fmt_name
#define av_buffer_create att_ff.av_buffer_create
#define av_buffer_unref att_ff.av_buffer_unref
#define av_frame_alloc att_ff.av_frame_alloc
#define av_frame_unref att_ff.av_frame_unref
#define av_frame_move_ref att_ff.av_frame_move_ref
#define av_frame_free att_ff.av_frame_free
#define av_frame_get_buffer att_ff.av_frame_get_buffer
#define av_frame_make_writable att_ff.av_frame_make_writable
#define av_opt_set att_ff.av_opt_set
#define av_opt_set_int att_ff.av_opt_set_int
#define av_channel_layout_default att_ff.av_channel_layout_default
#define av_channel_layout_copy att_ff.av_channel_layout_copy
#define av_channel_layout_uninit att_ff.av_channel_layout_uninit
#define av_audio_fifo_alloc att_ff.av_audio_fifo_alloc
#define av_audio_fifo_free att_ff.av_audio_fifo_free
#define av_audio_fifo_write att_ff.av_audio_fifo_write
#define av_audio_fifo_read att_ff.av_audio_fifo_read
#define av_audio_fifo_size att_ff.av_audio_fifo_size
#define av_rescale_q att_ff.av_rescale_q
#define av_display_rotation_get att_ff.av_display_rotation_get
#define avio_alloc_context att_ff.avio_alloc_context
#define avio_context_free att_ff.avio_context_free
#define avio_flush att_ff.avio_flush
#define avformat_alloc_context att_ff.avformat_alloc_context
#define avformat_open_input att_ff.avformat_open_input
#define avformat_find_stream_info att_ff.avformat_find_stream_info
#define avformat_close_input att_ff.avformat_close_input
#define avformat_index_get_entries_count att_ff.avformat_index_get_entries_count
#define avformat_index_get_entry att_ff.avformat_index_get_entry
#define av_find_best_stream att_ff.av_find_best_stream
#define av_seek_frame att_ff.av_seek_frame
#define av_read_frame att_ff.av_read_frame
#define avformat_alloc_output_context2 att_ff.avformat_alloc_output_context2
#define avformat_new_stream att_ff.avformat_new_stream
#define avformat_write_header att_ff.avformat_write_header
#define av_interleaved_write_frame att_ff.av_interleaved_write_frame
#define av_write_trailer att_ff.av_write_trailer
#define avformat_free_context att_ff.avformat_free_context
#define av_stream_get_side_data att_ff.av_stream_get_side_data
#define av_stream_new_side_data att_ff.av_stream_new_side_data
#define avcodec_get_name att_ff.avcodec_get_name
#define avcodec_alloc_context3 att_ff.avcodec_alloc_context3
#define avcodec_default_get_buffer2 att_ff.avcodec_default_get_buffer2
#define avcodec_parameters_to_context att_ff.avcodec_parameters_to_context
#define avcodec_open2 att_ff.avcodec_open2
#define avcodec_send_packet att_ff.avcodec_send_packet
#define avcodec_receive_frame att_ff.avcodec_receive_frame
#define avcodec_free_context att_ff.avcodec_free_context
#define av_packet_alloc att_ff.av_packet_alloc
#define av_packet_unref att_ff.av_packet_unref
#define av_packet_free att_ff.av_packet_free
#define avcodec_find_encoder_by_name att_ff.avcodec_find_encoder_by_name
#define avcodec_send_frame att_ff.avcodec_send_frame
#define avcodec_receive_packet att_ff.avcodec_receive_packet
#define avcodec_parameters_from_context att_ff.avcodec_parameters_from_context
#define av_packet_rescale_ts att_ff.av_packet_rescale_ts
#define sws_getContext att_ff.sws_getContext
#define sws_scale att_ff.sws_scale
#define sws_freeContext att_ff.sws_freeContext
#define sws_setColorspaceDetails att_ff.sws_setColorspaceDetails
#define sws_getCoefficients att_ff.sws_getCoefficients
#define swr_alloc_set_opts2 att_ff.swr_alloc_set_opts2
#define swr_init att_ff.swr_init
#define swr_convert att_ff.swr_convert
#define swr_free att_ff.swr_free
#endif

#include "attache_av.h"

// MARK: - Bytes in memory (io.c)

/// Bytes in memory read as a file, through pointers to where they are and how many there are:
/// a buffer being written (faststart's second pass reads back what the muxer wrote) may move
/// and grow while it is read.
typedef struct {
    const uint8_t *const *data;
    const size_t *length;
    int64_t position;
} att_io_reader;

/// A growable buffer a muxer writes and seeks in, refusing (EFBIG, `over` set) past `max`.
typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
    int64_t position;
    int64_t max;
    int over;
} att_io_buffer;

/// libavformat's read and seek callbacks over an att_io_reader.
int att_io_read(void *reader, uint8_t *bytes, int count);
int64_t att_io_seek(void *reader, int64_t offset, int whence);
/// An I/O context with a 64 KiB chunk: reading an att_io_reader, or (writable) writing an
/// att_io_buffer. NULL when out of memory.
AVIOContext *att_io_context(void *opaque, int writable);
/// Frees a context from att_io_context (its chunk too) and sets it to NULL.
void att_io_context_free(AVIOContext **io);

// MARK: - ISO media boxes (iso.c)

/// What one walk over an ISO file's top-level boxes (MP4, MOV, M4A) says before libavformat
/// reads it.
typedef struct {
    /// `trak` boxes inside `moov`.
    int tracks;
    /// `moov` comes before `mdat` (faststart).
    int index_first;
    /// The box the file ends inside ("mdat", "moov", "a"), or NULL when none is cut.
    const char *cut;
} att_iso_layout;

/// Walks the top-level boxes of `data` when it starts with `ftyp`; 0 when it does not.
int att_iso_walk(const uint8_t *data, size_t length, att_iso_layout *layout);

// MARK: - The writer's steps (encode.c), for transcodes (transcode.c)

/// Encodes one picture (planes in `format`, or RGBA when `from_rgb`) at `pts`; an FFmpeg code.
int att_av_writer_picture(att_av_writer *w, const uint8_t *const planes[4], const int strides[4], int width, int height,
                          int format, int from_rgb, int64_t pts, int64_t duration);
/// Encodes decoded audio (NULL: flushes what the resampler and the FIFO hold); an FFmpeg code.
int att_av_writer_samples(att_av_writer *w, const AVFrame *decoded);
/// Fills `error` for a failed step (the byte cap when the output passed it) and returns its status.
int att_av_writer_failed(att_av_writer *w, att_error *error, const char *what, int code);

struct att_av {
    AVFormatContext *format;
    AVIOContext *io;
    const uint8_t *data;
    size_t length;
    att_io_reader reader;
    const uint64_t *deadline;
};

/// Decoders allowed (FFmpeg's names).
extern const char *const att_av_decoders;
/// Fills `error` with `what` and FFmpeg's reason for `code` (when negative).
void att_av_set(att_error *error, int32_t status, const char *what, int code);
/// Fills `error`: a decoder's frames would pass the decoder memory cap of `cap` bytes.
void att_av_set_memory(att_error *error, int64_t cap);
/// An outcome code for an FFmpeg error.
int32_t att_av_status(int code);

/// The bytes of frames one job's decoders hold at once (budget.c): every frame buffer a
/// decoder asks for is counted while it is alive, and one that would pass `cap` is refused
/// (the decoder fails with ENOMEM and `exceeded` is set).
typedef struct att_av_budget att_av_budget;
att_av_budget *att_av_budget_new(int64_t cap);
/// Lets `decoder` take its frames from `budget` (before avcodec_open2).
void att_av_budget_attach(AVCodecContext *decoder, att_av_budget *budget);
/// Whether a frame was refused.
int att_av_budget_exceeded(const att_av_budget *budget);
/// The job's hold on the budget; frames still alive keep it until they are freed.
void att_av_budget_release(att_av_budget *budget);

#endif
