// libcurl for an S3-compatible object store: one reusable handle per connection, SigV4 signing
// by libcurl (CURLOPT_AWS_SIGV4), bodies from memory, responses to a callback. The caller
// builds the URL (sorted, percent-encoded query) and the x-amz-content-sha256 header.
#ifndef ATTACHE_OBJECTS_H
#define ATTACHE_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "attache_shim.h"

typedef struct att_s3 att_s3;

/// Receives response body bytes; returns 0 to go on, non-zero to stop the transfer.
typedef int32_t (*att_s3_sink)(void *context, const uint8_t *data, size_t count);

/// A handle signing with `sigv4` ("aws:amz:REGION:s3") as `user` ("ACCESS:SECRET").
/// Timeouts in milliseconds (0: none). NULL when libcurl cannot make a handle.
att_s3 *att_s3_new(const char *sigv4, const char *user, int64_t connect_timeout_ms, int64_t timeout_ms);
void att_s3_free(att_s3 *handle);

/// How a request ended.
typedef enum {
    /// An HTTP answer came (its status in `status`), its body streamed or collected whole.
    ATT_S3_ANSWERED = 0,
    /// The sink asked to stop: what it took is what it wanted.
    ATT_S3_STOPPED = 1,
    /// An answer collected without a sink passed att_s3_small_body_max() bytes: the transfer
    /// was stopped and the answer refused whole, never cut and taken as whole.
    ATT_S3_OVERFLOWED = 2,
    /// No answer (connection, timeout, TLS, a refused option): the reason in `error`.
    ATT_S3_FAILED = 3,
} att_s3_outcome;

/// One request. `method` is GET, HEAD, PUT or DELETE; `headers` are full "Name: value" lines;
/// a PUT sends `body_count` bytes from `body`; `range` ("first-last") or NULL. Body bytes of
/// the answer go to `sink` (NULL: collected whole, at most att_s3_small_body_max() bytes). A
/// failed (non-2xx) answer is always collected that way, for its message. `status` gets the
/// HTTP status; `error` the reason when the outcome is not ATT_S3_ANSWERED.
att_s3_outcome att_s3_perform(att_s3 *handle, const char *method, const char *url, const char *const *headers,
                              size_t header_count, const uint8_t *body, int64_t body_count, const char *range,
                              att_s3_sink sink, void *context, int64_t *status, att_error *error);

/// The answer collected by the last att_s3_perform without a sink (NUL-terminated).
const char *att_s3_small_body(att_s3 *handle, size_t *count);

/// The last answer's Date header (the server's clock), "" when it had none (or one too long).
const char *att_s3_date(att_s3 *handle);

/// The largest answer collected without a sink: 64 KiB.
int64_t att_s3_small_body_max(void);

#endif
