// A video's poster: the frame shown at a time (the first at or past it, or the last one when the
// time is past the end), decoded from the keyframe before it on this thread under the job's
// decoder budget and frame cap, then scaled once by swscale to RGB inside `max_side`.
#include "ff.h"

#include <stdlib.h>

// The decoding of one poster: the stream, its decoder, and the frames it keeps.
typedef struct {
    att_av *av;
    int index;
    AVCodecContext *decoder;
    AVPacket *packet;
    AVFrame *frame;
    AVFrame *last;
    att_av_budget *budget;
    int64_t target;
    int32_t max_frames;
} poster;

// Decodes until the frame at or past the target (in `p->frame`), the frame cap, the end or the
// budget; 1 when a frame is found, 0 when not, -1 when the deadline passed.
static int find_frame(poster *p) {
    AVFormatContext *f = p->av->format;
    int decoded = 0;
    while (decoded < p->max_frames) {
        if (att_deadline_passed(p->av->deadline)) return -1;
        if (att_av_budget_exceeded(p->budget)) return 0;
        int code = av_read_frame(f, p->packet);
        int draining = code < 0;
        if (!draining && p->packet->stream_index != p->index) {
            av_packet_unref(p->packet);
            continue;
        }
        // A frame that ends before the asked time and that no other frame refers to is never
        // shown nor needed: the decoder skips it (a B-frame between the keyframe and the time).
        if (!draining) {
            AVPacket *k = p->packet;
            int early = k->pts != AV_NOPTS_VALUE && k->pts + (k->duration > 0 ? k->duration : 1) <= p->target;
            p->decoder->skip_frame = early ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
        }
        code = avcodec_send_packet(p->decoder, draining ? NULL : p->packet);
        av_packet_unref(p->packet);
        while (code >= 0 || code == AVERROR(EAGAIN)) {
            code = avcodec_receive_frame(p->decoder, p->frame);
            if (code < 0) break;
            decoded++;
            int64_t pts = p->frame->best_effort_timestamp;
            // The first frame at or past the asked time, or the last one the budget allows.
            if (pts == AV_NOPTS_VALUE || pts >= p->target || decoded >= p->max_frames) return 1;
            av_frame_unref(p->last);
            av_frame_move_ref(p->last, p->frame);
        }
        if (draining) return 0;
    }
    return 0;
}

