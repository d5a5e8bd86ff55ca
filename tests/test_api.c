/* The core API on the CPU: statuses, contexts, tensors, views, transfers,
** and every bad-input case returning a status and a message while the
** context stays usable. Runs everywhere. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"
#include "m40/quant.h"

#include "internal.h" /* ctx fields the rules tests look at */
#include "m40/graph.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;
/* The message of the last EXPECTed error (the calls still_usable makes
** succeed, and a call that succeeds clears the context's message). */
static char last_err[512];

/* After an expected error: a message was recorded and the context works. */
static void still_usable(const char *what) {
    m40t_checks++;
    snprintf(last_err, sizeof last_err, "%s", m40_errmsg(C));
    if (m40_errmsg(C)[0] == '\0') {
        m40t_failures++;
        fprintf(stderr, "%s: no error message recorded\n", what);
    }
    int64_t s[1] = {3};
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s, &t), M40_OK);
    CHECK_ST(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, 0, 1, t), M40_OK);
    m40_tensor_destroy(t);
}

#define EXPECT(call, want)                                                       \
    do {                                                                         \
        CHECK_ST(call, want);                                                    \
        still_usable(#call);                                                     \
    } while (0)

static void test_status(void) {
    for (int s = 0; s < M40_STATUS_COUNT; s++) {
        const char *a = m40_status_str((m40_status)s);
        CHECK(a && a[0]);
        for (int t = 0; t < s; t++) CHECK(strcmp(a, m40_status_str((m40_status)t)) != 0);
    }
    CHECK(strcmp(m40_status_str((m40_status)9999), "unknown status") == 0);
    CHECK(strcmp(m40_version(), M40_VERSION_STRING) == 0);
    CHECK(m40_build_info()[0] != '\0');
}

static void test_ctx(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    m40_ctx *c = NULL;
    CHECK_ST(m40_ctx_create(&d, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_ctx_create(NULL, &c), M40_ERR_INVALID_ARG);
    CHECK(c && strstr(m40_errmsg(c), "NULL"));
    /* a failed context refuses work with a clear status */
    m40_tensor *t = NULL;
    int64_t s[1] = {4};
    CHECK_ST(m40_tensor_new(c, M40_DTYPE_F32, 1, s, &t), M40_ERR_STATE);
    m40_ctx_destroy(c);
    m40_ctx_desc small = d;
    small.struct_size = 4;
    CHECK_ST(m40_ctx_create(&small, &c), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(c), "struct_size"));
    m40_ctx_destroy(c);
    /* bad ordinals */
    d.device = -7;
    CHECK_ST(m40_ctx_create(&d, &c), M40_ERR_NO_DEVICE);
    CHECK(strstr(m40_errmsg(c), "-7") != NULL);
    m40_ctx_destroy(c);
    d.device = 100000;
    CHECK_ST(m40_ctx_create(&d, &c), M40_ERR_NO_DEVICE);
    CHECK(m40_errmsg(c)[0] != '\0');
    m40_ctx_destroy(c);
    /* device 0: works with a GPU, else a clear NO_DEVICE */
    d.device = 0;
    m40_status st = m40_ctx_create(&d, &c);
    CHECK(st == M40_OK || st == M40_ERR_NO_DEVICE);
    printf("device 0: %s%s%s\n", m40_status_str(st), st ? ": " : "", st ? m40_errmsg(c) : "");
    m40_ctx_destroy(c);
    m40_ctx_destroy(NULL);
    CHECK(strcmp(m40_errmsg(NULL), "no context") == 0);
    /* CPU info */
    m40_device_info info;
    CHECK_ST(m40_ctx_get_info(C, &info), M40_OK);
    CHECK(info.is_gpu == 0 && info.device == M40_DEVICE_CPU);
    CHECK_ST(m40_ctx_get_info(C, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_ctx_sync(C), M40_OK);
    CHECK(m40_ctx_get_stream(C) == NULL);
}

/* A log callback sees the messages the library would otherwise drop. */
static int log_calls;
static void on_log(void *user, m40_log_level lv, const char *msg) {
    (void)lv;
    (void)msg;
    ++*(int *)user;
}

static void test_log(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    d.log = on_log;
    d.log_user = &log_calls;
    d.log_level = M40_LOG_DEBUG;
    m40_ctx *c;
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    CHECK_ST(m40_scale(c, 1.0f, NULL, NULL), M40_ERR_INVALID_ARG);
    CHECK(log_calls > 0);
    m40_ctx_destroy(c);
}

static void test_tensors(void) {
    m40_tensor_desc d;
    int64_t s5[5] = {1, 2, 3, 4, 5}, neg[2] = {2, -1}, s2[2] = {4, 6};
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 5, s5), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, neg), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_desc_make(&d, (m40_dtype)42, 2, s2), M40_ERR_DTYPE);
    CHECK_ST(m40_tensor_desc_make(NULL, M40_DTYPE_F32, 2, s2), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s2), M40_OK);
    CHECK(d.stride[0] == 6 && d.stride[1] == 1 && m40_tensor_desc_is_contiguous(&d));
    CHECK(m40_tensor_desc_numel(&d) == 24);

    m40_tensor *t = NULL, *v = NULL;
    m40_tensor_desc too_many = d;
    too_many.ndim = 5;
    EXPECT(m40_tensor_create(C, &too_many, M40_LOC_HOST, &t), M40_ERR_INVALID_ARG);
    CHECK(strstr(last_err, "dims") != NULL);
    EXPECT(m40_tensor_create(C, NULL, M40_LOC_HOST, &t), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_create(C, &d, M40_LOC_HOST, NULL), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_create(C, &d, M40_LOC_DEVICE, &t), M40_ERR_NO_DEVICE);
    EXPECT(m40_tensor_create(C, &d, (m40_location)9, &t), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_new(C, M40_DTYPE_F32, 5, s5, &t), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_create(C, &d, M40_LOC_HOST, &t), M40_OK);
    CHECK(m40_tensor_get_nbytes(t) == 24 * 4 && m40_tensor_get_location(t) == M40_LOC_HOST);

    /* upload/download round trip and size checks */
    float src[24], dst[24];
    for (int i = 0; i < 24; i++) src[i] = (float)i * 0.5f - 3.0f;
    CHECK_ST(m40_tensor_upload(C, t, src, sizeof src), M40_OK);
    CHECK_ST(m40_tensor_download(C, t, dst, sizeof dst), M40_OK);
    CHECK(memcmp(src, dst, sizeof src) == 0);
    EXPECT(m40_tensor_upload(C, t, src, 10), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_upload(C, t, NULL, sizeof src), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_download(C, NULL, dst, sizeof dst), M40_ERR_INVALID_ARG);

    /* views: row 2 of [4,6]; the transpose; bounds and dtype checks */
    m40_tensor_desc row = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {6}, .stride = {1}};
    CHECK_ST(m40_tensor_view(C, t, &row, 12, &v), M40_OK);
    float r[6];
    CHECK_ST(m40_tensor_download(C, v, r, sizeof r), M40_OK);
    CHECK(memcmp(r, src + 12, sizeof r) == 0);
    m40_tensor_destroy(v);
    EXPECT(m40_tensor_view(C, t, &row, 19, &v), M40_ERR_INVALID_ARG);
    CHECK(strstr(last_err, "storage") != NULL);
    EXPECT(m40_tensor_view(C, t, &row, -1, &v), M40_ERR_INVALID_ARG);
    m40_tensor_desc hrow = row;
    hrow.dtype = M40_DTYPE_F16;
    EXPECT(m40_tensor_view(C, t, &hrow, 0, &v), M40_ERR_DTYPE);
    m40_tensor_desc tr = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {6, 4}, .stride = {1, 6}};
    CHECK_ST(m40_tensor_view(C, t, &tr, 0, &v), M40_OK);
    CHECK(!m40_tensor_desc_is_contiguous(m40_tensor_get_desc(v)));
    EXPECT(m40_tensor_download(C, v, dst, sizeof dst), M40_ERR_UNSUPPORTED);
    int64_t s64[2] = {6, 4};
    m40_tensor *u;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s64, &u), M40_OK);
    CHECK_ST(m40_tensor_copy(C, u, v), M40_OK);
    CHECK_ST(m40_tensor_download(C, u, dst, sizeof dst), M40_OK);
    int ok = 1;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) ok &= dst[i * 4 + j] == src[j * 6 + i];
    CHECK(ok);
    EXPECT(m40_tensor_copy(C, t, u), M40_ERR_SHAPE);
    m40_tensor *h;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F16, 2, s2, &h), M40_OK);
    EXPECT(m40_tensor_copy(C, h, t), M40_ERR_DTYPE);
    EXPECT(m40_tensor_copy(C, NULL, t), M40_ERR_INVALID_ARG);

    /* wrap caller memory */
    m40_tensor *w;
    CHECK_ST(m40_tensor_wrap(C, &d, M40_LOC_HOST, src, &w), M40_OK);
    CHECK(m40_tensor_get_data(w) == src);
    m40_tensor *w2 = NULL;
    EXPECT(m40_tensor_wrap(C, &d, M40_LOC_HOST, NULL, &w2), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_wrap(C, &d, M40_LOC_DEVICE, src, &w2), M40_ERR_NO_DEVICE);
    CHECK(w2 == NULL);

    /* crc: same seed same crc, another seed another */
    uint32_t c1, c2, c3;
    CHECK_ST(m40_fill_random(C, 9, M40_RANDOM_UNIFORM, -1, 1, u), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c1), M40_OK);
    CHECK_ST(m40_fill_random(C, 9, M40_RANDOM_UNIFORM, -1, 1, u), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c2), M40_OK);
    CHECK_ST(m40_fill_random(C, 10, M40_RANDOM_UNIFORM, -1, 1, u), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c3), M40_OK);
    CHECK(c1 == c2 && c1 != c3);

    m40_tensor_destroy(w);
    m40_tensor_destroy(h);
    m40_tensor_destroy(u);
    m40_tensor_destroy(v);
    m40_tensor_destroy(t);
    m40_tensor_destroy(NULL);
}

