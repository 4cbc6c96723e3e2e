#include "attache_av.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <pthread.h>
#include <libavutil/avstring.h>

// FFmpeg is loaded when a container is first checked, not when the process starts: linked
// in, its libraries and theirs (x264, x265, vpx, aom, …: over a hundred) cost every process
// 26 ms at start-up, images-only runs included (measured). Every function used, by library:
#define FFMPEG_FUNCTIONS \
    X(avutil, av_log_set_level) \
    X(avutil, av_max_alloc) \
    X(avutil, av_malloc) \
    X(avutil, av_free) \
    X(avutil, av_freep) \
    X(avutil, av_strdup) \
    X(avutil, av_strerror) \
    X(avutil, av_dict_set) \
    X(avutil, av_dict_free) \
    X(avutil, av_get_pix_fmt_name) \
    X(avutil, av_frame_alloc) \
    X(avutil, av_frame_unref) \
    X(avutil, av_frame_free) \
    X(avformat, avio_alloc_context) \
    X(avformat, avio_context_free) \
    X(avformat, avformat_alloc_context) \
    X(avformat, avformat_open_input) \
    X(avformat, avformat_find_stream_info) \
    X(avformat, avformat_close_input) \
    X(avformat, avformat_index_get_entries_count) \
    X(avformat, avformat_index_get_entry) \
    X(avformat, av_find_best_stream) \
    X(avformat, av_seek_frame) \
    X(avformat, av_read_frame) \
    X(avcodec, avcodec_get_name) \
    X(avcodec, avcodec_alloc_context3) \
    X(avcodec, avcodec_parameters_to_context) \
    X(avcodec, avcodec_open2) \
    X(avcodec, avcodec_send_packet) \
    X(avcodec, avcodec_receive_frame) \
    X(avcodec, avcodec_free_context) \
    X(avcodec, av_packet_alloc) \
    X(avcodec, av_packet_unref) \
    X(avcodec, av_packet_free) \
    X(swscale, sws_getContext) \
    X(swscale, sws_scale) \
    X(swscale, sws_freeContext)

static struct {
#define X(library, name) __typeof__(name) *name;
    FFMPEG_FUNCTIONS
#undef X
} ff;

static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static const char *load_error = NULL;

static void *open_library(const char *name) {
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL && load_error == NULL) load_error = "FFmpeg's libraries cannot be loaded";
    return handle;
}

