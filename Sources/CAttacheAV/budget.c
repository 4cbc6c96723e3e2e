// A per-job cap on decoded frames: the decoder's frame buffers come from FFmpeg's own pools
// (avcodec_default_get_buffer2), each wrapped in a reference that counts its bytes while the
// frame is alive. A hostile stream that asks for more reference frames than its size needs
// (or frames larger than its header said) is refused at the cap, not allocated.
#include "ff.h"

#include <stdlib.h>

struct att_av_budget {
    int64_t used;
    int64_t cap;
    int exceeded;
    int holds;  // the job's, plus one per live frame buffer
};

typedef struct {
    att_av_budget *budget;
    AVBufferRef *inner;
    int64_t size;
} held;

att_av_budget *att_av_budget_new(int64_t cap) {
    att_av_budget *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->cap = cap > 0 ? cap : INT64_MAX;
    b->holds = 1;
    return b;
}

void att_av_budget_release(att_av_budget *b) {
    if (b != NULL && __atomic_sub_fetch(&b->holds, 1, __ATOMIC_ACQ_REL) == 0) free(b);
}

int att_av_budget_exceeded(const att_av_budget *b) {
    return b != NULL && __atomic_load_n(&b->exceeded, __ATOMIC_RELAXED);
}

static void held_free(void *opaque, uint8_t *data) {
    (void)data;
    held *h = opaque;
    __atomic_sub_fetch(&h->budget->used, h->size, __ATOMIC_RELAXED);
    av_buffer_unref(&h->inner);
    att_av_budget_release(h->budget);
    free(h);
}

// Replaces `*slot` by a counted reference to the same bytes; 0, or -1 when over the cap.
static int wrap(att_av_budget *b, AVBufferRef **slot) {
    AVBufferRef *inner = *slot;
    int64_t size = (int64_t)inner->size;
    int64_t used = __atomic_add_fetch(&b->used, size, __ATOMIC_RELAXED);
    if (used > b->cap) {
        __atomic_sub_fetch(&b->used, size, __ATOMIC_RELAXED);
        __atomic_store_n(&b->exceeded, 1, __ATOMIC_RELAXED);
        return -1;
    }
    held *h = malloc(sizeof *h);
    AVBufferRef *outer = h ? av_buffer_create(inner->data, inner->size, held_free, h, 0) : NULL;
    if (outer == NULL) {
        free(h);
        __atomic_sub_fetch(&b->used, size, __ATOMIC_RELAXED);
        return -1;
    }
    h->budget = b;
    h->inner = inner;
    h->size = size;
    __atomic_add_fetch(&b->holds, 1, __ATOMIC_ACQ_REL);
    *slot = outer;
    return 0;
}

static int counted_get_buffer(AVCodecContext *c, AVFrame *frame, int flags) {
    att_av_budget *b = c->opaque;
    int code = avcodec_default_get_buffer2(c, frame, flags);
    if (code < 0 || b == NULL) return code;
    for (int i = 0; i < AV_NUM_DATA_POINTERS; i++) {
        if (frame->buf[i] != NULL && wrap(b, &frame->buf[i]) < 0) goto refused;
    }
    for (int i = 0; i < frame->nb_extended_buf; i++) {
        if (frame->extended_buf[i] != NULL && wrap(b, &frame->extended_buf[i]) < 0) goto refused;
    }
    return 0;
refused:
    av_frame_unref(frame);
    return AVERROR(ENOMEM);
}

void att_av_budget_attach(AVCodecContext *decoder, att_av_budget *budget) {
    if (decoder == NULL || budget == NULL) return;
    decoder->opaque = budget;
    decoder->get_buffer2 = counted_get_buffer;
}
