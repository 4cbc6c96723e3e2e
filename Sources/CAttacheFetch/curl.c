// libcurl shim: one att_transfer per request, with its options, its collected body and the
// callbacks that enforce the fetch policy. See attache_fetch.h.
#include "transfer.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static void set_detail(att_transfer *t, const char *text) { snprintf(t->detail, sizeof t->detail, "%s", text); }

int att_transfer_sniff(att_transfer *t) {
    t->sniffed = 1;
    if (t->sniff == NULL) return 0;
    char name[64] = {0};
    int32_t kind = -1;
    int32_t animated = 0;
    att_media_category category = t->sniff(t->body, t->size, &kind, &animated, name, sizeof name);
    if (category <= ATT_CATEGORY_NONE || category > ATT_CATEGORY_VIDEO) {
        t->abort_reason = ATT_ABORT_UNSUPPORTED_TYPE;
        set_detail(t, name);
        return 1;
    }
    t->kind = kind;
    // Now the kind is known, its own cap applies to the declared length and to what streams.
    int64_t cap = t->animation_cap_bytes > 0 && animated ? t->animation_cap_bytes : t->category_caps[category];
    if (cap > 0 && (t->max_bytes <= 0 || cap < t->max_bytes)) {
        t->max_bytes = cap;
        t->cap_category = category;
    }
    curl_off_t length = -1;
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (t->max_bytes > 0 && ((int64_t)t->size > t->max_bytes || (int64_t)length > t->max_bytes)) {
        t->abort_reason = ATT_ABORT_TOO_LARGE;
        return 1;
    }
    return 0;
}