static void test_op_errors(void) {
    int64_t s[2] = {3, 5}, s35[2] = {5, 3}, s1[1] = {5}, s4[1] = {4};
    m40_tensor *a, *b, *y, *h, *i8, *bias, *wrong;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &a), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s35, &b), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &y), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F16, 2, s, &h), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_I8, 2, s, &i8), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s1, &bias), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s4, &wrong), M40_OK);
    CHECK_ST(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, -1, 1, a), M40_OK);
    CHECK_ST(m40_fill_random(C, 2, M40_RANDOM_UNIFORM, -1, 1, b), M40_OK);

    EXPECT(m40_add(C, NULL, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_add(C, a, b, y), M40_ERR_SHAPE);
    EXPECT(m40_add(C, a, wrong, y), M40_ERR_SHAPE);
    EXPECT(m40_mul(C, a, h, y), M40_ERR_DTYPE);
    CHECK_ST(m40_add(NULL, a, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_scale(C, 2.0f, a, b), M40_ERR_SHAPE);
    EXPECT(m40_scale(C, 2.0f, h, h), M40_ERR_DTYPE);
    EXPECT(m40_activation(C, (m40_act)17, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_activation(C, M40_ACT_RELU, a, NULL), M40_ERR_INVALID_ARG);
    EXPECT(m40_softmax(C, a, b), M40_ERR_SHAPE);
    EXPECT(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, 0, 1, i8), M40_ERR_DTYPE);
    EXPECT(m40_fill_random(C, 1, (m40_random_dist)5, 0, 1, a), M40_ERR_INVALID_ARG);
    EXPECT(m40_convert(C, i8, y), M40_ERR_DTYPE);
    EXPECT(m40_convert(C, a, b), M40_ERR_SHAPE);
    m40_tensor_desc tr = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {5, 3}, .stride = {1, 5}};
    m40_tensor *v;
    CHECK_ST(m40_tensor_view(C, a, &tr, 0, &v), M40_OK);
    EXPECT(m40_softmax(C, v, b), M40_ERR_UNSUPPORTED);
    /* matmul: x [3,5] · w[N=?,5]ᵀ */
    int64_t ws[2] = {4, 5}, ys[2] = {3, 4}, yb[2] = {3, 6};
    m40_tensor *w, *out, *outbad;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, ws, &w), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, ys, &out), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, yb, &outbad), M40_OK);
    CHECK_ST(m40_fill_random(C, 3, M40_RANDOM_UNIFORM, -1, 1, w), M40_OK);
    CHECK_ST(m40_matmul(C, a, w, NULL, out), M40_OK);
    EXPECT(m40_matmul(C, a, w, NULL, outbad), M40_ERR_SHAPE);
    EXPECT(m40_matmul(C, a, b, NULL, out), M40_ERR_SHAPE);
    EXPECT(m40_matmul(C, a, w, bias, out), M40_ERR_SHAPE); /* bias [5] for N=4 */
    CHECK_ST(m40_matmul(C, a, w, wrong, out), M40_OK);        /* bias [4] fits */
    EXPECT(m40_matmul(C, h, w, NULL, out), M40_ERR_DTYPE);
    EXPECT(m40_matmul(C, v, w, NULL, out), M40_ERR_SHAPE);
    m40_tensor *x5;
    m40_tensor_desc xv = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {3, 5}, .stride = {10, 1}};
    int64_t big[2] = {6, 5};
    m40_tensor *bigt;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, big, &bigt), M40_OK);
    CHECK_ST(m40_tensor_view(C, bigt, &xv, 0, &x5), M40_OK);
    EXPECT(m40_matmul(C, x5, w, NULL, out), M40_ERR_UNSUPPORTED);

    m40_tensor *ts[] = {a, b, y, h, i8, bias, wrong, v, w, out, outbad, x5, bigt};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) m40_tensor_destroy(ts[i]);
}

