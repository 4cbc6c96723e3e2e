// Thin C shim over libcurl: typed setopt wrappers (curl_easy_setopt is variadic), the
// per-transfer callbacks (write with byte cap and early sniff, open-socket address policy,
// progress for cancellation) and the multi-handle calls the fetch loop needs.
#ifndef ATTACHE_FETCH_H
#define ATTACHE_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "attache_shim.h"

// MARK: - Address policy

enum {
    /// Allow 127.0.0.0/8 and ::1 (tests, demos).
    ATT_ADDR_ALLOW_LOOPBACK = 1,
    /// Allow RFC 1918, CGNAT and unique-local ranges (metadata addresses stay denied).
    ATT_ADDR_ALLOW_PRIVATE = 2,
};

/// Checks one peer address (`family` AF_INET with 4 bytes or AF_INET6 with 16) against the
/// deny list. Returns NULL when the address may be connected to, else the rule that denies it
/// (a static string such as "127.0.0.0/8 loopback").
const char *att_address_denied(int family, const uint8_t *address, int flags);

// MARK: - Transfers

typedef struct att_transfer att_transfer;

/// The media categories the early type check tells apart; each has its own byte cap.
typedef enum {
    /// Refused: the transfer is aborted.
    ATT_CATEGORY_NONE = 0,
    ATT_CATEGORY_IMAGE = 1,
    ATT_CATEGORY_AUDIO = 2,
    ATT_CATEGORY_VIDEO = 3,
} att_media_category;

/// Early type check: called once with the first bytes of the body (at least 64, or all of
/// them when the body is shorter). Returns the accepted kind's category and writes the kind
/// (an opaque tag the caller defines, carried back in att_transfer_result) to `kind`, and 1 to
/// `animated` for an animation that may be read up to `animation_cap_bytes`; or
/// returns ATT_CATEGORY_NONE to abort the transfer after writing the refused type's name into
/// `name` (NUL-terminated, at most `capacity` bytes).
typedef att_media_category (*att_sniff_fn)(const uint8_t *bytes, size_t count, int32_t *kind, int32_t *animated,
                                           char *name, size_t capacity);

typedef struct {
    const char *url;
    const char *user_agent;
    /// Comma-separated schemes for the first request and every redirect ("http,https").
    const char *protocols;
    /// An explicit proxy ("" or NULL: none, and proxy environment variables are ignored).
    const char *proxy;
    /// "host:port:address" entries pinned with CURLOPT_RESOLVE (tests), NULL-terminated.
    const char *const *resolve;
    /// Extra request headers ("If-None-Match: ..."), NULL-terminated.
    const char *const *headers;
    int64_t max_bytes;
    /// Caps applied once the early check knows the category (0 = max_bytes only).
    int64_t max_image_bytes;
    int64_t max_audio_bytes;
    int64_t max_video_bytes;
    /// The cap for an animation instead of its category's (a GIF or an animated WebP read to
    /// become a video): applied when the early check says `animated` (0 = none).
    int64_t animation_cap_bytes;
    int32_t max_redirects;
    int64_t connect_timeout_ms;
    int64_t total_timeout_ms;
    int32_t low_speed_bytes;
    int32_t low_speed_seconds;
    int32_t address_flags;
    /// Bytes to collect before calling `sniff` (0 = no early check).
    int32_t sniff_bytes;
    att_sniff_fn sniff;
    /// Verification stays on; a CA bundle path may be given (NULL = system default).
    const char *ca_file;
    /// Hosts allowed on every hop ("example.com", "*.example.com"), NULL-terminated; NULL = any.
    const char *const *allowed_hosts;
    /// A caller's own source rules on top of `allowed_hosts` (a tenant's), checked on every hop:
    /// "+example.com" or "+*.example.com" allows, "-..." denies; a deny that matches refuses,
    /// and with any allow rule a host must match one. NULL-terminated; NULL = none.
    const char *const *source_rules;
    /// Bytes left in a budget shared by several transfers (a payload's); NULL = none. A
    /// declared length is reserved whole before the body is read (and what was not received
    /// is given back when the transfer ends); bytes past it, or without one, are taken as
    /// they arrive. The transfer stops when the budget cannot cover them.
    int64_t *budget;
} att_transfer_options;

