// What the shim's files share (curl.c, result.c, multi.c): the transfer's state and libcurl's
// one-time set-up. Private to CAttacheFetch.
#ifndef ATT_TRANSFER_H
#define ATT_TRANSFER_H

#include "attache_fetch.h"

#include <curl/curl.h>
#include <stdatomic.h>

struct att_transfer {
    CURL *easy;
    struct curl_slist *resolve;
    struct curl_slist *headers;
    uint8_t *body;
    size_t size;
    size_t capacity;
    int64_t max_bytes;
    int64_t category_caps[4];
    int64_t animation_cap_bytes;
    int32_t address_flags;
    int32_t sniff_bytes;
    int sniffed;
    att_sniff_fn sniff;
    int32_t kind;
    att_media_category cap_category;
    int64_t *budget;
    /// Bytes taken from the budget for this transfer (a declared length, then what came past it).
    int64_t reserved;
    /// Body bytes libcurl handed over (kept or refused).
    int64_t received;
    /// Header bytes of the response being read, and the Content-Length it declared (-1: none yet).
    size_t header_bytes;
    int64_t declared_length;
    att_abort_reason abort_reason;
    atomic_int cancelled;
    uint64_t tag;
    char **allowed_hosts;
    char **source_rules;
    char detail[96];
    char error[CURL_ERROR_SIZE];
};

/// Runs the early type check on the bytes so far (once); nonzero when it ends the transfer
/// (the kind is refused).
int att_transfer_sniff(att_transfer *t);
/// curl_global_init, once per process, before the first handle.
void att_curl_global_init(void);

#endif