static void load(void) {
    void *avutil = open_library("libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR));
    void *avformat = open_library("libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR));
    void *avcodec = open_library("libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR));
    void *swscale = open_library("libswscale.so." AV_STRINGIFY(LIBSWSCALE_VERSION_MAJOR));
    if (load_error != NULL) return;
#define X(library, name) \
    if ((ff.name = dlsym(library, #name)) == NULL) load_error = "FFmpeg lacks " #name;
    FFMPEG_FUNCTIONS
#undef X
    // No single FFmpeg allocation over 64 MiB (an 8K 4:2:0 frame is 53 MB): a header that
    // declares a huge chunk (a WAV's LIST INFO of 2.5 GB, found by fuzz-av) is refused by
    // av_malloc instead of reserved.
    if (load_error == NULL) ff.av_max_alloc((size_t)64 << 20);
}

// Calls below go through the table.
#define av_log_set_level ff.av_log_set_level
#define av_max_alloc ff.av_max_alloc
#define av_malloc ff.av_malloc
#define av_free ff.av_free
#define av_freep ff.av_freep
#define av_strdup ff.av_strdup
#define av_strerror ff.av_strerror
#define av_dict_set ff.av_dict_set
#define av_dict_free ff.av_dict_free
#define av_get_pix_fmt_name ff.av_get_pix_fmt_name
#define av_frame_alloc ff.av_frame_alloc
#define av_frame_unref ff.av_frame_unref
#define av_frame_free ff.av_frame_free
#define avio_alloc_context ff.avio_alloc_context
#define avio_context_free ff.avio_context_free
#define avformat_alloc_context ff.avformat_alloc_context
#define avformat_open_input ff.avformat_open_input
#define avformat_find_stream_info ff.avformat_find_stream_info
#define avformat_close_input ff.avformat_close_input
#define avformat_index_get_entries_count ff.avformat_index_get_entries_count
#define avformat_index_get_entry ff.avformat_index_get_entry
#define av_find_best_stream ff.av_find_best_stream
#define av_seek_frame ff.av_seek_frame
#define av_read_frame ff.av_read_frame
#define avcodec_get_name ff.avcodec_get_name
#define avcodec_alloc_context3 ff.avcodec_alloc_context3
#define avcodec_parameters_to_context ff.avcodec_parameters_to_context
#define avcodec_open2 ff.avcodec_open2
#define avcodec_send_packet ff.avcodec_send_packet
#define avcodec_receive_frame ff.avcodec_receive_frame
#define avcodec_free_context ff.avcodec_free_context
#define av_packet_alloc ff.av_packet_alloc
#define av_packet_unref ff.av_packet_unref
#define av_packet_free ff.av_packet_free
#define sws_getContext ff.sws_getContext
#define sws_scale ff.sws_scale
#define sws_freeContext ff.sws_freeContext

// Demuxers a notification's media may come in (the names FFmpeg 5.1 registers them under).
static const char *const demuxers =
    "mov,mp4,m4a,3gp,3g2,mj2,mpeg,mpegts,mpegvideo,avi,matroska,webm,ogg,wav,aiff,mp3,flac,aac";
// Decoders a poster may need.
static const char *const decoders = "h264,hevc,mpeg4,mpeg1video,mpeg2video,mjpeg,vp8,vp9,av1,libdav1d,theora,h263";

struct att_av {
    AVFormatContext *format;
    AVIOContext *io;
    const uint8_t *data;
    size_t length;
    int64_t position;
    const uint64_t *deadline;
};

static void set(att_av_error *error, int32_t status, const char *what, int code) {
    if (!error) return;
    error->status = status;
    char reason[AV_ERROR_MAX_STRING_SIZE] = {0};
    if (code < 0) av_strerror(code, reason, sizeof reason);
    snprintf(error->message, sizeof error->message, "%s%s%s", what, code < 0 ? ": " : "", code < 0 ? reason : "");
}

static int passed(const uint64_t *cell) {
    if (cell == NULL) return 0;
    uint64_t deadline = __atomic_load_n(cell, __ATOMIC_RELAXED);
    if (deadline == 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec > deadline;
}

static int interrupted(void *opaque) { return passed(((att_av *)opaque)->deadline); }

static int read_packet(void *opaque, uint8_t *buffer, int size) {
    att_av *av = opaque;
    if (av->position >= (int64_t)av->length) return AVERROR_EOF;
    size_t left = av->length - (size_t)av->position;
    size_t n = (size_t)size < left ? (size_t)size : left;
    memcpy(buffer, av->data + av->position, n);
    av->position += (int64_t)n;
    return (int)n;
}

static int64_t seek(void *opaque, int64_t offset, int whence) {
    att_av *av = opaque;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return (int64_t)av->length;
    case SEEK_SET: break;
    case SEEK_CUR: offset += av->position; break;
    case SEEK_END: offset += (int64_t)av->length; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0 || offset > (int64_t)av->length) return AVERROR(EINVAL);
    av->position = offset;
    return offset;
}

// Nothing but the bytes given: a demuxer that wants another file (a playlist, an external
// data reference) is refused.
static int refuse_open(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options) {
    (void)s, (void)pb, (void)url, (void)flags, (void)options;
    return AVERROR(EPERM);
}

static int32_t status_of(int code) {
    if (code == AVERROR_EXIT) return ATT_AV_TIMEOUT;
    if (code == AVERROR(ENOMEM)) return ATT_AV_MEMORY_LIMIT;
    if (code == AVERROR_EOF) return ATT_AV_TRUNCATED;
    if (code == AVERROR_DEMUXER_NOT_FOUND || code == AVERROR_DECODER_NOT_FOUND || code == AVERROR_PATCHWELCOME ||
        code == AVERROR(EPERM))
        return ATT_AV_UNSUPPORTED;
    return ATT_AV_CORRUPT;
}

static void name(char *out, size_t capacity, const char *value) { snprintf(out, capacity, "%s", value ? value : ""); }

att_av *att_av_open(
    const uint8_t *data, size_t length, int32_t max_streams, int64_t probe_bytes, const uint64_t *deadline,
    att_av_info *info, att_av_error *error) {
    memset(info, 0, sizeof *info);
    pthread_once(&loaded, load);
    if (load_error != NULL) {
        if (error) {
            error->status = ATT_AV_UNSUPPORTED;
            snprintf(error->message, sizeof error->message, "%s", load_error);
        }
        return NULL;
    }
    av_log_set_level(AV_LOG_QUIET);
    att_av *av = calloc(1, sizeof *av);
    if (av == NULL) {
        set(error, ATT_AV_MEMORY_LIMIT, "out of memory", 0);
        return NULL;
    }
    av->data = data;
    av->length = length;
    av->deadline = deadline;
    const int buffer_size = 64 << 10;
    uint8_t *buffer = av_malloc(buffer_size);
    av->io = buffer ? avio_alloc_context(buffer, buffer_size, 0, av, read_packet, NULL, seek) : NULL;
    av->format = avformat_alloc_context();
    if (av->io == NULL || av->format == NULL) {
        if (av->io == NULL) av_free(buffer);
        set(error, ATT_AV_MEMORY_LIMIT, "out of memory", 0);
        att_av_close(av);
        return NULL;
    }
    AVFormatContext *f = av->format;
    f->pb = av->io;
    f->flags |= AVFMT_FLAG_CUSTOM_IO;
    f->interrupt_callback.callback = interrupted;
    f->interrupt_callback.opaque = av;
    f->io_open = refuse_open;
    f->format_whitelist = av_strdup(demuxers);
    f->codec_whitelist = av_strdup(decoders);
    f->protocol_whitelist = av_strdup("none");
    // The caller's stream limit is checked on what was read (a typed refusal); FFmpeg's own cap,
    // a few times higher, stops a file of thousands of streams while it is read.
    f->max_streams = max_streams > 0 && max_streams < 250 ? 4 * max_streams : 1000;
    f->probesize = probe_bytes > 32 ? probe_bytes : 32;
    f->max_analyze_duration = 5 * AV_TIME_BASE;
    AVDictionary *options = NULL;
    // MP4/MOV: no external data references, no following of `dref` URLs.
    av_dict_set(&options, "enable_drefs", "0", 0);
    av_dict_set(&options, "use_absolute_path", "0", 0);
    // ISO media (MP4, MOV, M4A): a top-level box that runs past the end means the file was cut.
    const char *cut = NULL;
    if (length >= 16 && memcmp(data + 4, "ftyp", 4) == 0) {
        size_t at = 0;
        while (at + 8 <= length) {
            uint64_t size = (uint64_t)data[at] << 24 | (uint64_t)data[at + 1] << 16 | (uint64_t)data[at + 2] << 8 |
                            data[at + 3];
            if (size == 1 && at + 16 <= length) {
                size = 0;
                for (int k = 0; k < 8; k++) size = size << 8 | data[at + 8 + k];
            }
            if (size == 0) break;  // to the end of the file
            if (size < 8) break;
            if (size > length - at) {
                static char box[8];
                memcpy(box, data + at + 4, 4);
                box[4] = 0;
                cut = memcmp(box, "mdat", 4) == 0 ? "mdat" : memcmp(box, "moov", 4) == 0 ? "moov" : "a";
                break;
            }
            at += (size_t)size;
        }
    }
    int code = avformat_open_input(&av->format, NULL, NULL, &options);
    av_dict_free(&options);
    if (code < 0) {
        av->format = NULL;  // freed by avformat_open_input on failure
        if (cut != NULL) {
            char what[96];
            snprintf(what, sizeof what, "the file ends inside its %s box (cut short)", cut);
            set(error, ATT_AV_TRUNCATED, what, 0);
        } else {
            set(error, status_of(code), code == AVERROR(ENOMEM) ? "the container cannot be read (over 1,000 streams, or out of memory)" : "the container cannot be read", code);
        }
        att_av_close(av);
        return NULL;
    }
    f = av->format;
    code = avformat_find_stream_info(f, NULL);
    if (code < 0) {
        set(error, status_of(code), "the streams cannot be read", code);
        att_av_close(av);
        return NULL;
    }
    name(info->format, sizeof info->format, f->iformat ? f->iformat->name : NULL);
    info->streams = (int32_t)f->nb_streams;
    info->duration = f->duration > 0 ? (double)f->duration / AV_TIME_BASE : -1;
    info->indexed_end = -1;
    for (unsigned i = 0; i < f->nb_streams; i++) {
        AVStream *s = f->streams[i];
        AVCodecParameters *p = s->codecpar;
        if (p->codec_type == AVMEDIA_TYPE_VIDEO && !(s->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
            if (info->video_streams++ == 0) {
                name(info->video_codec, sizeof info->video_codec, avcodec_get_name(p->codec_id));
                info->video_profile = p->profile;
                name(info->pixel_format, sizeof info->pixel_format, av_get_pix_fmt_name(p->format));
                info->width = p->width;
                info->height = p->height;
                AVRational rate = s->avg_frame_rate.num > 0 ? s->avg_frame_rate : s->r_frame_rate;
                info->frame_rate = rate.den > 0 ? av_q2d(rate) : 0;
            }
        } else if (p->codec_type == AVMEDIA_TYPE_AUDIO) {
            if (info->audio_streams++ == 0) {
                name(info->audio_codec, sizeof info->audio_codec, avcodec_get_name(p->codec_id));
                info->sample_rate = p->sample_rate;
                info->channels = p->ch_layout.nb_channels;
            }
        }
        // Where the index says the packets are: their end must be inside the bytes.
        int entries = avformat_index_get_entries_count(s);
        for (int e = 0; e < entries; e++) {
            const AVIndexEntry *entry = avformat_index_get_entry(s, e);
            if (entry && entry->pos >= 0 && entry->pos + entry->size > info->indexed_end) {
                info->indexed_end = entry->pos + entry->size;
            }
        }
    }
    // MP4/MOV: where the index sits against the media (faststart: moov first).
    if (length >= 16 && memcmp(data + 4, "ftyp", 4) == 0) {
        size_t at = 0;
        while (at + 8 <= length) {
            uint64_t size = (uint64_t)data[at] << 24 | (uint64_t)data[at + 1] << 16 | (uint64_t)data[at + 2] << 8 |
                            data[at + 3];
            if (size == 1 && at + 16 <= length) {
                size = 0;
                for (int k = 0; k < 8; k++) size = size << 8 | data[at + 8 + k];
            }
            if (memcmp(data + at + 4, "moov", 4) == 0) {
                info->index_first = 1;
                break;
            }
            if (memcmp(data + at + 4, "mdat", 4) == 0 || size < 8) break;
            at += (size_t)size;
        }
    }
    return av;
}

int32_t att_av_poster(
    att_av *av, double seconds, int32_t max_frames, int64_t max_pixels, uint8_t **rgb, int32_t *width,
    int32_t *height, double *shown, att_av_error *error) {
    *rgb = NULL;
    AVFormatContext *f = av->format;
    const AVCodec *codec = NULL;
    int index = av_find_best_stream(f, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (index < 0 || codec == NULL) {
        set(error, ATT_AV_UNSUPPORTED, "no video stream with a decoder here", index < 0 ? index : 0);
        return ATT_AV_UNSUPPORTED;
    }
    AVStream *stream = f->streams[index];
    if ((int64_t)stream->codecpar->width * stream->codecpar->height > max_pixels) {
        set(error, ATT_AV_MEMORY_LIMIT, "the video's frames are over the pixel limit", 0);
        return ATT_AV_MEMORY_LIMIT;
    }
    AVCodecContext *decoder = avcodec_alloc_context3(codec);
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    int32_t result = ATT_AV_OK;
    if (decoder == NULL || packet == NULL || frame == NULL) {
        set(error, ATT_AV_MEMORY_LIMIT, "out of memory", 0);
        result = ATT_AV_MEMORY_LIMIT;
        goto done;
    }
    avcodec_parameters_to_context(decoder, stream->codecpar);
    // One thread: the pipeline's workers are the threads.
    decoder->thread_count = 1;
    decoder->codec_whitelist = av_strdup(decoders);
    int code = avcodec_open2(decoder, codec, NULL);
    if (code < 0) {
        set(error, status_of(code), "the video decoder cannot start", code);
        result = status_of(code);
        goto done;
    }
    int64_t target = (int64_t)(seconds / av_q2d(stream->time_base));
    if (stream->start_time != AV_NOPTS_VALUE) target += stream->start_time;
    if (seconds > 0) av_seek_frame(f, index, target, AVSEEK_FLAG_BACKWARD);
    int decoded = 0, have = 0;
    while (!have && decoded < max_frames) {
        if (passed(av->deadline)) {
            set(error, ATT_AV_TIMEOUT, "the poster's deadline passed", 0);
            result = ATT_AV_TIMEOUT;
            goto done;
        }
        code = av_read_frame(f, packet);
        int draining = code < 0;
        if (!draining && packet->stream_index != index) {
            av_packet_unref(packet);
            continue;
        }
        code = avcodec_send_packet(decoder, draining ? NULL : packet);
        av_packet_unref(packet);
        while (code >= 0) {
            code = avcodec_receive_frame(decoder, frame);
            if (code < 0) break;
            decoded++;
            int64_t pts = frame->best_effort_timestamp;
            // The first frame at or past the asked time, or the last one decoded.
            if (pts == AV_NOPTS_VALUE || pts >= target || decoded >= max_frames) {
                have = 1;
                break;
            }
            av_frame_unref(frame);
        }
        if (draining && !have) {
            if (decoded == 0) {
                set(error, ATT_AV_CORRUPT, "no frame could be decoded", 0);
                result = ATT_AV_CORRUPT;
            } else {
                set(error, ATT_AV_CORRUPT, "the stream ended before the asked time", 0);
                result = ATT_AV_CORRUPT;
            }
            goto done;
        }
    }
    if (!have) {
        set(error, ATT_AV_CORRUPT, "no frame within the frame budget", 0);
        result = ATT_AV_CORRUPT;
        goto done;
    }
    if (frame->width <= 0 || frame->height <= 0 || (int64_t)frame->width * frame->height > max_pixels) {
        set(error, ATT_AV_MEMORY_LIMIT, "a decoded frame is over the pixel limit", 0);
        result = ATT_AV_MEMORY_LIMIT;
        goto done;
    }
    struct SwsContext *scale = sws_getContext(frame->width, frame->height, frame->format, frame->width, frame->height,
                                              AV_PIX_FMT_RGB24, SWS_BILINEAR, NULL, NULL, NULL);
    uint8_t *out = malloc((size_t)frame->width * frame->height * 3);
    if (scale == NULL || out == NULL) {
        sws_freeContext(scale);
        free(out);
        set(error, ATT_AV_UNSUPPORTED, "the frame's pixel format cannot be converted", 0);
        result = ATT_AV_UNSUPPORTED;
        goto done;
    }
    uint8_t *planes[4] = {out, NULL, NULL, NULL};
    int strides[4] = {frame->width * 3, 0, 0, 0};
    sws_scale(scale, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    sws_freeContext(scale);
    *rgb = out;
    *width = frame->width;
    *height = frame->height;
    int64_t pts = frame->best_effort_timestamp;
    if (pts != AV_NOPTS_VALUE && stream->start_time != AV_NOPTS_VALUE) pts -= stream->start_time;
    *shown = pts == AV_NOPTS_VALUE ? 0 : (double)pts * av_q2d(stream->time_base);
done:
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&decoder);
    return result;
}

void att_av_close(att_av *av) {
    if (!av) return;
    if (av->format) avformat_close_input(&av->format);
    if (av->io) {
        av_freep(&av->io->buffer);
        avio_context_free(&av->io);
    }
    free(av);
}

void att_av_free(void *pointer) { free(pointer); }