int32_t att_budget_take(int64_t *cell, int64_t bytes) {
    int64_t left = __atomic_load_n(cell, __ATOMIC_RELAXED);
    do {
        if (left < bytes) return 0;
    } while (!__atomic_compare_exchange_n(cell, &left, left - bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return 1;
}

void att_budget_give(int64_t *cell, int64_t bytes) { __atomic_add_fetch(cell, bytes, __ATOMIC_RELAXED); }

int64_t att_budget_left(const int64_t *cell) { return __atomic_load_n(cell, __ATOMIC_RELAXED); }

static size_t on_write(char *data, size_t size, size_t count, void *user) {
    att_transfer *t = user;
    size_t n = size * count;
    t->received += (int64_t)n;
    if (t->max_bytes > 0 && (int64_t)(t->size + n) > t->max_bytes) {
        t->abort_reason = ATT_ABORT_TOO_LARGE;
        return CURL_WRITEFUNC_ERROR;
    }
    if (t->budget != NULL) {
        // A declared length is reserved whole before the body is read, so transfers sharing
        // a budget finish one by one instead of all starving each other; bytes past it (or
        // without one) are taken as they come.
        if (t->size == 0) {
            curl_off_t length = -1;
            curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
            if (length > 0) {
                if (!att_budget_take(t->budget, (int64_t)length)) {
                    t->abort_reason = ATT_ABORT_BUDGET;
                    return CURL_WRITEFUNC_ERROR;
                }
                t->reserved = (int64_t)length;
            }
        }
        int64_t past = (int64_t)(t->size + n) - (t->reserved > (int64_t)t->size ? t->reserved : (int64_t)t->size);
        if (past > 0) {
            if (!att_budget_take(t->budget, past)) {
                t->abort_reason = ATT_ABORT_BUDGET;
                return CURL_WRITEFUNC_ERROR;
            }
            if (t->reserved < (int64_t)(t->size + n)) t->reserved = (int64_t)(t->size + n);
        }
    }
    if (t->size + n > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 64 * 1024;
        if (t->capacity == 0) {
            // Size the buffer once from a declared length (already checked against the caps).
            curl_off_t length = -1;
            curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
            if (length > 0 && (size_t)length >= n) capacity = (size_t)length;
        }
        while (capacity < t->size + n) capacity *= 2;
        if (t->max_bytes > 0 && capacity > (size_t)t->max_bytes) capacity = (size_t)t->max_bytes;
        uint8_t *grown = realloc(t->body, capacity);
        if (grown == NULL) return CURL_WRITEFUNC_ERROR;
        t->body = grown;
        t->capacity = capacity;
    }
    memcpy(t->body + t->size, data, n);
    t->size += n;
    if (!t->sniffed && t->sniff_bytes > 0 && t->size >= (size_t)t->sniff_bytes && att_transfer_sniff(t)) {
        return CURL_WRITEFUNC_ERROR;
    }
    return n;
}

// Parses a Content-Length value: one decimal number, or a list of equal ones (RFC 9110 §8.6
// lets a recipient take "42, 42" as 42). -1 for anything else.
static int64_t content_length_value(const char *text, size_t length) {
    int64_t value = -1;
    size_t i = 0;
    while (i < length) {
        while (i < length && (text[i] == ' ' || text[i] == '\t')) i++;
        if (i == length || text[i] < '0' || text[i] > '9') return -1;
        int64_t number = 0;
        while (i < length && text[i] >= '0' && text[i] <= '9') {
            if (number > (INT64_MAX - 9) / 10) return -1;
            number = number * 10 + (text[i++] - '0');
        }
        while (i < length && (text[i] == ' ' || text[i] == '\t')) i++;
        if (value >= 0 && number != value) return -1;
        value = number;
        if (i < length && text[i] != ',') return -1;
        if (i < length) i++;
    }
    return value;
}

// Each header line of each response (redirects and 1xx included): the header's size is capped,
// and a Content-Length that contradicts itself or another is a malformed answer, not a
// truncated body.
static size_t on_header(char *data, size_t size, size_t count, void *user) {
    att_transfer *t = user;
    size_t n = size * count;
    if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        t->header_bytes = 0;
        t->declared_length = -1;
    }
    t->header_bytes += n;
    if (t->header_bytes > ATT_MAX_HEADER_BYTES) {
        t->abort_reason = ATT_ABORT_HEADER_TOO_LARGE;
        return 0;
    }
    static const char name[] = "content-length:";
    if (n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t length = n - (sizeof name - 1);
        while (length > 0 && (data[sizeof name - 2 + length] == '\r' || data[sizeof name - 2 + length] == '\n')) {
            length--;
        }
        int64_t value = content_length_value(data + sizeof name - 1, length);
        if (value < 0 || (t->declared_length >= 0 && value != t->declared_length)) {
            t->abort_reason = ATT_ABORT_BAD_RESPONSE;
            set_detail(t, value < 0 ? "Content-Length is not one number" : "two Content-Length values disagree");
            return 0;
        }
        t->declared_length = value;
    }
    return n;
}

// Every connection, redirects and retries included, passes here with the resolved peer
// address, so a hostname that resolves (or re-resolves) to a denied address never connects.
static curl_socket_t on_open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *address) {
    att_transfer *t = user;
    (void)purpose;
    const char *rule = "not an IP address";
    if (address->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&address->addr;
        rule = att_address_denied(AF_INET, (const uint8_t *)&in->sin_addr, t->address_flags);
    } else if (address->family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&address->addr;
        rule = att_address_denied(AF_INET6, in6->sin6_addr.s6_addr, t->address_flags);
    }
    if (rule != NULL) {
        t->abort_reason = ATT_ABORT_BLOCKED_ADDRESS;
        set_detail(t, rule);
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype, address->protocol);
}

// "example.com" names that host; "*.example.com" any host below it.
static int host_rule_matches(const char *rule, const char *host) {
    if (strcasecmp(rule, host) == 0) return 1;
    if (rule[0] == '*' && rule[1] == '.') {
        size_t hl = strlen(host), sl = strlen(rule + 1);
        if (hl > sl && strcasecmp(host + hl - sl, rule + 1) == 0) return 1;
    }
    return 0;
}

static int host_allowed(char **allowed, const char *host) {
    for (; *allowed != NULL; allowed++)
        if (host_rule_matches(*allowed, host)) return 1;
    return 0;
}

// A deny rule that matches refuses; with any allow rule, one must match.
static int source_permitted(char **rules, const char *host) {
    int allows = 0, allowed = 0;
    for (; *rules != NULL; rules++) {
        const char *rule = *rules;
        int deny = rule[0] == '-';
        if (rule[0] != '-' && rule[0] != '+') continue;
        if (!deny) allows = 1;
        if (host_rule_matches(rule + 1, host)) {
            if (deny) return 0;
            allowed = 1;
        }
    }
    return allowed || !allows;
}

static char **copy_list(const char *const *list) {
    if (list == NULL) return NULL;
    size_t n = 0;
    while (list[n] != NULL) n++;
    char **copy = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; copy != NULL && i < n; i++) copy[i] = strdup(list[i]);
    return copy;
}

