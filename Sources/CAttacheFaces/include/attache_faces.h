// Faces for the crop of a receiver's picture: OpenCV's cascade detector (objdetect) with a
// face cascade from Debian's opencv-data, behind a C interface Swift can call. OpenCV (with
// protobuf, BLAS, GL dispatch and the rest it maps) lives in a library of its own,
// libAttacheFaces.so (the AttacheFaces product, from CAttacheFacesOpenCV), loaded with dlopen on
// the first detection, so that a process that never looks for a face never pays for it.
#ifndef ATTACHE_FACES_H
#define ATTACHE_FACES_H

#include <stddef.h>
#include <stdint.h>

#include "attache_shim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int x, y, width, height;
} att_face_box;

/// Finds frontal faces at least `min_side` pixels across in an 8-bit grey image (`width` bytes a
/// row). The cascade at `cascade_path` is read once per thread. Writes at most `max` boxes,
/// largest first, and returns how many there were (0 for none); -1 when the cascade cannot be
/// read, -2 when OpenCV fails, -3 when the detector cannot be loaded (the reason in `error`, as
/// every shim reports one).
int att_faces_detect(const uint8_t *gray, int width, int height, const char *cascade_path, int min_side,
                     att_face_box *out, int max, att_error *error);

/// The file the detector is loaded from: `ATTACHE_FACES_LIBRARY` when set, else
/// libAttacheFaces.so beside the executable; "" when the executable's directory cannot be read.
const char *att_faces_library(void);

/// Loads the detector once (later calls answer at once): NULL when it is there, else why not.
/// It is `ATTACHE_FACES_LIBRARY` when set, else libAttacheFaces.so beside the executable.
const char *att_faces_load(void);

/// The detector's own entry point, in libAttacheFaces.so (what att_faces_detect calls).
typedef int (*att_faces_detect_function)(const uint8_t *gray, int width, int height, const char *cascade_path,
                                         int min_side, att_face_box *out, int max, att_error *error);
#define ATT_FACES_ENTRY "att_faces_opencv_detect"

#ifdef __cplusplus
}
#endif

#endif