/// Takes `bytes` from a budget cell shared between threads if that many are left: returns 1,
/// or 0 (and takes nothing) when they are not.
int32_t att_budget_take(int64_t *cell, int64_t bytes);
/// Gives `bytes` back to a budget cell (a reservation that was not used).
void att_budget_give(int64_t *cell, int64_t bytes);
/// What is left in a budget cell.
int64_t att_budget_left(const int64_t *cell);

/// Why the shim itself stopped a transfer (beside libcurl's own result code).
typedef enum {
    ATT_ABORT_NONE = 0,
    ATT_ABORT_TOO_LARGE = 1,
    ATT_ABORT_UNSUPPORTED_TYPE = 2,
    ATT_ABORT_CANCELLED = 3,
    ATT_ABORT_BLOCKED_ADDRESS = 4,
    /// A hop (the first request or a redirect) names a host off the allowlist.
    ATT_ABORT_HOST_NOT_ALLOWED = 5,
    /// A hop carries user:password in its URL.
    ATT_ABORT_USERINFO = 6,
    /// The shared byte budget ran out.
    ATT_ABORT_BUDGET = 7,
    /// A response's header lines passed ATT_MAX_HEADER_BYTES.
    ATT_ABORT_HEADER_TOO_LARGE = 8,
    /// A response's header is malformed: Content-Length values that disagree or are not numbers.
    ATT_ABORT_BAD_RESPONSE = 9,
    /// A hop names a host the caller's source rules refuse (`source_rules`).
    ATT_ABORT_SOURCE_NOT_ALLOWED = 10,
} att_abort_reason;

/// The most header bytes one response (each redirect's, each 1xx's) may send: 64 KiB.
#define ATT_MAX_HEADER_BYTES (64 * 1024)

/// What a failed transfer's CURLcode means, classified once here where libcurl's constants are.
typedef enum {
    ATT_FAILURE_NONE = 0,
    /// The scheme is not allowed (CURLE_UNSUPPORTED_PROTOCOL).
    ATT_FAILURE_SCHEME = 1,
    /// The URL cannot be parsed.
    ATT_FAILURE_URL = 2,
    /// The host (or proxy) did not resolve.
    ATT_FAILURE_DNS = 3,
    /// No connection, or the server closed it without answering.
    ATT_FAILURE_CONNECT = 4,
    /// Receiving failed: the body broke off when a response had started, else no connection.
    ATT_FAILURE_RECEIVE = 5,
    /// The body ended before its declared length.
    ATT_FAILURE_PARTIAL = 6,
    /// The server answered 4xx/5xx (CURLOPT_FAILONERROR).
    ATT_FAILURE_HTTP_STATUS = 7,
    /// A timeout: connect, total time or the low-speed limit (the message says which).
    ATT_FAILURE_TIMEOUT = 8,
    ATT_FAILURE_TOO_MANY_REDIRECTS = 9,
    /// The declared length passes CURLOPT_MAXFILESIZE.
    ATT_FAILURE_FILE_SIZE = 10,
    ATT_FAILURE_TLS = 11,
    /// The reply is not valid HTTP, or its encoding is.
    ATT_FAILURE_BAD_RESPONSE = 12,
    /// A callback aborted the transfer (see abort_reason).
    ATT_FAILURE_ABORTED = 13,
    ATT_FAILURE_OTHER = 14,
    /// A header line passed libcurl's own limit (it reports that as out of memory, or as too
    /// large response headers).
    ATT_FAILURE_HEADER_TOO_LARGE = 15,
} att_fetch_failure;