/* Issue 15: the probe's cases, each one closed. Sizes that wrap are
** refused with a message; views stay inside their base for any int64. */
static void test_hostile_sizes(void) {
    m40_tensor *t = NULL;
    m40_tensor_desc d;
    /* {2^62} f32 is 2^64 bytes: used to wrap to 0 and return a 1-byte buffer */
    int64_t s62[1] = {(int64_t)1 << 62}, wrap[2] = {(int64_t)1 << 32, ((int64_t)1 << 32) + 1};
    int64_t wrap4[4] = {65536, 65536, 65536, 65537}, edge[1] = {(int64_t)1 << 60};
    EXPECT(m40_tensor_new(C, M40_DTYPE_F32, 1, s62, &t), M40_ERR_INVALID_ARG);
    CHECK(t == NULL && strstr(last_err, "2^62"));
    EXPECT(m40_tensor_new(C, M40_DTYPE_I8, 2, wrap, &t), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_new(C, M40_DTYPE_F16, 4, wrap4, &t), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, s62), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_I8, 4, wrap4), M40_ERR_INVALID_ARG);
    /* exactly 2^62 bytes is within the rule (the allocation then fails) */
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, edge), M40_OK);
    edge[0]++;
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, edge), M40_ERR_INVALID_ARG);
    /* a zero extent does not excuse a wrapping product elsewhere */
    int64_t zwrap[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 3, zwrap), M40_ERR_INVALID_ARG);
    CHECK(m40_tensor_desc_numel(NULL) == -1);
    m40_tensor_desc raw = {.dtype = M40_DTYPE_F32, .ndim = 4,
                           .shape = {INT64_MAX, INT64_MAX, 2, 2}};
    CHECK(m40_tensor_desc_numel(&raw) == -1); /* unchecked desc: -1, not a wrapped product */
    /* create: strides ignored, size rule applied */
    raw.ndim = 2;
    EXPECT(m40_tensor_create(C, &raw, M40_LOC_HOST, &t), M40_ERR_INVALID_ARG);

    /* views: offsets and strides whose byte counts wrap */
    int64_t s16[1] = {16};
    m40_tensor *base = NULL, *v = (m40_tensor *)&d;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s16, &base), M40_OK);
    m40_tensor_desc one = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {1}, .stride = {1}};
    /* 2^62 * 4 wraps to 0: used to give a view at the base's start */
    EXPECT(m40_tensor_view(C, base, &one, (int64_t)1 << 62, &v), M40_ERR_INVALID_ARG);
    CHECK(v == NULL);
    EXPECT(m40_tensor_view(C, base, &one, INT64_MAX, &v), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_view(C, base, &one, INT64_MIN, &v), M40_ERR_INVALID_ARG);
    /* (2^62 + 1) * 4 wraps to 4: once a view at element 1 */
    EXPECT(m40_tensor_view(C, base, &one, ((int64_t)1 << 62) + 1, &v), M40_ERR_INVALID_ARG);
    m40_tensor_desc st = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {2, 2},
                          .stride = {(int64_t)1 << 62, 1}};
    EXPECT(m40_tensor_view(C, base, &st, 0, &v), M40_ERR_INVALID_ARG); /* stride x extent wraps */
    st.stride[0] = INT64_MAX;
    EXPECT(m40_tensor_view(C, base, &st, 0, &v), M40_ERR_INVALID_ARG);
    st.stride[0] = -4; /* negative strides would reach before the base */
    EXPECT(m40_tensor_view(C, base, &st, 8, &v), M40_ERR_INVALID_ARG);
    st.stride[0] = 4;
    st.shape[0] = 0; /* empty: strides do not matter, but the start must be inside */
    st.stride[1] = INT64_MAX;
    CHECK_ST(m40_tensor_view(C, base, &st, 16, &v), M40_OK);
    m40_tensor_destroy(v);
    EXPECT(m40_tensor_view(C, base, &st, 17, &v), M40_ERR_INVALID_ARG);
    /* a view of a view: bounds are those of the storage, from the inner start */
    m40_tensor *v1 = NULL, *v2 = NULL;
    m40_tensor_desc eight = {.dtype = M40_DTYPE_I32, .ndim = 1, .shape = {8}, .stride = {1}};
    CHECK_ST(m40_tensor_view(C, base, &eight, 8, &v1), M40_OK);
    CHECK_ST(m40_tensor_view(C, v1, &eight, 0, &v2), M40_OK);
    m40_tensor_destroy(v2);
    EXPECT(m40_tensor_view(C, v1, &eight, 1, &v2), M40_ERR_INVALID_ARG);
    /* (2^62 - 1) * 4 = 2^64 - 4 does not overflow the product, but the inner
    ** start (32 bytes) plus it wraps to 28: only the 2^62 cap refuses it */
    EXPECT(m40_tensor_view(C, v1, &one, ((int64_t)1 << 62) - 1, &v2), M40_ERR_INVALID_ARG);
    CHECK(v2 == NULL);
    m40_tensor_destroy(v1);

    /* wrap: the alignment rule, and strides that span more than 2^62 */
    _Alignas(8) unsigned char buf[64] = {0};
    m40_tensor_desc w4 = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {4}, .stride = {1}};
    m40_tensor *w = NULL;
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 2, &w), M40_ERR_INVALID_ARG);
    CHECK(w == NULL && strstr(last_err, "aligned"));
    w4.dtype = M40_DTYPE_F16;
    CHECK_ST(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 2, &w), M40_OK);
    m40_tensor_destroy(w);
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 1, &w), M40_ERR_INVALID_ARG);
    w4.dtype = M40_DTYPE_I8;
    CHECK_ST(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 1, &w), M40_OK);
    m40_tensor_destroy(w);
    w4.dtype = M40_DTYPE_F32;
    w4.stride[0] = (int64_t)1 << 61;
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf, &w), M40_ERR_INVALID_ARG);

    /* transfers: a size that would wrap is refused before memory is touched */
    EXPECT(m40_tensor_upload(C, base, buf, SIZE_MAX), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_download(C, base, buf, (size_t)1 << 63), M40_ERR_INVALID_ARG);
    m40_tensor_destroy(base);

    /* quantized sizes: 0 (invalid) rather than a wrapped byte count */
    m40_quant_format q4 = {M40_DTYPE_Q4, 32, M40_DTYPE_F16}, q8 = {M40_DTYPE_Q8, 0, M40_DTYPE_F32};
    CHECK(m40_quant_nbytes(&q4, INT64_MAX, INT64_MAX) == 0);
    CHECK(m40_quant_nbytes(&q4, 1, INT64_MAX) == 0); /* (k + 1) / 2 used to overflow */
    CHECK(m40_quant_nbytes(&q8, (int64_t)1 << 31, (int64_t)1 << 33) == 0);
    CHECK(m40_quant_nbytes(&q8, 4096, 4096) == 4096 * 4096 + 4096 * 4);
    CHECK(m40_quant_nbytes(&q4, 3, 65) == 3 * 33 + 3 * 3 * 2);
    m40_tensor_desc qd, qs;
    CHECK_ST(m40_quant_descs(&q4, 1, INT64_MAX, &qd, &qs), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_quant_descs(&q8, INT64_MAX / 2, 3, &qd, &qs), M40_ERR_INVALID_ARG);
}

