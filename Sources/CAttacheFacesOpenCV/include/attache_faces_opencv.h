// The face detector itself, built into libAttacheFaces.so (the AttacheFaces product) and reached
// only through CAttacheFaces' loader (att_faces_detect), which finds it by ATT_FACES_ENTRY.
#ifndef ATTACHE_FACES_OPENCV_H
#define ATTACHE_FACES_OPENCV_H

#include "attache_faces.h"

#ifdef __cplusplus
extern "C" {
#endif

int att_faces_opencv_detect(const uint8_t *gray, int width, int height, const char *cascade_path, int min_side,
                            att_face_box *out, int max, att_error *error);

#ifdef __cplusplus
}
#endif

#endif