typedef struct {
    /// libcurl's CURLcode.
    int32_t curl_code;
    /// The CURLcode classified (ATT_FAILURE_NONE when the transfer succeeded).
    att_fetch_failure failure;
    att_abort_reason abort_reason;
    /// The category whose byte cap applied when ATT_ABORT_TOO_LARGE or ATT_FAILURE_FILE_SIZE
    /// ended the transfer (ATT_CATEGORY_NONE: the overall max_bytes).
    att_media_category cap_category;
    /// The kind tag the early check reported, or -1 when it did not run.
    int32_t kind;
    int64_t http_status;
    int64_t content_length;
    int64_t redirects;
    double total_seconds;
    /// libcurl's phase times, each from the start of the last hop's request (CURLINFO_*_TIME_T):
    /// name lookup done, TCP connected, TLS done (0 without TLS), first byte received.
    double name_lookup_seconds;
    double connect_seconds;
    double tls_seconds;
    double first_byte_seconds;
    /// The remote port (0 when no connection was made).
    int32_t primary_port;
    /// Body bytes received, also when the transfer failed (a refused last piece included).
    int64_t body_bytes;
    /// Set for ATT_ABORT_BLOCKED_ADDRESS / ATT_ABORT_UNSUPPORTED_TYPE.
    char detail[96];
    char error[256];
    /// Fields too long for their buffer are left empty, never cut: bit 2 content_type, 4 etag,
    /// 8 last_modified.
    uint32_t too_long;
    /// The URL of the last hop, whole (libcurl's own string: valid while the transfer lives).
    const char *effective_url;
    char content_type[128];
    char etag[256];
    char last_modified[64];
    char primary_ip[64];
} att_transfer_result;

/// Creates a transfer with every option set; NULL on allocation failure or a bad option
/// (the reason in `error`, as every shim reports one).
att_transfer *att_transfer_new(const att_transfer_options *options, att_error *error);
void att_transfer_free(att_transfer *transfer);
/// Asks a running transfer to stop at the next progress callback (any thread).
void att_transfer_cancel(att_transfer *transfer);
/// Fills `result` after the transfer finished with `curl_code`.
void att_transfer_result_fill(att_transfer *transfer, int32_t curl_code, att_transfer_result *result);
/// The body collected so far; ownership moves to the caller (free with att_free).
uint8_t *att_transfer_take_body(att_transfer *transfer, size_t *count);
/// Runs the transfer to completion on the calling thread (curl_easy_perform).
int32_t att_transfer_perform(att_transfer *transfer);
/// An opaque value the fetch loop attaches to the transfer.
void att_transfer_set_tag(att_transfer *transfer, uint64_t tag);
uint64_t att_transfer_tag(att_transfer *transfer);

// MARK: - Multi

typedef struct att_multi att_multi;

att_multi *att_multi_new(int32_t max_host_connections, int32_t max_total_connections);
void att_multi_free(att_multi *multi);
int32_t att_multi_add(att_multi *multi, att_transfer *transfer);
/// Drives every transfer, then waits up to `timeout_ms` for activity or a wakeup.
/// Returns the number of running transfers, or -1 on a multi error.
int32_t att_multi_run(att_multi *multi, int32_t timeout_ms);
/// The next finished transfer (removed from the multi handle) and its CURLcode, or NULL.
att_transfer *att_multi_next_done(att_multi *multi, int32_t *curl_code);
/// Interrupts att_multi_run from another thread.
void att_multi_wakeup(att_multi *multi);

// MARK: - URLs

typedef struct {
    char scheme[16];
    char host[256];
    int32_t has_userinfo;
    int32_t port;
} att_url_parts;

/// Parses `url` with libcurl's own parser (the one the transfer will use). Returns 0, or -1
/// with the reason in `error` (when not NULL).
int32_t att_url_parse(const char *url, att_url_parts *parts, att_error *error);

/// curl_version() for reports.
const char *att_curl_version(void);

#endif
