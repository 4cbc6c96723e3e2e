#include "attache_codecs.h"

#include <lcms2.h>
#include <lcms2_plugin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Everything lcms2 allocates for one profile and its transform comes from a budget of its own
// (a memory plug-in per context), checked before each allocation: a 400-byte profile can
// declare a lookup table of 255^3 grid points and 15 outputs, half a gigabyte that lcms2 would
// allocate and clear before it finds the table's data missing. A real profile's tables are in
// its bytes (at most ATT_ICC_MAX_BYTES), so a few times that is plenty for it and its transform.
typedef struct {
    size_t used, cap;
    int refused;
} att_icc_budget;

#define ATT_ICC_HEADER 16

static void *budget_malloc(cmsContext id, cmsUInt32Number size) {
    att_icc_budget *budget = cmsGetContextUserData(id);
    if (budget != NULL && (size > budget->cap || budget->used > budget->cap - size)) {
        budget->refused = 1;
        return NULL;
    }
    unsigned char *block = malloc((size_t)size + ATT_ICC_HEADER);
    if (block == NULL) return NULL;
    *(size_t *)block = size;
    if (budget != NULL) budget->used += size;
    return block + ATT_ICC_HEADER;
}

static void budget_free(cmsContext id, void *pointer) {
    if (pointer == NULL) return;
    unsigned char *block = (unsigned char *)pointer - ATT_ICC_HEADER;
    att_icc_budget *budget = cmsGetContextUserData(id);
    if (budget != NULL) budget->used -= *(size_t *)block;
    free(block);
}

static void *budget_realloc(cmsContext id, void *pointer, cmsUInt32Number size) {
    if (pointer == NULL) return budget_malloc(id, size);
    size_t old = *(size_t *)((unsigned char *)pointer - ATT_ICC_HEADER);
    void *moved = budget_malloc(id, size);
    if (moved == NULL) return NULL;
    memcpy(moved, pointer, old < size ? old : size);
    budget_free(id, pointer);
    return moved;
}

static cmsPluginMemHandler budget_plugin = {{cmsPluginMagicNumber, 2060, cmsPluginMemHandlerSig, NULL},
                                            budget_malloc,
                                            budget_free,
                                            budget_realloc,
                                            NULL,
                                            NULL,
                                            NULL};

// A context whose allocations are counted against `ATT_ICC_MAX_MEMORY`; the budget is freed by
// `release`, after the context.
static cmsContext budgeted(void) {
    att_icc_budget *budget = calloc(1, sizeof *budget);
    if (budget == NULL) return NULL;
    budget->cap = ATT_ICC_MAX_MEMORY;
    cmsContext context = cmsCreateContext(&budget_plugin, budget);
    if (context == NULL) free(budget);
    return context;
}

// Whether the context's budget turned an allocation down.
static int over_budget(cmsContext context) {
    att_icc_budget *budget = context ? cmsGetContextUserData(context) : NULL;
    return budget != NULL && budget->refused;
}

#define ATT_ICC_OVER_BUDGET "the embedded ICC profile's tables would need more than 16 MiB"

static void release(cmsContext context) {
    if (context == NULL) return;
    void *budget = cmsGetContextUserData(context);
    cmsDeleteContext(context);
    free(budget);
}

struct att_icc_transform {
    cmsContext context;
    cmsHTRANSFORM transform;  // NULL when the matrix-shaper path below is used
    int32_t channels;
    // Matrix-shaper profiles (the usual display and camera RGB profiles: Display P3, Adobe RGB,
    // ProPhoto): encoded value -> linear through the profile's curves, one 3x3 matrix to linear
    // sRGB (both sides' D50 colorants), linear -> sRGB-encoded through a 4096-entry table. For
    // these perceptual is colorimetric and both black points are zero, so this is the transform
    // lcms2 builds, in a third of the time (lcms2 goes through a 3D table for 8-bit RGB).
    float linear[3][256];
    float matrix[3][3];
    uint8_t encode[4097];
};

