// MP4 (H.264 + AAC, faststart) and M4A (AAC) written into memory with libavcodec and
// libavformat: GIF animations made video, and transcodes of what an iPhone cannot play or what
// is over Apple's caps. One thread (libx264's and the decoders' own pools off), the deadline
// polled between frames and by libavformat, the output capped in bytes, nothing written but
// the memory buffer handed back.
#include "ff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The muxer's only other open: faststart reading back what it wrote (the output buffer, read
// through its fields: it may grow while it is read). Anything else is refused.
static int open_own_output(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                           AVDictionary **options) {
    (void)url, (void)options;
    if ((flags & AVIO_FLAG_WRITE) || s->pb == NULL) return AVERROR(EPERM);
    att_io_buffer *target = s->pb->opaque;
    att_io_reader *r = calloc(1, sizeof *r);
    if (r == NULL) return AVERROR(ENOMEM);
    *r = (att_io_reader){.data = (const uint8_t *const *)&target->data, .length = &target->size};
    AVIOContext *io = att_io_context(r, 0);
    if (io == NULL) {
        free(r);
        return AVERROR(ENOMEM);
    }
    *pb = io;
    return 0;
}

static int close_own_output(struct AVFormatContext *s, AVIOContext *pb) {
    (void)s;
    if (pb == NULL) return 0;
    free(pb->opaque);
    att_io_context_free(&pb);
    return 0;
}

// The duration of each frame sent to libx264, found again by timestamp when its packet comes
// out (libx264 keeps a few frames and reorders them; the last frame's duration is the file's end).
enum { DURATIONS = 512 };

struct att_av_writer {
    att_av_output output;
    const uint64_t *deadline;
    att_io_buffer out;
    AVIOContext *io;
    AVFormatContext *mux;
    AVCodecContext *video;
    AVCodecContext *audio;
    AVStream *video_stream;
    AVStream *audio_stream;
    AVPacket *packet;
    AVFrame *picture;
    struct SwsContext *scaler;
    int scaler_width, scaler_height, scaler_format;
    int64_t last_pts;
    int64_t frames;
    struct {
        int64_t pts, duration;
    } durations[DURATIONS];
    int next_duration;
    SwrContext *resampler;
    AVAudioFifo *fifo;
    AVFrame *samples;
    int64_t audio_pts;
    int header_written;
};

int32_t att_av_can_encode(void) {
#ifdef ATT_AV_NO_X264
    return 0;
#endif
    if (att_ff_load() != NULL) return 0;
    return avcodec_find_encoder_by_name("libx264") != NULL && avcodec_find_encoder_by_name("aac") != NULL;
}

int att_av_writer_failed(att_av_writer *w, att_error *error, const char *what, int code) {
    if (w->out.over) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "the encoded file is over its byte cap", 0);
        return ATT_ERR_MEMORY_LIMIT;
    }
    if (code == AVERROR_EXIT || att_deadline_passed(w->deadline)) {
        att_av_set(error, ATT_ERR_TIMEOUT, "the encode's deadline passed", 0);
        return ATT_ERR_TIMEOUT;
    }
    int32_t status = att_av_status(code);
    if (status == ATT_ERR_TRUNCATED || status == ATT_ERR_CORRUPT) status = ATT_ERR_INTERNAL;
    att_av_set(error, status, what, code);
    return status;
}

static int interrupted(void *opaque) { return att_deadline_passed(((att_av_writer *)opaque)->deadline); }