/* ---- Rules (m40.h): errors, contexts, lifetime, versioned descriptors ------ */

static m40_ctx *cpu_ctx(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *c = NULL;
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    return c;
}

static int no_error(m40_ctx *c) {
    return m40_errcode(c) == M40_OK && m40_errmsg(c)[0] == '\0';
}

/* A call that succeeds leaves no error behind, whatever failed before. */
static void test_error_reset(void) {
    int64_t s[2] = {3, 4};
    m40_tensor *a = NULL, *b = NULL;
    CHECK(no_error(C) || m40_errcode(C) != M40_OK); /* whatever earlier tests left */
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &a), M40_OK);
    CHECK(no_error(C));
    CHECK_ST(m40_scale(C, 1.0f, NULL, a), M40_ERR_INVALID_ARG);
    CHECK(m40_errcode(C) == M40_ERR_INVALID_ARG && m40_errmsg(C)[0] != '\0');
    /* the error stays until the next call on the context ... */
    CHECK(m40_tensor_get_data(a) != NULL && m40_errcode(C) == M40_ERR_INVALID_ARG);
    /* ... which, succeeding, clears it: each kind of call */
    CHECK_ST(m40_ctx_sync(C), M40_OK);
    CHECK(no_error(C));
    m40_device_info info;
    CHECK_ST(m40_ctx_get_info(C, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_ctx_get_info(C, &info), M40_OK);
    CHECK(no_error(C));
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 5, s, &b), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_fill_random(C, 7, M40_RANDOM_NORMAL, 0, 1, a), M40_OK);
    CHECK(no_error(C));
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &b), M40_OK);
    CHECK_ST(m40_softmax(C, a, b), M40_OK);
    CHECK(no_error(C));
    float h[12];
    CHECK_ST(m40_tensor_download(C, b, h, 5), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_download(C, b, h, sizeof h), M40_OK);
    CHECK(no_error(C));
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK(no_error(C));
    m40_graph_destroy(g);
    CHECK_ST(m40_ctx_set_conv_engine(C, (m40_conv_engine)99), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_ctx_set_conv_engine(C, M40_CONV_ENGINE_OURS), M40_OK);
    CHECK(no_error(C));
    m40_tensor_destroy(a);
    m40_tensor_destroy(b);
}

