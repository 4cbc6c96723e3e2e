#include "attache_av.h"

#include "ff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libavutil/avstring.h>

// Demuxers a notification's media may come in (the names FFmpeg 5.1 registers them under).
static const char *const demuxers =
    "mov,mp4,m4a,3gp,3g2,mj2,mpeg,mpegts,mpegvideo,avi,matroska,webm,ogg,wav,aiff,mp3,flac,aac";
// Decoders a poster or a transcode may need.
const char *const att_av_decoders =
    "h264,hevc,mpeg4,mpeg1video,mpeg2video,mjpeg,vp8,vp9,av1,libdav1d,theora,h263,aac,aac_fixed,mp3,mp3float,mp2,"
    "mp2float,opus,vorbis,flac,alac,ac3,eac3,pcm_s16le,pcm_s16be,pcm_s24le,pcm_s24be,pcm_s32le,pcm_f32le,pcm_u8,"
    "pcm_mulaw,pcm_alaw,adpcm_ima_wav,adpcm_ms";

void att_av_set(att_error *error, int32_t status, const char *what, int code) {
    char reason[AV_ERROR_MAX_STRING_SIZE] = {0};
    if (code < 0) av_strerror(code, reason, sizeof reason);
    att_set_error(error, status, "%s%s%s", what, code < 0 ? ": " : "", code < 0 ? reason : "");
}

void att_av_set_memory(att_error *error, int64_t cap) {
    att_set_error(error, ATT_ERR_MEMORY_LIMIT, "the decoder needs more than the decoder memory cap (%lld bytes)",
                  (long long)cap);
}

static int interrupted(void *opaque) { return att_deadline_passed(((att_av *)opaque)->deadline); }

// Nothing but the bytes given: a demuxer that wants another file (a playlist, an external
// data reference) is refused, with EACCES: many demuxers fail with a bare -1, which is EPERM.
static int refuse_open(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                       AVDictionary **options) {
    (void)s, (void)pb, (void)url, (void)flags, (void)options;
    return AVERROR(EACCES);
}

int32_t att_av_status(int code) {
    if (code == AVERROR_EXIT) return ATT_ERR_TIMEOUT;
    if (code == AVERROR(ENOMEM)) return ATT_ERR_MEMORY_LIMIT;
    if (code == AVERROR_EOF) return ATT_ERR_TRUNCATED;
    if (code == AVERROR_DEMUXER_NOT_FOUND || code == AVERROR_DECODER_NOT_FOUND || code == AVERROR_PATCHWELCOME ||
        code == AVERROR(EACCES))
        return ATT_ERR_UNSUPPORTED;
    return ATT_ERR_CORRUPT;
}

static void name(char *out, size_t capacity, const char *value) { snprintf(out, capacity, "%s", value ? value : ""); }

// What a video decoder holds for frames of this stream's size: its reference frames and the
// ones in flight, at 1.5 bytes a pixel (8-bit 4:2:0; 3 beyond). Measured peaks with one thread:
// 1080p H.264 15.7 MB, 4K H.264 25 MB, 4K HEVC 75 MB (docs/video.md).
static int64_t decoder_bytes(const AVCodecParameters *p) {
    int64_t pixels = (int64_t)p->width * p->height;
    const char *pix = p->format >= 0 ? av_get_pix_fmt_name(p->format) : NULL;
    double per_pixel = pix != NULL && (strstr(pix, "444") || strstr(pix, "10") || strstr(pix, "12")) ? 3.0 : 1.5;
    int frames;
    switch (p->codec_id) {
    case AV_CODEC_ID_VP9:
    case AV_CODEC_ID_AV1:
    case AV_CODEC_ID_VP8: frames = 10; break;
    case AV_CODEC_ID_HEVC: frames = 8; break;
    case AV_CODEC_ID_H264: frames = 6; break;
    default: frames = 3; break;
    }
    return (int64_t)((double)pixels * per_pixel * frames);
}

// Every packet read (nothing decoded): the seconds they span, from the earliest start to the
// latest end over the streams. Stops once past `max_seconds` or past the packets that many
// seconds could hold. Returns a negative AVERROR when the reading fails (the deadline).
static int demux_seconds(AVFormatContext *f, double max_seconds, double *seconds) {
    AVPacket *packet = av_packet_alloc();
    if (packet == NULL) return AVERROR(ENOMEM);
    double start = 1e300, end = -1e300;
    int64_t packets = 0, most = (int64_t)(max_seconds * 250) * (f->nb_streams > 0 ? f->nb_streams : 1) + 1000;
    int code = 0;
    *seconds = 0;
    while ((code = av_read_frame(f, packet)) >= 0) {
        AVStream *s = packet->stream_index < (int)f->nb_streams ? f->streams[packet->stream_index] : NULL;
        int64_t at = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
        if (s != NULL && at != AV_NOPTS_VALUE && s->time_base.den > 0) {
            double from = at * av_q2d(s->time_base);
            double to = (at + (packet->duration > 0 ? packet->duration : 0)) * av_q2d(s->time_base);
            if (from < start) start = from;
            if (to > end) end = to;
            if (end - start > *seconds) *seconds = end - start;
        }
        av_packet_unref(packet);
        if (*seconds > max_seconds || ++packets > most) {
            if (*seconds <= max_seconds) *seconds = max_seconds + 1;  // more packets than that time holds
            break;
        }
    }
    av_packet_free(&packet);
    return code == AVERROR_EOF || code >= 0 ? 0 : code;
}