// The H.264 encoder (libx264, High profile, one thread, the source's colour tags and display
// matrix kept) and its stream. -1 (error set) when it cannot start.
static int open_video(att_av_writer *w, const AVCodec *h264, att_error *error) {
    const att_av_output *o = &w->output;
    AVCodecContext *c = w->video = avcodec_alloc_context3(h264);
    w->video_stream = avformat_new_stream(w->mux, NULL);
    w->picture = av_frame_alloc();
    if (c == NULL || w->video_stream == NULL || w->picture == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        return -1;
    }
    c->width = o->width;
    c->height = o->height;
    c->pix_fmt = AV_PIX_FMT_YUV420P;
    c->time_base = (AVRational){o->time_base_num, o->time_base_den};
    if (o->frame_rate > 0) c->framerate = (AVRational){(int)(o->frame_rate * 1000 + 0.5), 1000};
    c->sample_aspect_ratio = (AVRational){1, 1};
    c->thread_count = 1;
    c->color_range = AVCOL_RANGE_MPEG;
    if (o->color_primaries > 0) c->color_primaries = o->color_primaries;
    if (o->color_trc > 0) c->color_trc = o->color_trc;
    if (o->colorspace > 0) c->colorspace = o->colorspace;
    if (o->bit_rate > 0) c->bit_rate = o->bit_rate;
    if (o->max_rate > 0) {
        c->rc_max_rate = o->max_rate;
        c->rc_buffer_size = (int)(o->max_rate * 2 > INT32_MAX ? INT32_MAX : o->max_rate * 2);
    }
    if (w->mux->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    av_opt_set(c->priv_data, "preset", o->preset[0] ? o->preset : "veryfast", 0);
    av_opt_set(c->priv_data, "profile", "high", 0);
    if (o->bit_rate <= 0) av_opt_set_int(c->priv_data, "crf", o->crf > 0 ? o->crf : 23, 0);
    if (o->no_b_frames) c->max_b_frames = 0;
    w->picture->format = AV_PIX_FMT_YUV420P;
    w->picture->width = o->width;
    w->picture->height = o->height;
    int code = av_frame_get_buffer(w->picture, 0);
    if (code >= 0) code = avcodec_open2(c, h264, NULL);
    if (code >= 0) code = avcodec_parameters_from_context(w->video_stream->codecpar, c);
    if (code < 0) {
        att_av_writer_failed(w, error, "the H.264 encoder cannot start", code);
        return -1;
    }
    w->video_stream->time_base = c->time_base;
    if (o->has_matrix) {
        uint8_t *matrix = av_stream_new_side_data(w->video_stream, AV_PKT_DATA_DISPLAYMATRIX, sizeof o->display_matrix);
        if (matrix) memcpy(matrix, o->display_matrix, sizeof o->display_matrix);
    }
    return 0;
}

// The AAC encoder (float planar, mono or stereo, one thread), its FIFO of samples and its
// stream. -1 (error set) when it cannot start.
static int open_audio(att_av_writer *w, const AVCodec *aac, att_error *error) {
    const att_av_output *o = &w->output;
    AVCodecContext *c = w->audio = avcodec_alloc_context3(aac);
    w->audio_stream = avformat_new_stream(w->mux, NULL);
    w->samples = av_frame_alloc();
    if (c == NULL || w->audio_stream == NULL || w->samples == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        return -1;
    }
    c->sample_fmt = AV_SAMPLE_FMT_FLTP;
    c->sample_rate = o->sample_rate > 0 ? o->sample_rate : 44100;
    av_channel_layout_default(&c->ch_layout, o->channels == 1 ? 1 : 2);
    c->bit_rate = o->audio_bit_rate;
    c->time_base = (AVRational){1, c->sample_rate};
    c->thread_count = 1;
    if (w->mux->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int code = avcodec_open2(c, aac, NULL);
    if (code >= 0) code = avcodec_parameters_from_context(w->audio_stream->codecpar, c);
    w->fifo = code >= 0 ? av_audio_fifo_alloc(c->sample_fmt, c->ch_layout.nb_channels, c->frame_size * 4) : NULL;
    if (code < 0 || w->fifo == NULL) {
        att_av_writer_failed(w, error, "the AAC encoder cannot start", code < 0 ? code : AVERROR(ENOMEM));
        return -1;
    }
    w->audio_stream->time_base = c->time_base;
    return 0;
}

att_av_writer *att_av_writer_open(const att_av_output *o, const uint64_t *deadline, att_error *error) {
    const char *load_error = att_ff_load();
    if (load_error != NULL) {
        att_av_set(error, ATT_ERR_UNSUPPORTED, load_error, 0);
        return NULL;
    }
    att_av_writer *w = calloc(1, sizeof *w);
    if (w == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        return NULL;
    }
    w->output = *o;
    w->deadline = deadline;
    w->out.max = o->max_bytes > 0 ? o->max_bytes : (int64_t)1 << 30;
    w->last_pts = INT64_MIN;
    const int video = o->width > 0 && o->height > 0;
    const int audio = o->audio_bit_rate > 0;
#ifdef ATT_AV_NO_X264
    const AVCodec *h264 = NULL;  // built without H.264 encoding
#else
    const AVCodec *h264 = video ? avcodec_find_encoder_by_name("libx264") : NULL;
#endif
    const AVCodec *aac = audio ? avcodec_find_encoder_by_name("aac") : NULL;
    if ((video && h264 == NULL) || (audio && aac == NULL) || (!video && !audio)) {
        att_av_set(error, ATT_ERR_UNSUPPORTED,
                   video && h264 == NULL ? "this FFmpeg has no libx264 (H.264 encoding)" : "nothing to encode", 0);
        free(w);
        return NULL;
    }
    int code = avformat_alloc_output_context2(&w->mux, NULL, video ? "mp4" : "ipod", NULL);
    w->io = code >= 0 ? att_io_context(&w->out, 1) : NULL;
    w->packet = av_packet_alloc();
    if (w->mux == NULL || w->io == NULL || w->packet == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", code);
        att_av_writer_close(w);
        return NULL;
    }
    w->mux->pb = w->io;
    w->mux->flags |= AVFMT_FLAG_CUSTOM_IO;
    w->mux->io_open = open_own_output;
    w->mux->io_close2 = close_own_output;
    w->mux->interrupt_callback.callback = interrupted;
    w->mux->interrupt_callback.opaque = w;
    if ((video && open_video(w, h264, error) < 0) || (audio && open_audio(w, aac, error) < 0)) {
        att_av_writer_close(w);
        return NULL;
    }
    AVDictionary *options = NULL;
    // The index first (the device plays while it downloads), by a second pass in memory.
    av_dict_set(&options, "movflags", "+faststart", 0);
    code = avformat_write_header(w->mux, &options);
    av_dict_free(&options);
    if (code < 0) {
        att_av_writer_failed(w, error, "the MP4 header cannot be written", code);
        att_av_writer_close(w);
        return NULL;
    }
    w->header_written = 1;
    return w;
}

static int64_t duration_of(att_av_writer *w, int64_t pts) {
    for (int i = 0; i < DURATIONS; i++) {
        if (w->durations[i].pts == pts && w->durations[i].duration > 0) return w->durations[i].duration;
    }
    return 0;
}

// Sends a frame (NULL: flush) and writes the packets that come out.
static int encode(att_av_writer *w, AVCodecContext *c, AVStream *stream, AVFrame *frame) {
    int code = avcodec_send_frame(c, frame);
    while (code >= 0) {
        code = avcodec_receive_packet(c, w->packet);
        if (code == AVERROR(EAGAIN) || code == AVERROR_EOF) return 0;
        if (code < 0) return code;
        if (c == w->video) w->packet->duration = duration_of(w, w->packet->pts);
        av_packet_rescale_ts(w->packet, c->time_base, stream->time_base);
        w->packet->stream_index = stream->index;
        code = av_interleaved_write_frame(w->mux, w->packet);
    }
    return code;
}

// A picture (any pixel format swscale reads) scaled into the encoder's frame and sent.
int att_av_writer_picture(att_av_writer *w, const uint8_t *const planes[4], const int strides[4], int width, int height,
                          int format, int from_rgb, int64_t pts, int64_t duration) {
    if (att_deadline_passed(w->deadline)) return AVERROR_EXIT;
    if (w->scaler == NULL || w->scaler_width != width || w->scaler_height != height || w->scaler_format != format) {
        sws_freeContext(w->scaler);
        w->scaler = sws_getContext(width, height, format, w->output.width, w->output.height, AV_PIX_FMT_YUV420P,
                                   SWS_BICUBIC, NULL, NULL, NULL);
        if (w->scaler == NULL) return AVERROR(EINVAL);
        (w->scaler_width = width, w->scaler_height = height, w->scaler_format = format);
        if (from_rgb) {
            // sRGB pixels into BT.709 limited-range YUV, and the stream says so.
            const int *bt709 = sws_getCoefficients(SWS_CS_ITU709);
            sws_setColorspaceDetails(w->scaler, bt709, 1, bt709, 0, 0, 1 << 16, 1 << 16);
        }
    }
    int code = av_frame_make_writable(w->picture);
    if (code < 0) return code;
    sws_scale(w->scaler, planes, strides, 0, height, w->picture->data, w->picture->linesize);
    // Timestamps strictly rising, as libx264 needs.
    if (pts == AV_NOPTS_VALUE) pts = w->last_pts == INT64_MIN ? 0 : w->last_pts + (duration > 0 ? duration : 1);
    if (w->last_pts != INT64_MIN && pts <= w->last_pts) pts = w->last_pts + 1;
    w->last_pts = pts;
    w->picture->pts = pts;
    w->durations[w->next_duration].pts = pts;
    w->durations[w->next_duration].duration = duration;
    w->next_duration = (w->next_duration + 1) % DURATIONS;
    w->frames++;
    return encode(w, w->video, w->video_stream, w->picture);
}

int32_t att_av_writer_rgba(att_av_writer *w, const uint8_t *rgba, int32_t width, int32_t height, int32_t stride,
                           int64_t pts, int64_t duration, att_error *error) {
    if (w->video == NULL) {
        att_av_set(error, ATT_ERR_INTERNAL, "this writer has no video", 0);
        return ATT_ERR_INTERNAL;
    }
    const uint8_t *planes[4] = {rgba, NULL, NULL, NULL};
    int strides[4] = {stride, 0, 0, 0};
    int code = att_av_writer_picture(w, planes, strides, width, height, AV_PIX_FMT_RGBA, 1, pts, duration);
    return code < 0 ? att_av_writer_failed(w, error, "a frame cannot be encoded", code) : ATT_OK;
}

// Decoded samples converted to the encoder's format and sent in its frame size (NULL: flush).
int att_av_writer_samples(att_av_writer *w, const AVFrame *decoded) {
    AVCodecContext *c = w->audio;
    int code;
    if (decoded != NULL && w->resampler == NULL) {
        code =
            swr_alloc_set_opts2(&w->resampler, &c->ch_layout, c->sample_fmt, c->sample_rate,
                                (AVChannelLayout *)&decoded->ch_layout, decoded->format, decoded->sample_rate, 0, NULL);
        if (code < 0) return code;
        if ((code = swr_init(w->resampler)) < 0) return code;
    }
    if (w->resampler != NULL) {
        int room = (decoded ? (int)((int64_t)decoded->nb_samples * c->sample_rate /
                                    (decoded->sample_rate > 0 ? decoded->sample_rate : 1))
                            : 0) +
                   4096;
        AVFrame *converted = av_frame_alloc();
        if (converted == NULL) return AVERROR(ENOMEM);
        converted->format = c->sample_fmt;
        converted->nb_samples = room;
        av_channel_layout_copy(&converted->ch_layout, &c->ch_layout);
        code = av_frame_get_buffer(converted, 0);
        if (code >= 0) {
            code = swr_convert(w->resampler, converted->data, room,
                               decoded ? (const uint8_t **)decoded->extended_data : NULL,
                               decoded ? decoded->nb_samples : 0);
            if (code > 0) code = av_audio_fifo_write(w->fifo, (void **)converted->data, code);
        }
        av_frame_free(&converted);
        if (code < 0) return code;
    }
    int size = c->frame_size > 0 ? c->frame_size : 1024;
    while (av_audio_fifo_size(w->fifo) >= size || (decoded == NULL && av_audio_fifo_size(w->fifo) > 0)) {
        int n = av_audio_fifo_size(w->fifo) < size ? av_audio_fifo_size(w->fifo) : size;
        av_frame_unref(w->samples);
        w->samples->format = c->sample_fmt;
        w->samples->nb_samples = n;
        w->samples->sample_rate = c->sample_rate;
        av_channel_layout_copy(&w->samples->ch_layout, &c->ch_layout);
        if ((code = av_frame_get_buffer(w->samples, 0)) < 0) return code;
        if (av_audio_fifo_read(w->fifo, (void **)w->samples->data, n) < n) return AVERROR(EINVAL);
        w->samples->pts = w->audio_pts;
        w->audio_pts += n;
        if ((code = encode(w, c, w->audio_stream, w->samples)) < 0) return code;
    }
    return 0;
}

int32_t att_av_writer_finish(att_av_writer *w, uint8_t **bytes, size_t *length, att_error *error) {
    *bytes = NULL;
    *length = 0;
    int code = 0;
    if (w->video != NULL && w->frames == 0) {
        att_av_set(error, ATT_ERR_CORRUPT, "no frame was decoded", 0);
        return ATT_ERR_CORRUPT;
    }
    if (w->video != NULL) code = encode(w, w->video, w->video_stream, NULL);
    if (code >= 0 && w->audio != NULL) {
        code = att_av_writer_samples(w, NULL);
        if (code >= 0) code = encode(w, w->audio, w->audio_stream, NULL);
    }
    if (code >= 0) code = av_write_trailer(w->mux);
    w->header_written = 0;
    if (code >= 0 && w->io->error < 0) code = w->io->error;
    if (code < 0) return att_av_writer_failed(w, error, "the file cannot be finished", code);
    avio_flush(w->io);
    *bytes = w->out.data;
    *length = w->out.size;
    w->out.data = NULL;
    return ATT_OK;
}

void att_av_writer_close(att_av_writer *w) {
    if (w == NULL) return;
    avcodec_free_context(&w->video);
    avcodec_free_context(&w->audio);
    if (w->mux) {
        avformat_free_context(w->mux);
        w->mux = NULL;
    }
    att_io_context_free(&w->io);
    av_packet_free(&w->packet);
    av_frame_free(&w->picture);
    av_frame_free(&w->samples);
    sws_freeContext(w->scaler);
    swr_free(&w->resampler);
    if (w->fifo) av_audio_fifo_free(w->fifo);
    free(w->out.data);
    free(w);
}
