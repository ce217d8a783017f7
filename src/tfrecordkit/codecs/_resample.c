/* Bilinear resize of uint8 images with tf.image.resize's arithmetic, without the GIL.
 *
 * The operations, and their order, are those of codecs/_resize.py (`_resize_float`), which are
 * those of TensorFlow's bilinear kernel with half-pixel centres and no antialiasing: in
 * float32, per output position the source centre (x + 0.5) * scale - 0.5, the lower index
 * max(floor, 0), the upper min(ceil, size - 1) and the weight centre - floor; a row
 * interpolated in x as left + (right - left) * wx, the two rows in y as
 * top + (bottom - top) * wy; then rounded half to even and saturated to uint8. Built with
 * -ffp-contract=off so the compiler fuses no multiply-add: the bits equal NumPy's.
 *
 * Each source row is interpolated in x once and kept while consecutive output rows use it.
 * The output is written into a caller's array (a batch's row, or a window of it), optionally
 * mirrored left to right and scaled to float32 as (v / 255 - mean) / std.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_ssize_t *lower; /* element offsets of the lower source position (index * channels) */
    Py_ssize_t *upper;
    float *lerp;
    Py_ssize_t *lower_index; /* plain indices (rows) */
    Py_ssize_t *upper_index;
} Weights;

static int weights_make(Weights *w, Py_ssize_t in_size, Py_ssize_t out_size, Py_ssize_t step) {
    w->lower = malloc(sizeof(Py_ssize_t) * out_size);
    w->upper = malloc(sizeof(Py_ssize_t) * out_size);
    w->lower_index = malloc(sizeof(Py_ssize_t) * out_size);
    w->upper_index = malloc(sizeof(Py_ssize_t) * out_size);
    w->lerp = malloc(sizeof(float) * out_size);
    if (!w->lower || !w->upper || !w->lerp || !w->lower_index || !w->upper_index) return 0;
    const float scale = (float)in_size / (float)out_size;
    for (Py_ssize_t i = 0; i < out_size; i++) {
        const float centre = ((float)i + 0.5f) * scale - 0.5f;
        const float below = floorf(centre);
        Py_ssize_t lo = (Py_ssize_t)below, hi = (Py_ssize_t)ceilf(centre);
        if (lo < 0) lo = 0;
        if (hi > in_size - 1) hi = in_size - 1;
        w->lower_index[i] = lo;
        w->upper_index[i] = hi;
        w->lower[i] = lo * step;
        w->upper[i] = hi * step;
        w->lerp[i] = centre - below;
    }
    return 1;
}

static void weights_free(Weights *w) {
    free(w->lower);
    free(w->upper);
    free(w->lerp);
    free(w->lower_index);
    free(w->upper_index);
}

/* One source row interpolated in x: out[x * c + k] for every output column x. Inlined into
 * copies for 1, 3 and 4 channels, where the constant channel count lets the loops unroll. */
static inline __attribute__((always_inline)) void interpolate_row_n(const uint8_t *row, const Weights *xw, Py_ssize_t out_w,
                            Py_ssize_t c, float *out) {
    for (Py_ssize_t x = 0; x < out_w; x++) {
        const uint8_t *left = row + xw->lower[x];
        const uint8_t *right = row + xw->upper[x];
        const float wx = xw->lerp[x];
        for (Py_ssize_t k = 0; k < c; k++) {
            const float l = (float)left[k];
            const float diff = (float)right[k] - l;
            const float moved = diff * wx;
            out[x * c + k] = l + moved;
        }
    }
}

static void interpolate_row(const uint8_t *row, const Weights *xw, Py_ssize_t out_w,
                            Py_ssize_t c, float *out) {
    switch (c) {
    case 1: interpolate_row_n(row, xw, out_w, 1, out); break;
    case 3: interpolate_row_n(row, xw, out_w, 3, out); break;
    case 4: interpolate_row_n(row, xw, out_w, 4, out); break;
    default: interpolate_row_n(row, xw, out_w, c, out);
    }
}

/* Rounded half to even (as np.rint and tf.round), then saturated. Adding and taking away 2^23
 * rounds in the default mode for |v| < 2^22 without a libm call (the values here lie within
 * a rounding error of [0, 255]); strict IEEE semantics keep the compiler from folding it. */