// The frame scaled to RGB at its shown size (the stored size stretched by the sample aspect
// ratio, then fit inside `max_side`), straight from the decoder's planes.
static int32_t scale(const AVFrame *frame, const AVStream *stream, int32_t max_side, int64_t max_pixels, uint8_t **rgb,
                     int32_t *width, int32_t *height, att_error *error) {
    if (frame->width <= 0 || frame->height <= 0 || (int64_t)frame->width * frame->height > max_pixels) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "a decoded frame is over the pixel limit", 0);
        return ATT_ERR_MEMORY_LIMIT;
    }
    double shown_width = frame->width;
    AVRational sar = frame->sample_aspect_ratio.num > 0 ? frame->sample_aspect_ratio : stream->sample_aspect_ratio;
    if (sar.num > 0 && sar.den > 0 && sar.num != sar.den) shown_width = shown_width * sar.num / sar.den;
    double factor = 1;
    double longest = shown_width > frame->height ? shown_width : frame->height;
    if (max_side > 0 && longest > max_side) factor = max_side / longest;
    int out_width = (int)(shown_width * factor + 0.5), out_height = (int)(frame->height * factor + 0.5);
    if (out_width < 1) out_width = 1;
    if (out_height < 1) out_height = 1;
    if ((int64_t)out_width * out_height > max_pixels) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "the poster is over the pixel limit", 0);
        return ATT_ERR_MEMORY_LIMIT;
    }
    struct SwsContext *scaler =
        sws_getContext(frame->width, frame->height, frame->format, out_width, out_height, AV_PIX_FMT_RGB24,
                       SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
    uint8_t *out = malloc((size_t)out_width * out_height * 3);
    if (scaler == NULL || out == NULL) {
        sws_freeContext(scaler);
        free(out);
        att_av_set(error, ATT_ERR_UNSUPPORTED, "the frame's pixel format cannot be converted", 0);
        return ATT_ERR_UNSUPPORTED;
    }
    uint8_t *planes[4] = {out, NULL, NULL, NULL};
    int strides[4] = {out_width * 3, 0, 0, 0};
    sws_scale(scaler, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    sws_freeContext(scaler);
    *rgb = out;
    *width = out_width;
    *height = out_height;
    return ATT_OK;
}

// Opens the stream's decoder on this thread (the pipeline's workers are the threads), its
// frames counted against the budget.
static int open_decoder(poster *p, const AVCodec *codec, const AVStream *stream) {
    avcodec_parameters_to_context(p->decoder, stream->codecpar);
    p->decoder->thread_count = 1;
    p->decoder->codec_whitelist = av_strdup(att_av_decoders);
    att_av_budget_attach(p->decoder, p->budget);
    return avcodec_open2(p->decoder, codec, NULL);
}

int32_t att_av_poster(att_av *av, double seconds, int32_t max_frames, int64_t max_pixels, int64_t max_decoder_bytes,
                      int32_t max_side, uint8_t **rgb, int32_t *width, int32_t *height, double *shown,
                      att_error *error) {
    *rgb = NULL;
    AVFormatContext *f = av->format;
    const AVCodec *codec = NULL;
    int index = av_find_best_stream(f, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (index < 0 || codec == NULL) {
        att_av_set(error, ATT_ERR_UNSUPPORTED, "no video stream with a decoder here", index < 0 ? index : 0);
        return ATT_ERR_UNSUPPORTED;
    }
    AVStream *stream = f->streams[index];
    if ((int64_t)stream->codecpar->width * stream->codecpar->height > max_pixels) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "the video's frames are over the pixel limit", 0);
        return ATT_ERR_MEMORY_LIMIT;
    }
    poster p = {
        .av = av,
        .index = index,
        .decoder = avcodec_alloc_context3(codec),
        .packet = av_packet_alloc(),
        .frame = av_frame_alloc(),
        .last = av_frame_alloc(),
        .budget = att_av_budget_new(max_decoder_bytes),
        .target = (int64_t)(seconds / av_q2d(stream->time_base)),
        .max_frames = max_frames,
    };
    if (stream->start_time != AV_NOPTS_VALUE) p.target += stream->start_time;
    int32_t result = ATT_OK;
    int code = 0, found = 0;
    if (p.decoder == NULL || p.packet == NULL || p.frame == NULL || p.last == NULL || p.budget == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        result = ATT_ERR_MEMORY_LIMIT;
    } else if ((code = open_decoder(&p, codec, stream)) < 0) {
        att_av_set(error, att_av_status(code), "the video decoder cannot start", code);
        result = att_av_status(code);
    } else {
        // From the keyframe at or before the time; frames before the time are decoded, not kept.
        if (seconds > 0) av_seek_frame(f, index, p.target, AVSEEK_FLAG_BACKWARD);
        found = find_frame(&p);
        // The asked time is past the last frame: the last frame decoded is the poster.
        if (found == 0 && !att_av_budget_exceeded(p.budget) && p.last->width > 0) {
            av_frame_move_ref(p.frame, p.last);
            found = 1;
        }
        if (found < 0) {
            att_av_set(error, ATT_ERR_TIMEOUT, "the poster's deadline passed", 0);
            result = ATT_ERR_TIMEOUT;
        } else if (att_av_budget_exceeded(p.budget)) {
            att_av_set_memory(error, max_decoder_bytes);
            result = ATT_ERR_MEMORY_LIMIT;
        } else if (!found) {
            att_av_set(error, ATT_ERR_CORRUPT, "no frame could be decoded", 0);
            result = ATT_ERR_CORRUPT;
        } else if ((result = scale(p.frame, stream, max_side, max_pixels, rgb, width, height, error)) == ATT_OK) {
            int64_t pts = p.frame->best_effort_timestamp;
            if (pts != AV_NOPTS_VALUE && stream->start_time != AV_NOPTS_VALUE) pts -= stream->start_time;
            *shown = pts == AV_NOPTS_VALUE ? 0 : (double)pts * av_q2d(stream->time_base);
        }
    }
    av_frame_free(&p.frame);
    av_frame_free(&p.last);
    av_packet_free(&p.packet);
    avcodec_free_context(&p.decoder);
    att_av_budget_release(p.budget);
    return result;
}