// lcms2 reports through this; a profile it cannot read is simply not used.
static void quiet(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context;
    (void)code;
    (void)text;
}

static int invert(const double m[3][3], double out[3][3]) {
    double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                 m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if (det > -1e-9 && det < 1e-9) return 0;
    out[0][0] = (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det;
    out[0][1] = (m[0][2] * m[2][1] - m[0][1] * m[2][2]) / det;
    out[0][2] = (m[0][1] * m[1][2] - m[0][2] * m[1][1]) / det;
    out[1][0] = (m[1][2] * m[2][0] - m[1][0] * m[2][2]) / det;
    out[1][1] = (m[0][0] * m[2][2] - m[0][2] * m[2][0]) / det;
    out[1][2] = (m[0][2] * m[1][0] - m[0][0] * m[1][2]) / det;
    out[2][0] = (m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det;
    out[2][1] = (m[0][1] * m[2][0] - m[0][0] * m[2][1]) / det;
    out[2][2] = (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det;
    return 1;
}

// The colorants of a matrix-shaper profile as columns (D50, as ICC profiles store them).
static int colorants(cmsHPROFILE profile, double out[3][3]) {
    const cmsTagSignature tags[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    for (int c = 0; c < 3; c++) {
        const cmsCIEXYZ *xyz = cmsReadTag(profile, tags[c]);
        if (xyz == NULL) return 0;
        out[0][c] = xyz->X;
        out[1][c] = xyz->Y;
        out[2][c] = xyz->Z;
    }
    return 1;
}

// Fills the matrix-shaper path when `input` is a matrix-shaper profile without LUT-based
// tables (those would take precedence in lcms2); 0 when it is not one.
static int matrix_shaper(att_icc_transform *t, cmsContext context, cmsHPROFILE input) {
    if (!cmsIsMatrixShaper(input) || cmsIsTag(input, cmsSigAToB0Tag) || cmsIsTag(input, cmsSigAToB1Tag) ||
        cmsIsTag(input, cmsSigDToB0Tag)) {
        return 0;
    }
    cmsHPROFILE srgb = cmsCreate_sRGBProfileTHR(context);
    if (srgb == NULL) return 0;
    double in[3][3], out[3][3], to_srgb[3][3];
    int ok = colorants(input, in) && colorants(srgb, out) && invert(out, to_srgb);
    cmsCloseProfile(srgb);
    if (!ok) return 0;
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) {
            double sum = 0;
            for (int k = 0; k < 3; k++) sum += to_srgb[r][k] * in[k][c];
            t->matrix[r][c] = (float)sum;
        }
    }
    const cmsTagSignature curves[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    for (int c = 0; c < 3; c++) {
        const cmsToneCurve *curve = cmsReadTag(input, curves[c]);
        if (curve == NULL) return 0;
        for (int v = 0; v < 256; v++) {
            float x = cmsEvalToneCurveFloat(curve, (float)v / 255.0f);
            t->linear[c][v] = x < 0 ? 0 : x > 1 ? 1 : x;
        }
    }
    for (int i = 0; i <= 4096; i++) {
        double x = (double)i / 4096.0;
        double y = x <= 0.0031308 ? 12.92 * x : 1.055 * pow(x, 1 / 2.4) - 0.055;
        t->encode[i] = (uint8_t)(y * 255.0 + 0.5);
    }
    return 1;
}

att_icc_transform *att_icc_new(const uint8_t *profile, size_t length, int32_t channels, int32_t allow_fast,
                               att_error *error) {
    if (profile == NULL || length < 132 || length > ATT_ICC_MAX_BYTES || (channels != 3 && channels != 4)) {
        if (error) {
            error->status = ATT_ERR_CORRUPT;
            snprintf(error->message, sizeof error->message, "ICC profile of %zu bytes not used", length);
        }
        return NULL;
    }
    cmsContext context = budgeted();
    if (context == NULL) return NULL;
    cmsSetLogErrorHandlerTHR(context, quiet);
    cmsHPROFILE input = cmsOpenProfileFromMemTHR(context, profile, (cmsUInt32Number)length);
    const char *problem = NULL;
    if (input == NULL) {
        problem = over_budget(context) ? ATT_ICC_OVER_BUDGET : "the embedded ICC profile cannot be read";
    } else if (cmsGetColorSpace(input) != cmsSigRgbData) {
        problem = "the embedded ICC profile is not an RGB profile";
    }
    att_icc_transform *fast = problem || !allow_fast ? NULL : calloc(1, sizeof *fast);
    if (fast != NULL && matrix_shaper(fast, context, input)) {
        cmsCloseProfile(input);
        fast->context = context;
        fast->channels = channels;
        return fast;
    }
    free(fast);
    cmsHPROFILE output = problem ? NULL : cmsCreate_sRGBProfileTHR(context);
    cmsHTRANSFORM transform = NULL;
    if (!problem) {
        cmsUInt32Number format = channels == 4 ? TYPE_RGBA_8 : TYPE_RGB_8;
        // Perceptual with black-point compensation; alpha copied as it is.
        transform = cmsCreateTransformTHR(context, input, format, output, format, INTENT_PERCEPTUAL,
                                          cmsFLAGS_BLACKPOINTCOMPENSATION | (channels == 4 ? cmsFLAGS_COPY_ALPHA : 0));
        if (transform == NULL) {
            problem = over_budget(context) ? ATT_ICC_OVER_BUDGET : "no transform from the embedded ICC profile to sRGB";
        }
    }
    if (input) cmsCloseProfile(input);
    if (output) cmsCloseProfile(output);
    if (problem) {
        if (error) {
            error->status = ATT_ERR_CORRUPT;
            snprintf(error->message, sizeof error->message, "%s", problem);
        }
        release(context);
        return NULL;
    }
    att_icc_transform *t = calloc(1, sizeof *t);
    if (t == NULL) {
        cmsDeleteTransform(transform);
        release(context);
        return NULL;
    }
    t->context = context;
    t->transform = transform;
    t->channels = channels;
    return t;
}

static inline uint8_t encoded(const att_icc_transform *t, float linear) {
    if (!(linear > 0)) return 0;
    if (linear >= 1) return 255;
    return t->encode[(int)(linear * 4096.0f + 0.5f)];
}

att_icc_transform *att_icc_new_cmyk(const uint8_t *profile, size_t length, int32_t inverted, att_error *error) {
    const char *problem = NULL;
    if (profile == NULL || length < 132 || length > ATT_ICC_MAX_BYTES)
        problem = "the ICC profile's size is out of range";
    cmsContext context = problem ? NULL : budgeted();
    if (!problem && context == NULL) problem = "lcms2 could not make a context";
    cmsHPROFILE input = NULL, output = NULL;
    cmsHTRANSFORM transform = NULL;
    if (!problem) {
        cmsSetLogErrorHandlerTHR(context, quiet);
        input = cmsOpenProfileFromMemTHR(context, profile, (cmsUInt32Number)length);
        if (input == NULL) {
            problem = over_budget(context) ? ATT_ICC_OVER_BUDGET : "the embedded ICC profile cannot be read";
        } else if (cmsGetColorSpace(input) != cmsSigCmykData) {
            problem = "the embedded ICC profile is not a CMYK profile";
        }
    }
    if (!problem) {
        output = cmsCreate_sRGBProfileTHR(context);
        // Adobe's CMYK JPEGs store 255 - ink: lcms2's reversed CMYK reads them as they are.
        transform = cmsCreateTransformTHR(context, input, inverted ? TYPE_CMYK_8_REV : TYPE_CMYK_8, output, TYPE_RGB_8,
                                          INTENT_PERCEPTUAL, cmsFLAGS_BLACKPOINTCOMPENSATION);
        if (transform == NULL) {
            problem =
                over_budget(context) ? ATT_ICC_OVER_BUDGET : "no transform from the embedded CMYK profile to sRGB";
        }
    }
    if (input) cmsCloseProfile(input);
    if (output) cmsCloseProfile(output);
    att_icc_transform *t = problem ? NULL : calloc(1, sizeof *t);
    if (t == NULL) {
        if (error) {
            error->status = ATT_ERR_CORRUPT;
            snprintf(error->message, sizeof error->message, "%s", problem ? problem : "out of memory");
        }
        if (transform) cmsDeleteTransform(transform);
        if (context) release(context);
        return NULL;
    }
    t->context = context;
    t->transform = transform;
    t->channels = 4;
    return t;
}

void att_icc_convert(att_icc_transform *t, const uint8_t *in, uint8_t *out, size_t count) {
    if (t && t->transform && count > 0) cmsDoTransform(t->transform, in, out, (cmsUInt32Number)count);
}

void att_icc_apply(att_icc_transform *t, uint8_t *pixels, size_t count) {
    if (!t || count == 0) return;
    if (t->transform) {
        cmsDoTransform(t->transform, pixels, pixels, (cmsUInt32Number)count);
        return;
    }
    const int step = t->channels;
    for (size_t i = 0; i < count; i++, pixels += step) {
        float r = t->linear[0][pixels[0]], g = t->linear[1][pixels[1]], b = t->linear[2][pixels[2]];
        pixels[0] = encoded(t, t->matrix[0][0] * r + t->matrix[0][1] * g + t->matrix[0][2] * b);
        pixels[1] = encoded(t, t->matrix[1][0] * r + t->matrix[1][1] * g + t->matrix[1][2] * b);
        pixels[2] = encoded(t, t->matrix[2][0] * r + t->matrix[2][1] * g + t->matrix[2][2] * b);
    }
}

void att_icc_free(att_icc_transform *t) {
    if (!t) return;
    if (t->transform) cmsDeleteTransform(t->transform);
    release(t->context);
    free(t);
}

uint8_t *att_icc_rgb_profile(const double xy[8], int32_t transfer, double gamma, size_t *length) {
    *length = 0;
    cmsContext context = budgeted();
    if (context == NULL) return NULL;
    cmsSetLogErrorHandlerTHR(context, quiet);
    cmsCIExyY white = {xy[6], xy[7], 1.0};
    cmsCIExyYTRIPLE primaries = {{xy[0], xy[1], 1.0}, {xy[2], xy[3], 1.0}, {xy[4], xy[5], 1.0}};
    cmsToneCurve *curve = NULL;
    switch (transfer) {
    case 0: {  // sRGB (IEC 61966-2-1)
        double p[5] = {2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045};
        curve = cmsBuildParametricToneCurve(context, 4, p);
        break;
    }
    case 1: {  // BT.709 / BT.601 / BT.2020 (the camera curve, inverted for display)
        double p[5] = {1.0 / 0.45, 1.0 / 1.099, 0.099 / 1.099, 1.0 / 4.5, 0.081};
        curve = cmsBuildParametricToneCurve(context, 4, p);
        break;
    }
    case 2: curve = cmsBuildGamma(context, 2.2); break;
    case 3: curve = cmsBuildGamma(context, 2.8); break;
    case 4: curve = cmsBuildGamma(context, 1.0); break;
    case 5:
        if (gamma > 0.2 && gamma < 5) curve = cmsBuildGamma(context, gamma);
        break;
    default: break;
    }
    uint8_t *out = NULL;
    if (curve != NULL) {
        cmsToneCurve *curves[3] = {curve, curve, curve};
        cmsHPROFILE profile = cmsCreateRGBProfileTHR(context, &white, &primaries, curves);
        cmsUInt32Number size = 0;
        if (profile != NULL && cmsSaveProfileToMem(profile, NULL, &size) && size > 0 && size <= ATT_ICC_MAX_BYTES) {
            out = malloc(size);
            if (out != NULL && cmsSaveProfileToMem(profile, out, &size)) {
                *length = size;
            } else {
                free(out);
                out = NULL;
            }
        }
        if (profile != NULL) cmsCloseProfile(profile);
        cmsFreeToneCurve(curve);
    }
    release(context);
    return out;
}