static inline uint8_t round_saturate(float v) {
    const float rounded = (v + 8388608.0f) - 8388608.0f;
    if (!(rounded > 0.0f)) return 0;
    if (rounded >= 255.0f) return 255;
    return (uint8_t)rounded;
}

typedef struct {
    const uint8_t *src;
    Py_ssize_t src_h, src_w, channels, src_row_stride;
    char *dst;
    Py_ssize_t dst_h, dst_w, dst_row_stride;
    int to_float, flip;
    const float *mean; /* `channels` values, or NULL */
    const float *std;
} Job;

/* The two x-interpolated rows blended in y into one output row. */
static inline __attribute__((always_inline)) void blend_n(const Job *job, const float *top,
                                                         const float *bottom, float wy,
                                                         char *out_row, Py_ssize_t c) {
    const Py_ssize_t out_w = job->dst_w;
    if (!job->to_float && !job->flip) {
        uint8_t *out = (uint8_t *)out_row;
        for (Py_ssize_t i = 0; i < out_w * c; i++) {
            const float diff = bottom[i] - top[i];
            const float moved = diff * wy;
            out[i] = round_saturate(top[i] + moved);
        }
        return;
    }
    for (Py_ssize_t x = 0; x < out_w; x++) {
        const Py_ssize_t to = (job->flip ? out_w - 1 - x : x) * c;
        for (Py_ssize_t k = 0; k < c; k++) {
            const float diff = bottom[x * c + k] - top[x * c + k];
            const float moved = diff * wy;
            const uint8_t v = round_saturate(top[x * c + k] + moved);
            if (job->to_float) {
                float f = (float)v / 255.0f;
                if (job->mean) f = f - job->mean[k];
                if (job->std) f = f / job->std[k];
                ((float *)out_row)[to + k] = f;
            } else {
                ((uint8_t *)out_row)[to + k] = v;
            }
        }
    }
}

static void blend_rows(const Job *job, const float *top, const float *bottom, float wy,
                       char *out_row) {
    switch (job->channels) {
    case 1: blend_n(job, top, bottom, wy, out_row, 1); break;
    case 3: blend_n(job, top, bottom, wy, out_row, 3); break;
    case 4: blend_n(job, top, bottom, wy, out_row, 4); break;
    default: blend_n(job, top, bottom, wy, out_row, job->channels);
    }
}

/* Returns 0 when out of memory. */
static int run(const Job *job) {
    const Py_ssize_t c = job->channels, out_w = job->dst_w, row_len = out_w * c;
    Weights xw = {0}, yw = {0};
    float *rows = malloc(sizeof(float) * row_len * 2);
    int ok = rows && weights_make(&xw, job->src_w, out_w, c) &&
             weights_make(&yw, job->src_h, job->dst_h, 1);
    if (ok) {
        float *cached[2] = {rows, rows + row_len};
        Py_ssize_t cached_row[2] = {-1, -1};
        for (Py_ssize_t y = 0; y < job->dst_h; y++) {
            const Py_ssize_t want[2] = {yw.lower_index[y], yw.upper_index[y]};
            int slot[2];
            for (int t = 0; t < 2; t++) {
                slot[t] = cached_row[0] == want[t] ? 0 : cached_row[1] == want[t] ? 1 : -1;
                if (slot[t] >= 0) continue;
                /* Into the slot that holds neither row this output row needs. */
                slot[t] = t == 1 ? 1 - slot[0] : cached_row[0] == want[1] ? 1 : 0;
                interpolate_row(job->src + want[t] * job->src_row_stride, &xw, out_w, c,
                                cached[slot[t]]);
                cached_row[slot[t]] = want[t];
            }
            const float *line[2] = {cached[slot[0]], cached[slot[1]]};
            blend_rows(job, line[0], line[1], yw.lerp[y], job->dst + y * job->dst_row_stride);
        }
    }
    free(rows);
    weights_free(&xw);
    weights_free(&yw);
    return ok;
}

/* A [h, w, c] view whose rows may be apart (a window of a larger array) but whose pixels in
 * a row are contiguous. */
