#define ATT_FF_LOADER
#include "ff.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

struct att_ff att_ff;

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
    void *swresample = open_library("libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR));
    if (load_error != NULL) return;
#define X(library, name)                                                                                               \
    if ((att_ff.name = dlsym(library, #name)) == NULL) load_error = "FFmpeg lacks " #name;
    FFMPEG_FUNCTIONS
#undef X
    if (load_error != NULL) return;
    att_ff.av_log_set_level(AV_LOG_QUIET);
    // No single FFmpeg allocation over 64 MiB (an 8K 4:2:0 frame is 53 MB): a header that
    // declares a huge chunk (a WAV's LIST INFO of 2.5 GB, found by fuzz-av) is refused by
    // av_malloc instead of reserved.
    att_ff.av_max_alloc((size_t)64 << 20);
}

const char *att_ff_load(void) {
    pthread_once(&loaded, load);
    return load_error;
}
