// What the C libraries write to `stderr` (libjxl's failure traces, a library's warnings) as log
// lines: C's `stderr` stream is replaced by one that, while a command runs, turns each line into
// a line of the log's format (`<time> <level> attache.library: [C] <text>`), written whole to
// file descriptor 2. Before and after (the argument parser's messages) lines pass unchanged.
// Attache's own log lines go to descriptor 2 directly, so the two never mix within a line.
#define _GNU_SOURCE
#include "attache_codecs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int mode;   // 0: lines pass unchanged; 1: log lines, debug hidden; 2: shown
static char pending[2048];  // a line not ended yet (guarded by the stream's own lock)
static size_t pending_length;

static void write_all(const char *text, size_t length) {
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, text, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return;
        text += written;
        length -= (size_t)written;
    }
}

// One library line as a log line: `debug`, shown at the debug level; a fatal error (the Swift
// concurrency runtime writes its own through `stderr`) is `critical` and always shown.
static void emit(const char *text, size_t length) {
    if (mode == 0) {
        write_all(text, length);
        write_all("\n", 1);
        return;
    }
    while (length > 0 && (text[length - 1] == '\r' || text[length - 1] == ' ')) length--;
    if (length == 0) return;
    int fatal = memmem(text, length, "atal error", 10) != NULL;
    if (!fatal && mode < 2) return;
    char line[sizeof pending + 96];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm parts;
    gmtime_r(&now.tv_sec, &parts);
    int head = snprintf(line, 96, "%04d-%02d-%02dT%02d:%02d:%02d+0000 %s attache.library: [C] ", parts.tm_year + 1900,
                        parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                        fatal ? "critical" : "debug");
    if (head < 0) return;
    for (size_t i = 0; i < length; i++) line[head + i] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
    line[head + length] = '\n';
    write_all(line, (size_t)head + length + 1);
}

static ssize_t take(void *cookie, const char *data, size_t size) {
    (void)cookie;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\n' || pending_length == sizeof pending) {
            emit(pending, pending_length);  // a line longer than the buffer goes out in parts
            pending_length = 0;
            if (data[i] == '\n') continue;
        }
        pending[pending_length++] = data[i];
    }
    return (ssize_t)size;
}

void att_route_library_output(int how) {
    mode = how;
    static FILE *stream;
    if (stream != NULL) return;
    cookie_io_functions_t functions = {.read = NULL, .write = take, .seek = NULL, .close = NULL};
    stream = fopencookie(NULL, "w", functions);
    if (stream == NULL) return;
    setvbuf(stream, NULL, _IOLBF, 0);
    stderr = stream;
}