static int check_image(Py_buffer *view, const char *what, char fmt) {
    const char *format = view->format ? view->format : "B";
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (view->ndim != 3 || format[0] != fmt || format[1] != '\0') {
        PyErr_Format(PyExc_ValueError, "%s must be a 3-dimensional %s array", what,
                     fmt == 'B' ? "uint8" : "float32");
        return 0;
    }
    const Py_ssize_t item = view->itemsize;
    if ((view->shape[2] > 1 && view->strides[2] != item) ||
        (view->shape[1] > 1 && view->strides[1] != item * view->shape[2]) ||
        (view->shape[0] > 1 && view->strides[0] < view->shape[1] * view->shape[2] * item)) {
        PyErr_Format(PyExc_ValueError, "%s must hold each row's pixels contiguously", what);
        return 0;
    }
    return 1;
}

static int read_per_channel(PyObject *obj, Py_ssize_t channels, float *out, const char *what) {
    if (obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return -1;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != 1 && n != channels) {
        PyErr_Format(PyExc_ValueError, "%s has %zd values for %zd channels", what, n, channels);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t k = 0; k < channels; k++) {
        const double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, n == 1 ? 0 : k));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[k] = (float)v;
    }
    Py_DECREF(seq);
    return 1;
}

PyDoc_STRVAR(resize_into_doc,
             "resize_into(src, dst, flip=False, mean=None, std=None)\n--\n\n"
             "Resize uint8 [h, w, c] `src` into `dst` ([H, W, c], uint8, or float32 scaled to\n"
             "(v / 255 - mean) / std), bilinear with half-pixel centres, without the GIL.");

static PyObject *resize_into(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"src", "dst", "flip", "mean", "std", NULL};
    PyObject *src_obj, *dst_obj, *mean_obj = Py_None, *std_obj = Py_None;
    int flip = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pOO", names, &src_obj, &dst_obj, &flip,
                                     &mean_obj, &std_obj))
        return NULL;
    Py_buffer src, dst;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_STRIDES | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *result = NULL;
    float mean[16], std[16];
    int has_mean = 0, has_std = 0;
    const char *dst_format = dst.format ? dst.format : "B";
    const int to_float = strchr(dst_format, 'f') != NULL;
    if (!check_image(&src, "src", 'B') || !check_image(&dst, "dst", to_float ? 'f' : 'B'))
        goto done;
    if (src.shape[2] != dst.shape[2] || src.shape[2] < 1 || src.shape[2] > 16) {
        PyErr_Format(PyExc_ValueError, "src has %zd channels, dst %zd", src.shape[2],
                     dst.shape[2]);
        goto done;
    }
    if (src.shape[0] < 1 || src.shape[1] < 1) {
        PyErr_SetString(PyExc_ValueError, "src is empty");
        goto done;
    }
    if ((has_mean = read_per_channel(mean_obj, src.shape[2], mean, "mean")) < 0 ||
        (has_std = read_per_channel(std_obj, src.shape[2], std, "std")) < 0)
        goto done;
    if ((has_mean || has_std) && !to_float) {
        PyErr_SetString(PyExc_ValueError, "mean and std need a float32 dst");
        goto done;
    }
    if (dst.shape[0] == 0 || dst.shape[1] == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Job job = {
        .src = src.buf, .src_h = src.shape[0], .src_w = src.shape[1], .channels = src.shape[2],
        .src_row_stride = src.strides[0], .dst = dst.buf, .dst_h = dst.shape[0],
        .dst_w = dst.shape[1], .dst_row_stride = dst.strides[0], .to_float = to_float,
        .flip = flip, .mean = has_mean ? mean : NULL, .std = has_std ? std : NULL,
    };
    int ok;
    Py_BEGIN_ALLOW_THREADS ok = run(&job);
    Py_END_ALLOW_THREADS if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

static PyMethodDef methods[] = {
    {"resize_into", (PyCFunction)(void (*)(void))resize_into, METH_VARARGS | METH_KEYWORDS,
     resize_into_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_resample",
    "Bilinear resize with tf.image.resize's arithmetic, into a caller's array, without the GIL.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__resample(void) { return PyModule_Create(&module); }
