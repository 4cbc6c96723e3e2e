// Many transfers at once: libcurl's multi interface, HTTP/2 multiplexed, connections capped
// per host and in all, driven by one loop thread (AttacheFetch's FetchLoop).
#include "transfer.h"

#include <stdlib.h>

struct att_multi {
    CURLM *handle;
};

att_multi *att_multi_new(int32_t max_host_connections, int32_t max_total_connections) {
    att_multi *m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    att_curl_global_init();
    m->handle = curl_multi_init();
    if (m->handle == NULL) {
        free(m);
        return NULL;
    }
    curl_multi_setopt(m->handle, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m->handle, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max_host_connections);
    curl_multi_setopt(m->handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)max_total_connections);
    return m;
}

void att_multi_free(att_multi *m) {
    if (m == NULL) return;
    curl_multi_cleanup(m->handle);
    free(m);
}

int32_t att_multi_add(att_multi *m, att_transfer *t) {
    return curl_multi_add_handle(m->handle, t->easy) == CURLM_OK ? 0 : -1;
}

int32_t att_multi_run(att_multi *m, int32_t timeout_ms) {
    // Wait first, then drive: every transfer finished by this perform is read by the caller
    // before the next wait, so a finished transfer never sits behind a poll timeout. Newly
    // added transfers carry an expire-now timer, so the wait returns at once for them.
    int running = 0;
    if (curl_multi_poll(m->handle, NULL, 0, timeout_ms, NULL) != CURLM_OK) return -1;
    if (curl_multi_perform(m->handle, &running) != CURLM_OK) return -1;
    return running;
}

att_transfer *att_multi_next_done(att_multi *m, int32_t *curl_code) {
    int queued = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(m->handle, &queued)) != NULL) {
        if (message->msg != CURLMSG_DONE) continue;
        att_transfer *t = NULL;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        *curl_code = (int32_t)message->data.result;
        curl_multi_remove_handle(m->handle, message->easy_handle);
        return t;
    }
    return NULL;
}

void att_multi_wakeup(att_multi *m) { curl_multi_wakeup(m->handle); }

const char *att_curl_version(void) { return curl_version(); }
