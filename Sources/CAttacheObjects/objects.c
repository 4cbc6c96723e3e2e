// See attache_objects.h.
#include "attache_objects.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SMALL_BODY_MAX = 64 << 10 };

struct att_s3 {
    CURL *easy;
    char *sigv4;
    char *user;
    int64_t connect_timeout_ms;
    int64_t timeout_ms;
    // The request body being sent.
    const uint8_t *body;
    int64_t body_count;
    int64_t body_sent;
    // Where the answer goes.
    att_s3_sink sink;
    void *context;
    char small[SMALL_BODY_MAX + 1];
    size_t small_count;
    // An answer without a sink passed SMALL_BODY_MAX: the transfer was stopped, never cut.
    int small_overflow;
    // The sink asked to stop.
    int stopped;
    // The answer's Date header (the server's clock), "" when there was none.
    char date[64];
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

att_s3 *att_s3_new(const char *sigv4, const char *user, int64_t connect_timeout_ms, int64_t timeout_ms) {
    pthread_once(&once, global_init);
    att_s3 *handle = calloc(1, sizeof *handle);
    if (handle == NULL) return NULL;
    handle->easy = curl_easy_init();
    handle->sigv4 = strdup(sigv4);
    handle->user = strdup(user);
    if (handle->easy == NULL || handle->sigv4 == NULL || handle->user == NULL) {
        att_s3_free(handle);
        return NULL;
    }
    handle->connect_timeout_ms = connect_timeout_ms;
    handle->timeout_ms = timeout_ms;
    return handle;
}

void att_s3_free(att_s3 *handle) {
    if (handle == NULL) return;
    if (handle->easy) curl_easy_cleanup(handle->easy);
    free(handle->sigv4);
    free(handle->user);
    free(handle);
}

static size_t on_read(char *buffer, size_t size, size_t count, void *user) {
    att_s3 *h = user;
    int64_t left = h->body_count - h->body_sent;
    size_t n = size * count;
    if ((int64_t)n > left) n = (size_t)left;
    if (n > 0) memcpy(buffer, h->body + h->body_sent, n);
    h->body_sent += (int64_t)n;
    return n;
}

static size_t on_write(char *data, size_t size, size_t count, void *user) {
    att_s3 *h = user;
    size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
    // Error answers (an XML document) are kept for the message; only a success streams.
    if (h->sink != NULL && status >= 200 && status < 300) {
        if (h->sink(h->context, (const uint8_t *)data, n) == 0) return n;
        h->stopped = 1;
        return CURL_WRITEFUNC_ERROR;
    }
    // An answer larger than the buffer meant for it is refused whole, never read in part.
    if (n > SMALL_BODY_MAX - h->small_count) {
        h->small_overflow = 1;
        return CURL_WRITEFUNC_ERROR;
    }
    memcpy(h->small + h->small_count, data, n);
    h->small_count += n;
    h->small[h->small_count] = 0;
    return n;
}

// Sets one option; a refused one ends the request with its name (as the fetcher's shim does).
#define SET(option, value)                                                                                             \
    do {                                                                                                               \
        CURLcode set_ = curl_easy_setopt(easy, option, value);                                                         \
        if (set_ != CURLE_OK) {                                                                                        \
            att_set_error(error, ATT_ERR_INTERNAL, "%s: %s", #option, curl_easy_strerror(set_));                       \
            outcome = ATT_S3_FAILED;                                                                                   \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

// The request's options; ATT_S3_FAILED, with the refused option named, when one is refused.
static att_s3_outcome set_options(att_s3 *h, const char *method, const char *url, struct curl_slist *list,
                                  int64_t body_count, const char *range, char *reason, att_error *error) {
    CURL *easy = h->easy;
    att_s3_outcome outcome = ATT_S3_ANSWERED;
    // No "Expect: 100-continue" wait before a body (a header-removing "Expect:" line would be
    // signed by SigV4 as an empty header that is never sent).
    SET(CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    SET(CURLOPT_URL, url);
    SET(CURLOPT_ERRORBUFFER, reason);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    // Straight to the object store: proxy variables in the environment are not used (as in the
    // fetcher), so a process's http_proxy cannot send the store's traffic elsewhere.
    SET(CURLOPT_PROXY, "");
    SET(CURLOPT_AWS_SIGV4, h->sigv4);
    SET(CURLOPT_USERPWD, h->user);
    SET(CURLOPT_HTTPHEADER, list);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, h);
    SET(CURLOPT_TCP_NODELAY, 1L);
    if (h->connect_timeout_ms > 0) SET(CURLOPT_CONNECTTIMEOUT_MS, (long)h->connect_timeout_ms);
    if (h->timeout_ms > 0) SET(CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
    // A bucket that stops sending (a host gone from the network, a frozen gateway) ends the
    // transfer after 10 s without a byte, long before the whole transfer's bound.
    SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
    SET(CURLOPT_LOW_SPEED_TIME, 10L);
    if (range != NULL) SET(CURLOPT_RANGE, range);
    if (strcmp(method, "PUT") == 0) {
        SET(CURLOPT_UPLOAD, 1L);
        SET(CURLOPT_READFUNCTION, on_read);
        SET(CURLOPT_READDATA, h);
        SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_count);
    } else if (strcmp(method, "HEAD") == 0) {
        SET(CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        SET(CURLOPT_CUSTOMREQUEST, method);
    }
done:
    return outcome;
}

att_s3_outcome att_s3_perform(att_s3 *h, const char *method, const char *url, const char *const *headers,
                              size_t header_count, const uint8_t *body, int64_t body_count, const char *range,
                              att_s3_sink sink, void *context, int64_t *status, att_error *error) {
    CURL *easy = h->easy;
    curl_easy_reset(easy);
    h->body = body;
    h->body_count = body_count;
    h->body_sent = 0;
    h->sink = sink;
    h->context = context;
    h->small_count = 0;
    h->small_overflow = 0;
    h->stopped = 0;
    h->small[0] = 0;
    h->date[0] = 0;
    *status = 0;
    att_set_error(error, 0, "%s", "");
    char reason[CURL_ERROR_SIZE] = {0};
    att_s3_outcome outcome = ATT_S3_ANSWERED;

    struct curl_slist *list = NULL;
    for (size_t i = 0; i < header_count; i++) {
        struct curl_slist *next = curl_slist_append(list, headers[i]);
        if (next == NULL) {
            att_set_error(error, ATT_ERR_MEMORY_LIMIT, "no memory for the request's headers");
            outcome = ATT_S3_FAILED;
            goto done;
        }
        list = next;
    }
    outcome = set_options(h, method, url, list, body_count, range, reason, error);
    if (outcome != ATT_S3_ANSWERED) goto done;
    CURLcode code = curl_easy_perform(easy);
    struct curl_header *date = NULL;
    if (curl_easy_header(easy, "Date", 0, CURLH_HEADER, -1, &date) == CURLHE_OK && date != NULL &&
        strlen(date->value) < sizeof h->date) {
        strcpy(h->date, date->value);
    }
    long answer = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &answer);
    *status = answer;
    if (h->small_overflow) {
        outcome = ATT_S3_OVERFLOWED;
        att_set_error(error, ATT_ERR_STRUCTURE, "the answer (HTTP %ld) is over %d bytes", answer, SMALL_BODY_MAX);
    } else if (h->stopped) {
        outcome = ATT_S3_STOPPED;
    } else if (code != CURLE_OK) {
        outcome = ATT_S3_FAILED;
        att_set_error(error, code == CURLE_OPERATION_TIMEDOUT ? ATT_ERR_TIMEOUT : ATT_ERR_INTERNAL, "%s",
                      reason[0] ? reason : curl_easy_strerror(code));
    }
done:
    // The error buffer and the header list are this call's: neither outlives it.
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    return outcome;
}

#undef SET

const char *att_s3_date(att_s3 *handle) { return handle->date; }

int64_t att_s3_small_body_max(void) { return SMALL_BODY_MAX; }

const char *att_s3_small_body(att_s3 *handle, size_t *count) {
    *count = handle->small_count;
    return handle->small;
}
