#include "attache_faces.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static att_faces_detect_function detect = NULL;
static char load_error[PATH_MAX + 256];

/// libAttacheFaces.so in the directory of the running executable, into `path`.
static int beside_executable(char *path, size_t size) {
    char executable[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (length <= 0) return -1;
    executable[length] = '\0';
    char *slash = strrchr(executable, '/');
    if (slash == NULL) return -1;
    *slash = '\0';
    int written = snprintf(path, size, "%s/libAttacheFaces.so", executable);
    return written > 0 && (size_t)written < size ? 0 : -1;
}

static pthread_once_t located = PTHREAD_ONCE_INIT;
static char library[PATH_MAX + 32];

static void locate(void) {
    const char *chosen = getenv("ATTACHE_FACES_LIBRARY");
    if (chosen != NULL && chosen[0] != '\0') {
        snprintf(library, sizeof library, "%s", chosen);
    } else if (beside_executable(library, sizeof library) != 0) {
        library[0] = '\0';
    }
}

const char *att_faces_library(void) {
    pthread_once(&located, locate);
    return library;
}

static void load(void) {
    const char *chosen = att_faces_library();
    if (chosen[0] == '\0') {
        snprintf(load_error, sizeof load_error, "the executable's directory cannot be read");
        return;
    }
    void *handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why != NULL ? why : chosen);
        return;
    }
    detect = (att_faces_detect_function)dlsym(handle, ATT_FACES_ENTRY);
    if (detect == NULL) snprintf(load_error, sizeof load_error, "%s lacks " ATT_FACES_ENTRY, chosen);
}

const char *att_faces_load(void) {
    pthread_once(&loaded, load);
    return detect != NULL ? NULL : load_error;
}

int att_faces_detect(const uint8_t *gray, int width, int height, const char *cascade_path, int min_side,
                     att_face_box *out, int max, att_error *error) {
    const char *why = att_faces_load();
    if (why != NULL) {
        att_set_error(error, ATT_ERR_UNSUPPORTED, "face detection cannot be loaded: %s", why);
        return -3;
    }
    return detect(gray, width, height, cascade_path, min_side, out, max, error);
}