/* Ops refuse tensors of another context; m40_tensor_copy bridges host ones. */
static void test_foreign_tensors(void) {
    m40_ctx *c2 = cpu_ctx();
    if (!c2) return;
    int64_t s[2] = {4, 4};
    m40_tensor *mine = NULL, *theirs = NULL, *out = NULL, *v = NULL;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &mine), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, s, &out), M40_OK);
    CHECK_ST(m40_tensor_new(c2, M40_DTYPE_F32, 2, s, &theirs), M40_OK);
    CHECK_ST(m40_fill_random(c2, 3, M40_RANDOM_UNIFORM, -1, 1, theirs), M40_OK);
    EXPECT(m40_add(C, mine, theirs, out), M40_ERR_INVALID_ARG);
    CHECK(strstr(last_err, "belongs to another context") != NULL);
    EXPECT(m40_scale(C, 2.0f, theirs, out), M40_ERR_INVALID_ARG);
    EXPECT(m40_matmul(C, mine, theirs, NULL, out), M40_ERR_INVALID_ARG);
    EXPECT(m40_softmax(C, mine, theirs), M40_ERR_INVALID_ARG);
    EXPECT(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, 0, 1, theirs), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_view(C, theirs, m40_tensor_get_desc(theirs), 0, &v), M40_ERR_INVALID_ARG);
    float h[16];
    EXPECT(m40_tensor_download(C, theirs, h, sizeof h), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_upload(C, theirs, h, sizeof h), M40_ERR_INVALID_ARG);
    /* host tensors may cross contexts through m40_tensor_copy */
    CHECK_ST(m40_tensor_copy(C, mine, theirs), M40_OK);
    float a[16], b[16];
    CHECK_ST(m40_tensor_download(C, mine, a, sizeof a), M40_OK);
    CHECK_ST(m40_tensor_download(c2, theirs, b, sizeof b), M40_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* a graph refuses to bind another context's tensor */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    int id = -1;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &id), M40_OK);
    CHECK(m40_graph_bind(g, id, theirs) != M40_OK);
    m40_graph_destroy(g);
    m40_tensor_destroy(mine);
    m40_tensor_destroy(out);
    m40_tensor_destroy(theirs);
    m40_ctx_destroy(c2);
}

