#include "attache_faces_opencv.h"

#include <opencv2/core.hpp>
#include <opencv2/core/ocl.hpp>
#include <opencv2/objdetect.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

// One classifier per thread: detectMultiScale keeps scratch state in the object.
struct Loaded {
    std::string path;
    cv::CascadeClassifier classifier;
    bool ok = false;
};

thread_local Loaded loaded;

}  // namespace

extern "C" int att_faces_opencv_detect(const uint8_t *gray, int width, int height, const char *cascade_path,
                                       int min_side, att_face_box *out, int max, att_error *error) {
    try {
        // The work is one small picture: no OpenCV thread pool beside the pipeline's own, and no
        // OpenCL device probed.
        static const bool single = [] {
            cv::setNumThreads(0);
            cv::ocl::setUseOpenCL(false);
            return true;
        }();
        (void)single;
        if (loaded.path != cascade_path) {
            loaded.path = cascade_path;
            loaded.ok = loaded.classifier.load(cascade_path);
        }
        if (!loaded.ok) {
            att_set_error(error, ATT_ERR_UNSUPPORTED, "the face cascade cannot be read");
            return -1;
        }
        cv::Mat image(height, width, CV_8UC1, const_cast<uint8_t *>(gray), static_cast<size_t>(width));
        std::vector<cv::Rect> faces;
        loaded.classifier.detectMultiScale(image, faces, 1.1, 5, 0, cv::Size(min_side, min_side));
        std::sort(faces.begin(), faces.end(), [](const cv::Rect &a, const cv::Rect &b) { return a.area() > b.area(); });
        int count = static_cast<int>(faces.size());
        for (int i = 0; i < count && i < max; i++) {
            out[i] = att_face_box{faces[i].x, faces[i].y, faces[i].width, faces[i].height};
        }
        return count;
    } catch (const cv::Exception &exception) {
        att_set_error(error, ATT_ERR_INTERNAL, "%s", exception.what());
        return -2;
    } catch (...) {
        att_set_error(error, ATT_ERR_INTERNAL, "face detection failed");
        return -2;
    }
}