static void free_list(char **list) {
    for (char **item = list; item != NULL && *item != NULL; item++) free(*item);
    free(list);
}

// Called before each request is sent (first hop and every redirect, on a new or reused
// connection): the hop's URL must carry no userinfo and name an allowed host.
static int on_prereq(void *user, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
    att_transfer *t = user;
    (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
    // libcurl keeps the first message of a transfer, even one it recovered from (a reused
    // connection that was reset, then a fresh one): a new request starts with none, so the
    // message reported is never an earlier hop's.
    t->error[0] = 0;
    char *url = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
    att_url_parts parts;
    if (url == NULL || att_url_parse(url, &parts, NULL) != 0) {
        t->abort_reason = ATT_ABORT_USERINFO;
        set_detail(t, "unparseable hop");
        return CURL_PREREQFUNC_ABORT;
    }
    if (parts.has_userinfo) {
        t->abort_reason = ATT_ABORT_USERINFO;
        set_detail(t, "userinfo in URL");
        return CURL_PREREQFUNC_ABORT;
    }
    if (t->allowed_hosts != NULL && !host_allowed(t->allowed_hosts, parts.host)) {
        t->abort_reason = ATT_ABORT_HOST_NOT_ALLOWED;
        set_detail(t, parts.host);
        return CURL_PREREQFUNC_ABORT;
    }
    if (t->source_rules != NULL && !source_permitted(t->source_rules, parts.host)) {
        t->abort_reason = ATT_ABORT_SOURCE_NOT_ALLOWED;
        set_detail(t, parts.host);
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

int32_t att_url_parse(const char *url, att_url_parts *parts, att_error *error) {
    memset(parts, 0, sizeof *parts);
    CURLU *u = curl_url();
    if (u == NULL) {
        att_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return -1;
    }
    CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (rc != CURLUE_OK) {
        att_set_error(error, ATT_ERR_CORRUPT, "%s", curl_url_strerror(rc));
        curl_url_cleanup(u);
        return -1;
    }
    char *value = NULL;
    if (curl_url_get(u, CURLUPART_SCHEME, &value, 0) == CURLUE_OK) {
        snprintf(parts->scheme, sizeof parts->scheme, "%s", value);
        curl_free(value);
    }
    if (curl_url_get(u, CURLUPART_HOST, &value, 0) == CURLUE_OK) {
        snprintf(parts->host, sizeof parts->host, "%s", value);
        curl_free(value);
    }
    if (curl_url_get(u, CURLUPART_USER, &value, 0) == CURLUE_OK) {
        parts->has_userinfo = 1;
        curl_free(value);
    }
    if (curl_url_get(u, CURLUPART_PASSWORD, &value, 0) == CURLUE_OK) {
        parts->has_userinfo = 1;
        curl_free(value);
    }
    if (curl_url_get(u, CURLUPART_PORT, &value, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        parts->port = atoi(value);
        curl_free(value);
    }
    curl_url_cleanup(u);
    return 0;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    att_transfer *t = user;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (atomic_load(&t->cancelled)) {
        t->abort_reason = ATT_ABORT_CANCELLED;
        return 1;
    }
    return 0;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void att_curl_global_init(void) { pthread_once(&global_once, global_init); }

#define SET(option, value)                                                                                             \
    do {                                                                                                               \
        CURLcode rc_ = curl_easy_setopt(t->easy, option, value);                                                       \
        if (rc_ != CURLE_OK) {                                                                                         \
            att_set_error(error, ATT_ERR_INTERNAL, "%s: %s", #option, curl_easy_strerror(rc_));                        \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* The easy handle's options: 0, or -1 with `error` set (the handle is then freed by the caller). */
static int set_options(att_transfer *t, const att_transfer_options *o, att_error *error) {
    SET(CURLOPT_URL, o->url);
    SET(CURLOPT_PRIVATE, (void *)t);
    SET(CURLOPT_ERRORBUFFER, t->error);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROTOCOLS_STR, o->protocols);
    SET(CURLOPT_REDIR_PROTOCOLS_STR, o->protocols);
    SET(CURLOPT_FOLLOWLOCATION, o->max_redirects > 0 ? 1L : 0L);
    SET(CURLOPT_MAXREDIRS, (long)o->max_redirects);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
    SET(CURLOPT_TIMEOUT_MS, (long)o->total_timeout_ms);
    SET(CURLOPT_LOW_SPEED_LIMIT, (long)o->low_speed_bytes);
    SET(CURLOPT_LOW_SPEED_TIME, (long)o->low_speed_seconds);
    if (o->max_bytes > 0) SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
    SET(CURLOPT_USERAGENT, o->user_agent);
    SET(CURLOPT_FAILONERROR, 1L);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    if (o->ca_file != NULL) SET(CURLOPT_CAINFO, o->ca_file);
    // "" disables proxies, including the http_proxy/https_proxy/all_proxy environment.
    SET(CURLOPT_PROXY, o->proxy != NULL ? o->proxy : "");
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, (void *)t);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, (void *)t);
    SET(CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    SET(CURLOPT_OPENSOCKETDATA, (void *)t);
    SET(CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(CURLOPT_XFERINFODATA, (void *)t);
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_PREREQFUNCTION, on_prereq);
    SET(CURLOPT_PREREQDATA, (void *)t);
    // The body is never decompressed: no Accept-Encoding is sent and none is honoured.
    SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    // Prefer waiting for an HTTP/2 connection to multiplex on over opening another one.
    if (strncasecmp(o->url, "https:", 6) == 0) SET(CURLOPT_PIPEWAIT, 1L);
    SET(CURLOPT_TCP_NODELAY, 1L);
    // 128 KiB receive buffer (the curl tool uses 100 KiB): fewer recv calls and ACK rounds.
    SET(CURLOPT_BUFFERSIZE, 128L * 1024);
    for (const char *const *entry = o->resolve; entry != NULL && *entry != NULL; entry++) {
        struct curl_slist *next = curl_slist_append(t->resolve, *entry);
        if (next == NULL) break;
        t->resolve = next;
    }
    if (t->resolve != NULL) SET(CURLOPT_RESOLVE, t->resolve);
    for (const char *const *entry = o->headers; entry != NULL && *entry != NULL; entry++) {
        struct curl_slist *next = curl_slist_append(t->headers, *entry);
        if (next == NULL) break;
        t->headers = next;
    }
    if (t->headers != NULL) SET(CURLOPT_HTTPHEADER, t->headers);
    return 0;
}

att_transfer *att_transfer_new(const att_transfer_options *o, att_error *error) {
    att_curl_global_init();
    att_transfer *t = calloc(1, sizeof *t);
    if (t == NULL) {
        att_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        return NULL;
    }
    t->easy = curl_easy_init();
    if (t->easy == NULL) {
        att_set_error(error, ATT_ERR_INTERNAL, "curl_easy_init failed");
        free(t);
        return NULL;
    }
    t->max_bytes = o->max_bytes;
    t->category_caps[1] = o->max_image_bytes;
    t->category_caps[2] = o->max_audio_bytes;
    t->category_caps[3] = o->max_video_bytes;
    t->animation_cap_bytes = o->animation_cap_bytes;
    t->address_flags = o->address_flags;
    t->sniff_bytes = o->sniff_bytes;
    t->sniff = o->sniff;
    t->kind = -1;
    t->budget = o->budget;
    t->declared_length = -1;
    atomic_init(&t->cancelled, 0);
    t->allowed_hosts = copy_list(o->allowed_hosts);
    t->source_rules = copy_list(o->source_rules);
    if ((o->allowed_hosts != NULL && t->allowed_hosts == NULL) ||
        (o->source_rules != NULL && t->source_rules == NULL)) {
        // A rule list that could not be kept is not taken as none.
        att_set_error(error, ATT_ERR_MEMORY_LIMIT, "out of memory");
        att_transfer_free(t);
        return NULL;
    }

    if (set_options(t, o, error) != 0) {
        att_transfer_free(t);
        return NULL;
    }
    return t;
}

void att_transfer_free(att_transfer *t) {
    if (t == NULL) return;
    if (t->easy != NULL) curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->resolve);
    curl_slist_free_all(t->headers);
    free_list(t->allowed_hosts);
    free_list(t->source_rules);
    free(t->body);
    free(t);
}

void att_transfer_cancel(att_transfer *t) { atomic_store(&t->cancelled, 1); }

void att_transfer_set_tag(att_transfer *t, uint64_t tag) { t->tag = tag; }
uint64_t att_transfer_tag(att_transfer *t) { return t->tag; }

int32_t att_transfer_perform(att_transfer *t) { return (int32_t)curl_easy_perform(t->easy); }
