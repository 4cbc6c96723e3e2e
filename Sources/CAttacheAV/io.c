// Bytes in memory as the files libavformat reads and writes: the media to demux (av.c), and the
// MP4 a muxer writes and, for faststart, reads back (encode.c). Nothing here touches a file.
#include "ff.h"

#include <stdlib.h>
#include <string.h>

int att_io_read(void *opaque, uint8_t *bytes, int count) {
    att_io_reader *r = opaque;
    size_t length = *r->length;
    if (r->position >= (int64_t)length) return AVERROR_EOF;
    size_t n = length - (size_t)r->position;
    if (n > (size_t)count) n = (size_t)count;
    memcpy(bytes, *r->data + r->position, n);
    r->position += (int64_t)n;
    return (int)n;
}

int64_t att_io_seek(void *opaque, int64_t offset, int whence) {
    att_io_reader *r = opaque;
    int64_t length = (int64_t)*r->length;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return length;
    case SEEK_SET: break;
    case SEEK_CUR: offset += r->position; break;
    case SEEK_END: offset += length; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0 || offset > length) return AVERROR(EINVAL);
    r->position = offset;
    return offset;
}

int att_io_write(void *opaque, uint8_t *bytes, int count) {
    att_io_buffer *b = opaque;
    int64_t end = b->position + count;
    if (end > b->max) {
        b->over = 1;
        return AVERROR(EFBIG);
    }
    if ((size_t)end > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 1 << 20;
        while (capacity < (size_t)end) capacity *= 2;
        if (capacity > (size_t)b->max) capacity = (size_t)b->max;
        uint8_t *grown = realloc(b->data, capacity);
        if (grown == NULL) return AVERROR(ENOMEM);
        b->data = grown;
        b->capacity = capacity;
    }
    if (b->position > (int64_t)b->size) memset(b->data + b->size, 0, (size_t)b->position - b->size);
    memcpy(b->data + b->position, bytes, (size_t)count);
    b->position = end;
    if ((size_t)end > b->size) b->size = (size_t)end;
    return count;
}

int64_t att_io_buffer_seek(void *opaque, int64_t offset, int whence) {
    att_io_buffer *b = opaque;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return (int64_t)b->size;
    case SEEK_SET: break;
    case SEEK_CUR: offset += b->position; break;
    case SEEK_END: offset += (int64_t)b->size; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0 || offset > b->max) return AVERROR(EINVAL);
    b->position = offset;
    return offset;
}

AVIOContext *att_io_context(void *opaque, int writable) {
    const int size = 64 << 10;
    uint8_t *chunk = av_malloc(size);
    AVIOContext *io = chunk == NULL ? NULL
                      : writable    ? avio_alloc_context(chunk, size, 1, opaque, NULL, att_io_write, att_io_buffer_seek)
                                    : avio_alloc_context(chunk, size, 0, opaque, att_io_read, NULL, att_io_seek);
    if (io == NULL) av_free(chunk);
    return io;
}

void att_io_context_free(AVIOContext **io) {
    if (*io == NULL) return;
    av_freep(&(*io)->buffer);
    avio_context_free(io);
}