// The demuxer over the bytes, locked down: only the bytes given (no other file, protocol or
// reference), only the demuxers and decoders listed, FFmpeg's stream cap a few times the
// caller's, the deadline polled. NULL (error set) when out of memory.
static att_av *prepare(const uint8_t *data, size_t length, const att_av_limits *limits, const uint64_t *deadline,
                       att_error *error) {
    att_av *av = calloc(1, sizeof *av);
    if (av == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        return NULL;
    }
    av->data = data;
    av->length = length;
    av->reader = (att_io_reader){.data = &av->data, .length = &av->length};
    av->deadline = deadline;
    av->io = att_io_context(&av->reader, 0);
    av->format = avformat_alloc_context();
    if (av->io == NULL || av->format == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
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
    f->codec_whitelist = av_strdup(att_av_decoders);
    f->protocol_whitelist = av_strdup("none");
    // The caller's stream limit is checked on what was read (a typed refusal); FFmpeg's own cap,
    // a few times higher, stops a file of thousands of streams while it is read.
    int32_t max_streams = limits->max_streams;
    f->max_streams = max_streams > 0 && max_streams < 250 ? 4 * max_streams : 1000;
    f->probesize = limits->probe_bytes > 32 ? limits->probe_bytes : 32;
    f->max_analyze_duration = 5 * AV_TIME_BASE;
    return av;
}

// Opens the container; on failure says why (a cut box, a table over FFmpeg's cap, or the
// demuxer's refusal) and frees `av->format`'s remains.
static int open_container(att_av *av, const att_iso_layout *layout, att_error *error) {
    AVDictionary *options = NULL;
    // MP4/MOV: no external data references, no following of `dref` URLs.
    av_dict_set(&options, "enable_drefs", "0", 0);
    av_dict_set(&options, "use_absolute_path", "0", 0);
    int code = avformat_open_input(&av->format, NULL, NULL, &options);
    av_dict_free(&options);
    if (code >= 0) return 0;
    av->format = NULL;  // freed by avformat_open_input on failure
    if (layout->cut != NULL) {
        char what[96];
        snprintf(what, sizeof what, "the file ends inside its %s box (cut short)", layout->cut);
        att_av_set(error, ATT_ERR_TRUNCATED, what, 0);
    } else {
        // FFmpeg's allocations are capped (64 MiB each): a table that asks for more declares
        // more than a file of this size can hold.
        att_av_set(error, code == AVERROR(ENOMEM) ? ATT_ERR_CORRUPT : att_av_status(code),
                   code == AVERROR(ENOMEM)
                       ? "the container declares more than it holds (a table over 64 MiB, or too many "
                         "streams)"
                       : "the container cannot be read",
                   code == AVERROR(EPERM) ? 0 : code);  // -1: the demuxer's bare failure, no errno
    }
    return -1;
}

// The stream count, then (before a frame is decoded: finding the streams' parameters decodes
// some) what a video decoder would hold for frames of the size the header gives.
static int check_streams(AVFormatContext *f, const att_av_limits *limits, att_error *error) {
    if (limits->max_streams > 0 && (int32_t)f->nb_streams > limits->max_streams) {
        char what[96];
        snprintf(what, sizeof what, "%u streams, over the limit of %d", f->nb_streams, limits->max_streams);
        att_av_set(error, ATT_ERR_STREAMS, what, 0);
        return -1;
    }
    for (unsigned i = 0; limits->max_decoder_bytes > 0 && i < f->nb_streams; i++) {
        AVCodecParameters *p = f->streams[i]->codecpar;
        if (p->codec_type != AVMEDIA_TYPE_VIDEO || p->width <= 0 || p->height <= 0) continue;
        int64_t need = decoder_bytes(p);
        if (need > limits->max_decoder_bytes) {
            char what[160];
            snprintf(what, sizeof what,
                     "%dx%d %s frames need about %lld bytes in the decoder, over the cap of %lld bytes", p->width,
                     p->height, avcodec_get_name(p->codec_id), (long long)need, (long long)limits->max_decoder_bytes);
            att_av_set(error, ATT_ERR_MEMORY_LIMIT, what, 0);
            return -1;
        }
    }
    return 0;
}

// The streams' parameters. Decoders opened to find them run on this thread only, like every
// decoder here (FFmpeg's default is a frame thread per core, each with its own frames), and
// refuse frames over the pixel limit (a size the header did not give).
static int find_parameters(AVFormatContext *f, const att_av_limits *limits) {
    char pixels[24];
    snprintf(pixels, sizeof pixels, "%lld", (long long)(limits->max_pixels > 0 ? limits->max_pixels : INT32_MAX));
    AVDictionary **per_stream = f->nb_streams > 0 ? av_calloc(f->nb_streams, sizeof *per_stream) : NULL;
    for (unsigned i = 0; per_stream != NULL && i < f->nb_streams; i++) {
        av_dict_set(&per_stream[i], "threads", "1", 0);
        av_dict_set(&per_stream[i], "max_pixels", pixels, 0);
    }
    int code = avformat_find_stream_info(f, per_stream);
    for (unsigned i = 0; per_stream != NULL && i < f->nb_streams; i++) av_dict_free(&per_stream[i]);
    av_free(per_stream);
    return code;
}

// What the streams are: the first video's and audio's codec and size, and where the index says
// the packets end (which must be inside the bytes).
static void describe(AVFormatContext *f, att_av_info *info) {
    name(info->format, sizeof info->format, f->iformat ? f->iformat->name : NULL);
    info->streams = (int32_t)f->nb_streams;
    info->duration = f->duration > 0 ? (double)f->duration / AV_TIME_BASE : -1;
    info->indexed_end = -1;
    for (unsigned i = 0; i < f->nb_streams; i++) {
        AVStream *s = f->streams[i];
        AVCodecParameters *p = s->codecpar;
        if (p->codec_type == AVMEDIA_TYPE_VIDEO && !(s->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
            if (info->video_streams++ == 0) {
                info->decoder_bytes = decoder_bytes(p);
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
        int entries = avformat_index_get_entries_count(s);
        for (int e = 0; e < entries; e++) {
            const AVIndexEntry *entry = avformat_index_get_entry(s, e);
            if (entry && entry->pos >= 0 && entry->pos + entry->size > info->indexed_end) {
                info->indexed_end = entry->pos + entry->size;
            }
        }
    }
}

att_av *att_av_open(const uint8_t *data, size_t length, const att_av_limits *limits, const uint64_t *deadline,
                    att_av_info *info, att_error *error) {
    memset(info, 0, sizeof *info);
    info->demuxed_duration = -1;
    const char *load_error = att_ff_load();
    if (load_error != NULL) {
        att_set_error(error, ATT_ERR_UNSUPPORTED, "%s", load_error);
        return NULL;
    }
    att_av *av = prepare(data, length, limits, deadline, error);
    if (av == NULL) return NULL;
    // ISO media (MP4, MOV, M4A), one walk over the top-level boxes: one that runs past the end
    // means the file was cut; the tracks `moov` declares are counted before libavformat reads
    // them; and where the index sits against the media (faststart: moov first).
    att_iso_layout layout;
    att_iso_walk(data, length, &layout);
    info->index_first = layout.index_first;
    if (limits->max_streams > 0 && layout.tracks > limits->max_streams) {
        char what[96];
        snprintf(what, sizeof what, "%d tracks, over the limit of %d", layout.tracks, limits->max_streams);
        att_av_set(error, ATT_ERR_STREAMS, what, 0);
        att_av_close(av);
        return NULL;
    }
    if (open_container(av, &layout, error) < 0 || check_streams(av->format, limits, error) < 0) {
        att_av_close(av);
        return NULL;
    }
    AVFormatContext *f = av->format;
    int code = find_parameters(f, limits);
    if (code < 0) {
        att_av_set(error, att_av_status(code), "the streams cannot be read", code);
        att_av_close(av);
        return NULL;
    }
    if (limits->scan) {
        double seconds = 0;
        code = demux_seconds(f, limits->max_seconds, &seconds);
        if (code < 0) {
            att_av_set(error, att_av_status(code), "the packets cannot be read", code);
            att_av_close(av);
            return NULL;
        }
        info->demuxed_duration = seconds;
        if (seconds > limits->max_seconds) {
            char what[96];
            snprintf(what, sizeof what, "the packets run past %.0f s", limits->max_seconds);
            att_av_set(error, ATT_ERR_DURATION, what, 0);
            att_av_close(av);
            return NULL;
        }
    }
    describe(f, info);
    return av;
}

int32_t att_av_rotation(att_av *av) {
    int index = av_find_best_stream(av->format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (index < 0) return 0;
    const int32_t *matrix =
        (const int32_t *)av_stream_get_side_data(av->format->streams[index], AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (matrix == NULL) return 0;
    double degrees = -av_display_rotation_get(matrix);  // FFmpeg's angle is counter-clockwise
    if (degrees != degrees) return 0;
    int turn = (int)((degrees < 0 ? degrees - 45 : degrees + 45) / 90);
    return ((turn % 4) + 4) % 4 * 90;
}

void att_av_close(att_av *av) {
    if (!av) return;
    if (av->format) avformat_close_input(&av->format);
    att_io_context_free(&av->io);
    free(av);
}

void att_av_free(void *pointer) { free(pointer); }