/* y = softmax(relu(x·wᵀ)) on ctx: x [4,8] input, w [6,8] weight. */
static m40_graph *small_graph(m40_ctx *c, const float *w, int *x_id, int *y_id) {
    m40_graph *g = NULL;
    if (m40t_mlp_graph(c, 4, 6, 8, w, &g, x_id, y_id) != M40_OK)
        fprintf(stderr, "small_graph: %s\n", m40_errmsg(c));
    return g;
}

/* Destroy order is free: a context destroyed before its tensors and graphs
** lives on (closing) until the last of them goes. Run under ASan, this
** finds a use after free or a leak in any order. */
static void test_lifetime(void) {
    m40_ctx_destroy(NULL);
    m40_tensor_destroy(NULL);
    m40_graph_destroy(NULL);
    float w[48];
    for (int i = 0; i < 48; i++) w[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (int order = 0; order < 4; order++) {
        m40_ctx *c = cpu_ctx();
        if (!c) return;
        int64_t s[2] = {4, 8};
        m40_tensor *t = NULL, *v = NULL, *wr = NULL;
        float host[32];
        for (int i = 0; i < 32; i++) host[i] = (float)i;
        CHECK_ST(m40_tensor_new(c, M40_DTYPE_F32, 2, s, &t), M40_OK);
        CHECK_ST(m40_tensor_upload(c, t, host, sizeof host), M40_OK);
        m40_tensor_desc row = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {8}, .stride = {1}};
        CHECK_ST(m40_tensor_view(c, t, &row, 8, &v), M40_OK);
        m40_tensor_desc hd;
        m40_tensor_desc_make(&hd, M40_DTYPE_F32, 2, s);
        CHECK_ST(m40_tensor_wrap(c, &hd, M40_LOC_HOST, host, &wr), M40_OK);
        int x = -1, y = -1;
        m40_graph *g = small_graph(c, w, &x, &y);
        CHECK(g != NULL);
        m40_tensor *gx = NULL;
        if (g) {
            CHECK_ST(m40_graph_get_tensor(g, x, &gx), M40_OK);
            CHECK_ST(m40_tensor_copy(c, gx, t), M40_OK);
            CHECK_ST(m40_graph_run(g), M40_OK);
        }
        m40_ctx_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        CHECK_ST(m40_ctx_get_stats(c, &st), M40_OK);
        CHECK(st.live_tensors >= 3 && st.live_graphs == (g ? 1 : 0));
        CHECK(st.workspace_fallbacks == 0);
        st.struct_size = 4;
        CHECK_ST(m40_ctx_get_stats(c, &st), M40_ERR_INVALID_ARG);
        CHECK_ST(m40_ctx_get_stats(c, NULL), M40_ERR_INVALID_ARG);
        if (order == 0) { /* children first: the usual order */
            m40_tensor_destroy(v);
            m40_graph_destroy(g);
            m40_tensor_destroy(wr);
            m40_tensor_destroy(t);
            m40_ctx_destroy(c);
        } else if (order == 1) { /* context first, then every child */
            m40_ctx_destroy(c);
            m40_graph_destroy(g);
            m40_tensor_destroy(v);
            m40_tensor_destroy(wr);
            m40_tensor_destroy(t);
        } else if (order == 2) { /* context between children; a call on it now fails */
            m40_tensor_destroy(v);
            m40_ctx_destroy(c);
            m40_tensor_destroy(t);
            m40_tensor_destroy(wr);
            m40_graph_destroy(g);
        } else { /* the graph's own tensors outlive nothing: graph last */
            m40_ctx_destroy(c);
            m40_tensor_destroy(wr);
            m40_tensor_destroy(v);
            m40_tensor_destroy(t);
            m40_graph_destroy(g);
        }
    }
    /* a context whose creation failed is freed at once */
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = -7;
    m40_ctx *bad = NULL;
    CHECK_ST(m40_ctx_create(&d, &bad), M40_ERR_NO_DEVICE);
    CHECK(bad != NULL);
    m40_ctx_destroy(bad);
}

