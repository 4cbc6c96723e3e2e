// What a finished transfer says: its failure classified, its status, headers, timings and
// addresses copied into att_transfer_result (a value too long for its buffer left out, never
// cut), and its body handed over.
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// Copies `value` whole into `out`, or leaves `out` empty and sets `flag` in `too_long`: a value
// is never cut and taken as whole.
static void fit(char *out, size_t capacity, const char *value, uint32_t flag, uint32_t *too_long) {
    out[0] = 0;
    if (value == NULL) return;
    size_t length = strlen(value);
    if (length >= capacity) {
        *too_long |= flag;
        return;
    }
    memcpy(out, value, length + 1);
}

static void copy_header(CURL *easy, const char *name, char *out, size_t capacity, uint32_t flag, uint32_t *too_long) {
    struct curl_header *header = NULL;
    out[0] = 0;
    if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &header) == CURLHE_OK && header != NULL) {
        fit(out, capacity, header->value, flag, too_long);
    }
}

static att_fetch_failure classify(int32_t code) {
    switch ((CURLcode)code) {
    case CURLE_OK: return ATT_FAILURE_NONE;
    case CURLE_UNSUPPORTED_PROTOCOL: return ATT_FAILURE_SCHEME;
    case CURLE_URL_MALFORMAT: return ATT_FAILURE_URL;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return ATT_FAILURE_DNS;
    case CURLE_COULDNT_CONNECT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR: return ATT_FAILURE_CONNECT;
    case CURLE_RECV_ERROR: return ATT_FAILURE_RECEIVE;
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return ATT_FAILURE_PARTIAL;
    case CURLE_HTTP_RETURNED_ERROR: return ATT_FAILURE_HTTP_STATUS;
    case CURLE_OPERATION_TIMEDOUT: return ATT_FAILURE_TIMEOUT;
    case CURLE_TOO_MANY_REDIRECTS: return ATT_FAILURE_TOO_MANY_REDIRECTS;
    case CURLE_FILESIZE_EXCEEDED: return ATT_FAILURE_FILE_SIZE;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return ATT_FAILURE_TLS;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING: return ATT_FAILURE_BAD_RESPONSE;
    case CURLE_ABORTED_BY_CALLBACK: return ATT_FAILURE_ABORTED;
    default: return ATT_FAILURE_OTHER;
    }
}

void att_transfer_result_fill(att_transfer *t, int32_t curl_code, att_transfer_result *r) {
    memset(r, 0, sizeof *r);
    // A body that ends cleanly but shorter than the early-check length is checked now.
    if (curl_code == CURLE_OK && !t->sniffed && t->sniff_bytes > 0 && t->size > 0 && att_transfer_sniff(t)) {
        curl_code = CURLE_WRITE_ERROR;
    }
    // A reservation the body did not use goes back to the budget.
    if (t->budget != NULL && t->reserved > (int64_t)t->size) {
        att_budget_give(t->budget, t->reserved - (int64_t)t->size);
        t->reserved = (int64_t)t->size;
    }
    r->curl_code = curl_code;
    r->failure = classify(curl_code);
    // Answers that are not HTTP, and header lines past libcurl's own limit, which it reports in
    // words of its own ("Received HTTP/0.9", out of memory before any body byte).
    if (curl_code == CURLE_UNSUPPORTED_PROTOCOL && strstr(t->error, "HTTP/0.9") != NULL) {
        r->failure = ATT_FAILURE_BAD_RESPONSE;
    }
    if ((curl_code == CURLE_OUT_OF_MEMORY && t->received == 0) ||
        (curl_code == CURLE_RECV_ERROR && strstr(t->error, "Too large response headers") != NULL)) {
        r->failure = ATT_FAILURE_HEADER_TOO_LARGE;
    }
    r->body_bytes = t->received;
    r->abort_reason = t->abort_reason;
    r->cap_category = t->cap_category;
    r->kind = t->kind;
    long status = 0, redirects = 0;
    curl_off_t length = -1;
    double seconds = 0;
    char *url = NULL, *type = NULL, *ip = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_COUNT, &redirects);
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    curl_easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &seconds);
    curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &type);
    curl_easy_getinfo(t->easy, CURLINFO_PRIMARY_IP, &ip);
    r->http_status = status;
    r->redirects = redirects;
    r->content_length = length;
    r->total_seconds = seconds;
    curl_off_t phase = 0;
    curl_easy_getinfo(t->easy, CURLINFO_NAMELOOKUP_TIME_T, &phase);
    r->name_lookup_seconds = (double)phase / 1e6;
    phase = 0;
    curl_easy_getinfo(t->easy, CURLINFO_CONNECT_TIME_T, &phase);
    r->connect_seconds = (double)phase / 1e6;
    phase = 0;
    curl_easy_getinfo(t->easy, CURLINFO_APPCONNECT_TIME_T, &phase);
    r->tls_seconds = (double)phase / 1e6;
    phase = 0;
    curl_easy_getinfo(t->easy, CURLINFO_STARTTRANSFER_TIME_T, &phase);
    r->first_byte_seconds = (double)phase / 1e6;
    long port = 0;
    curl_easy_getinfo(t->easy, CURLINFO_PRIMARY_PORT, &port);
    r->primary_port = (int32_t)port;
    snprintf(r->detail, sizeof r->detail, "%s", t->detail);
    snprintf(r->error, sizeof r->error, "%s", t->error[0] ? t->error : curl_easy_strerror(curl_code));
    r->effective_url = url != NULL ? url : "";
    fit(r->content_type, sizeof r->content_type, type, 2, &r->too_long);
    if (ip) snprintf(r->primary_ip, sizeof r->primary_ip, "%s", ip);
    copy_header(t->easy, "ETag", r->etag, sizeof r->etag, 4, &r->too_long);
    copy_header(t->easy, "Last-Modified", r->last_modified, sizeof r->last_modified, 8, &r->too_long);
}

uint8_t *att_transfer_take_body(att_transfer *t, size_t *count) {
    uint8_t *body = t->body;
    *count = t->size;
    t->body = NULL;
    t->size = t->capacity = 0;
    return body;
}
