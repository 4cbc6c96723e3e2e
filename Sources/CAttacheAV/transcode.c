// Transcodes: what an iPhone cannot play, or what is over Apple's caps, decoded on this thread
// (each decoder's frames counted against the job's budget) and re-encoded by the writer
// (encode.c) to H.264/AAC MP4 or AAC M4A, the deadline polled between packets.
#include "ff.h"

#include <string.h>

static AVCodecContext *open_decoder(AVStream *stream, const AVCodec *codec, att_av_budget *budget, int *code) {
    AVCodecContext *c = avcodec_alloc_context3(codec);
    if (c == NULL) {
        *code = AVERROR(ENOMEM);
        return NULL;
    }
    avcodec_parameters_to_context(c, stream->codecpar);
    c->thread_count = 1;
    c->codec_whitelist = av_strdup(att_av_decoders);
    c->pkt_timebase = stream->time_base;
    att_av_budget_attach(c, budget);
    if ((*code = avcodec_open2(c, codec, NULL)) < 0) avcodec_free_context(&c);
    return c;
}

// The streams a transcode reads: the best video (when the output has a size) and the best
// audio beside it (when it has a bit rate).
typedef struct {
    int video, audio;
    const AVCodec *video_codec, *audio_codec;
} streams;

// Picks the streams and takes into `o` what the output keeps of the source's video: its time
// base, frame rate, colour tags and display matrix. ATT_OK, or the refusal (error set).
static int32_t pick(AVFormatContext *f, att_av_output *o, streams *s, att_error *error) {
    *s = (streams){.video = -1, .audio = -1};
    s->video = o->width > 0 ? av_find_best_stream(f, AVMEDIA_TYPE_VIDEO, -1, -1, &s->video_codec, 0) : -1;
    if (o->width > 0 && (s->video < 0 || s->video_codec == NULL)) {
        att_av_set(error, ATT_ERR_UNSUPPORTED, "no video stream with a decoder here", 0);
        return ATT_ERR_UNSUPPORTED;
    }
    s->audio =
        o->audio_bit_rate > 0 ? av_find_best_stream(f, AVMEDIA_TYPE_AUDIO, -1, s->video, &s->audio_codec, 0) : -1;
    if (s->audio < 0 || s->audio_codec == NULL) {
        s->audio = -1;
        o->audio_bit_rate = 0;
    }
    if (s->video < 0 && s->audio < 0) {
        att_av_set(error, ATT_ERR_UNSUPPORTED, "no stream to encode", 0);
        return ATT_ERR_UNSUPPORTED;
    }
    if (s->video < 0) return ATT_OK;
    AVStream *vs = f->streams[s->video];
    o->time_base_num = vs->time_base.num;
    o->time_base_den = vs->time_base.den;
    AVRational rate = vs->avg_frame_rate.num > 0 ? vs->avg_frame_rate : vs->r_frame_rate;
    if (rate.num > 0 && rate.den > 0) o->frame_rate = av_q2d(rate);
    // The source's colours are kept as they were tagged.
    o->color_primaries = vs->codecpar->color_primaries != AVCOL_PRI_UNSPECIFIED ? vs->codecpar->color_primaries : 0;
    o->color_trc = vs->codecpar->color_trc != AVCOL_TRC_UNSPECIFIED ? vs->codecpar->color_trc : 0;
    o->colorspace = vs->codecpar->color_space != AVCOL_SPC_UNSPECIFIED ? vs->codecpar->color_space : 0;
    const int32_t *matrix = (const int32_t *)av_stream_get_side_data(vs, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (matrix) {
        memcpy(o->display_matrix, matrix, sizeof o->display_matrix);
        o->has_matrix = 1;
    }
    return ATT_OK;
}

// The job of one transcode: the source, its decoders and the writer.
typedef struct {
    att_av *av;
    const att_av_output *output;
    const streams *streams;
    AVCodecContext *video, *audio;
    att_av_writer *writer;
    att_av_budget *budget;
    AVPacket *packet;
    AVFrame *frame;
    int64_t video_start;
    int64_t decoded;
} job;

// Every frame `decoder` has ready, handed to the writer (a damaged one skipped, as players do).
static int drain(job *j, AVCodecContext *decoder) {
    int code = 0;
    while (code >= 0) {
        code = avcodec_receive_frame(decoder, j->frame);
        if (code == AVERROR(EAGAIN) || code == AVERROR_EOF) return 0;
        if (code == AVERROR_INVALIDDATA) {
            code = 0;
            continue;
        }
        if (code < 0) break;
        AVFrame *frame = j->frame;
        if (decoder == j->video) {
            if (++j->decoded > j->output->max_frames && j->output->max_frames > 0) return AVERROR(E2BIG);
            int64_t pts = frame->best_effort_timestamp;
            if (pts != AV_NOPTS_VALUE) pts -= j->video_start;
            code = att_av_writer_picture(j->writer, (const uint8_t *const *)frame->data, frame->linesize, frame->width,
                                         frame->height, frame->format, 0, pts, frame->pkt_duration);
        } else {
            code = att_av_writer_samples(j->writer, frame);
        }
        av_frame_unref(frame);
    }
    return code;
}

// Packets to the decoders and their frames to the writer, until the end (the decoders then
// drained), the deadline, the budget, a limit or an error.
static int run(job *j) {
    int code = 0;
    int draining = 0;
    while (!draining && !att_av_budget_exceeded(j->budget)) {
        if (att_deadline_passed(j->av->deadline)) return AVERROR_EXIT;
        code = av_read_frame(j->av->format, j->packet);
        if (code == AVERROR_EXIT) return code;
        draining = code < 0;
        code = 0;
        for (int pass = 0; pass < 2 && code >= 0; pass++) {
            AVCodecContext *d = pass == 0 ? j->video : j->audio;
            int index = pass == 0 ? j->streams->video : j->streams->audio;
            if (d == NULL || (!draining && j->packet->stream_index != index)) continue;
            code = avcodec_send_packet(d, draining ? NULL : j->packet);
            // A damaged packet is skipped, as players do; the stream goes on.
            if (code == AVERROR_INVALIDDATA) code = 0;
            if (code >= 0) code = drain(j, d);
        }
        av_packet_unref(j->packet);
        if (code < 0) return code;
    }
    return code;
}

int32_t att_av_transcode(att_av *av, const att_av_output *given, uint8_t **bytes, size_t *length, att_error *error) {
    *bytes = NULL;
    *length = 0;
    att_av_output o = *given;
    streams s;
    int32_t result = pick(av->format, &o, &s, error);
    if (result != ATT_OK) return result;
    AVStream *vs = s.video >= 0 ? av->format->streams[s.video] : NULL;
    AVStream *as = s.audio >= 0 ? av->format->streams[s.audio] : NULL;
    job j = {
        .av = av,
        .output = &o,
        .streams = &s,
        .packet = av_packet_alloc(),
        .frame = av_frame_alloc(),
        .budget = att_av_budget_new(o.max_decoder_bytes),
        .video_start = vs && vs->start_time != AV_NOPTS_VALUE ? vs->start_time : 0,
    };
    int code = 0;
    if (j.packet == NULL || j.frame == NULL || j.budget == NULL) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "out of memory", 0);
        result = ATT_ERR_MEMORY_LIMIT;
    } else if (vs != NULL && (j.video = open_decoder(vs, s.video_codec, j.budget, &code)) == NULL) {
        att_av_set(error, att_av_status(code), "the video decoder cannot start", code);
        result = att_av_status(code);
    } else if (as != NULL && (j.audio = open_decoder(as, s.audio_codec, j.budget, &code)) == NULL) {
        att_av_set(error, att_av_status(code), "the audio decoder cannot start", code);
        result = att_av_status(code);
    } else if ((j.writer = att_av_writer_open(&o, av->deadline, error)) == NULL) {
        result = error ? error->status : ATT_ERR_INTERNAL;
    } else if ((code = run(&j)), att_av_budget_exceeded(j.budget)) {
        att_av_set_memory(error, o.max_decoder_bytes);
        result = ATT_ERR_MEMORY_LIMIT;
    } else if (code == AVERROR(E2BIG)) {
        att_av_set(error, ATT_ERR_MEMORY_LIMIT, "more frames than the limit allows", 0);
        result = ATT_ERR_MEMORY_LIMIT;
    } else if (code < 0) {
        result = att_av_writer_failed(j.writer, error, "the media cannot be transcoded", code);
    } else {
        result = att_av_writer_finish(j.writer, bytes, length, error);
    }
    att_av_writer_close(j.writer);
    avcodec_free_context(&j.video);
    avcodec_free_context(&j.audio);
    av_frame_free(&j.frame);
    av_packet_free(&j.packet);
    att_av_budget_release(j.budget);
    return result;
}