/* m40_ctx_desc grows by struct_size: older sizes get defaults, others fail. */
static void test_desc_versions(void) {
    m40_ctx_desc d;
    m40_ctx *c = NULL;
    m40_ctx_desc_init(&d);
    CHECK(d.matmul == M40_MATMUL_OURS && d.struct_size == sizeof d);
    d.device = M40_DEVICE_CPU;
    d.matmul = M40_MATMUL_CUBLAS;
    d.struct_size = offsetof(m40_ctx_desc, matmul); /* a 0.1.0 caller */
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    CHECK(c && !c->matmul_cublas); /* the field it lacks got the default */
    m40_ctx_destroy(c);
    d.struct_size = offsetof(m40_ctx_desc, matmul) - 1;
    CHECK_ST(m40_ctx_create(&d, &c), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(c), "struct_size") != NULL);
    m40_ctx_destroy(c);
    d.struct_size = sizeof d + 8;
    CHECK_ST(m40_ctx_create(&d, &c), M40_ERR_INVALID_ARG);
    m40_ctx_destroy(c);
    d.struct_size = sizeof d;
    d.matmul = (m40_matmul_engine)7;
    CHECK_ST(m40_ctx_create(&d, &c), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(c), "matmul") != NULL);
    m40_ctx_destroy(c);
    /* the descriptor chooses cuBLAS; the environment overrides it both ways */
    const char *env = getenv("M40_MATMUL");
    char saved[64] = "";
    if (env) snprintf(saved, sizeof saved, "%s", env);
    unsetenv("M40_MATMUL");
    d.matmul = M40_MATMUL_CUBLAS;
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    CHECK(c && c->matmul_cublas);
    m40_ctx_destroy(c);
    setenv("M40_MATMUL", "ours", 1);
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    CHECK(c && !c->matmul_cublas);
    m40_ctx_destroy(c);
    setenv("M40_MATMUL", "cublas", 1);
    d.matmul = M40_MATMUL_OURS;
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    CHECK(c && c->matmul_cublas);
    m40_ctx_destroy(c);
    if (env) setenv("M40_MATMUL", saved, 1);
    else unsetenv("M40_MATMUL");
}

/* After m40_ctx_destroy with live children, calls on the context fail
** cleanly instead of touching freed memory. (Reading a destroyed context is
** the caller's bug; this checks the library's side of the closing state.) */
static void test_closing_refuses(void) {
    m40_ctx *c = cpu_ctx();
    if (!c) return;
    int64_t s[1] = {4};
    m40_tensor *t = NULL, *u = NULL;
    CHECK_ST(m40_tensor_new(c, M40_DTYPE_F32, 1, s, &t), M40_OK);
    m40_ctx_destroy(c);
    CHECK(c->closing); /* still allocated: t holds it */
    CHECK_ST(m40_tensor_new(c, M40_DTYPE_F32, 1, s, &u), M40_ERR_STATE);
    CHECK_ST(m40_fill_random(c, 1, M40_RANDOM_UNIFORM, 0, 1, t), M40_ERR_STATE);
    m40_ctx_destroy(c); /* a second destroy while closing does nothing */
    m40_tensor_destroy(t); /* frees c */
}

int main(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) {
        fprintf(stderr, "CPU context: %s\n", m40_errmsg(C));
        return 1;
    }
    test_status();
    test_ctx();
    test_log();
    test_tensors();
    test_op_errors();
    test_hostile_sizes();
    test_error_reset();
    test_foreign_tensors();
    test_lifetime();
    test_desc_versions();
    test_closing_refuses();
    m40_ctx_destroy(C);
    return m40t_finish("test_api");
}
