/* The core API on the CPU: statuses, contexts, tensors, views, transfers,
** and every bad-input case returning a status and a message while the
** context stays usable. Runs everywhere. */
#include "check.h"
#include "m40/quant.h"

#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

/* After an expected error: a message was recorded and the context works. */
static void still_usable(const char *what) {
    m40t_checks++;
    if (m40_errmsg(C)[0] == '\0') {
        m40t_failures++;
        fprintf(stderr, "%s: no error message recorded\n", what);
    }
    int64_t s[1] = {3};
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s, &t), M40_OK);
    CHECK_ST(m40_fill_random(C, t, 1, M40_RANDOM_UNIFORM, 0, 1), M40_OK);
    m40_tensor_free(t);
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
    CHECK_ST(m40_ctx_info(C, &info), M40_OK);
    CHECK(info.is_gpu == 0 && info.device == M40_DEVICE_CPU);
    CHECK_ST(m40_ctx_info(C, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_ctx_sync(C), M40_OK);
    CHECK(m40_ctx_stream(C) == NULL);
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
    CHECK_ST(m40_scale(c, NULL, 1.0f, NULL), M40_ERR_INVALID_ARG);
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
    CHECK(strstr(m40_errmsg(C), "dims") != NULL);
    EXPECT(m40_tensor_create(C, NULL, M40_LOC_HOST, &t), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_create(C, &d, M40_LOC_HOST, NULL), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_create(C, &d, M40_LOC_DEVICE, &t), M40_ERR_NO_DEVICE);
    EXPECT(m40_tensor_create(C, &d, (m40_location)9, &t), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_new(C, M40_DTYPE_F32, 5, s5, &t), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_tensor_create(C, &d, M40_LOC_HOST, &t), M40_OK);
    CHECK(m40_tensor_nbytes(t) == 24 * 4 && m40_tensor_location(t) == M40_LOC_HOST);

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
    m40_tensor_free(v);
    EXPECT(m40_tensor_view(C, t, &row, 19, &v), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(C), "storage") != NULL);
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
    CHECK(m40_tensor_data(w) == src);
    m40_tensor *w2 = NULL;
    EXPECT(m40_tensor_wrap(C, &d, M40_LOC_HOST, NULL, &w2), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_wrap(C, &d, M40_LOC_DEVICE, src, &w2), M40_ERR_NO_DEVICE);
    CHECK(w2 == NULL);

    /* crc: same seed same crc, another seed another */
    uint32_t c1, c2, c3;
    CHECK_ST(m40_fill_random(C, u, 9, M40_RANDOM_UNIFORM, -1, 1), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c1), M40_OK);
    CHECK_ST(m40_fill_random(C, u, 9, M40_RANDOM_UNIFORM, -1, 1), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c2), M40_OK);
    CHECK_ST(m40_fill_random(C, u, 10, M40_RANDOM_UNIFORM, -1, 1), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, u, &c3), M40_OK);
    CHECK(c1 == c2 && c1 != c3);

    m40_tensor_free(w);
    m40_tensor_free(h);
    m40_tensor_free(u);
    m40_tensor_free(v);
    m40_tensor_free(t);
    m40_tensor_free(NULL);
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
    CHECK_ST(m40_fill_random(C, a, 1, M40_RANDOM_UNIFORM, -1, 1), M40_OK);
    CHECK_ST(m40_fill_random(C, b, 2, M40_RANDOM_UNIFORM, -1, 1), M40_OK);

    EXPECT(m40_add(C, NULL, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_add(C, a, b, y), M40_ERR_SHAPE);
    EXPECT(m40_add(C, a, wrong, y), M40_ERR_SHAPE);
    EXPECT(m40_mul(C, a, h, y), M40_ERR_DTYPE);
    EXPECT(m40_add(NULL, a, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_scale(C, a, 2.0f, b), M40_ERR_SHAPE);
    EXPECT(m40_scale(C, h, 2.0f, h), M40_ERR_DTYPE);
    EXPECT(m40_activation(C, (m40_act)17, a, y), M40_ERR_INVALID_ARG);
    EXPECT(m40_activation(C, M40_ACT_RELU, a, NULL), M40_ERR_INVALID_ARG);
    EXPECT(m40_softmax(C, a, b), M40_ERR_SHAPE);
    EXPECT(m40_fill_random(C, i8, 1, M40_RANDOM_UNIFORM, 0, 1), M40_ERR_DTYPE);
    EXPECT(m40_fill_random(C, a, 1, (m40_random_dist)5, 0, 1), M40_ERR_INVALID_ARG);
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
    CHECK_ST(m40_fill_random(C, w, 3, M40_RANDOM_UNIFORM, -1, 1), M40_OK);
    CHECK_ST(m40_matmul(C, a, w, NULL, out), M40_OK);
    EXPECT(m40_matmul(C, a, w, NULL, outbad), M40_ERR_SHAPE);
    EXPECT(m40_matmul(C, a, b, NULL, out), M40_ERR_SHAPE);
    EXPECT(m40_matmul(C, a, w, bias, out), M40_ERR_SHAPE); /* bias [5] for N=4 */
    EXPECT(m40_matmul(C, a, w, wrong, out), M40_OK);        /* bias [4] fits */
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
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) m40_tensor_free(ts[i]);
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
    CHECK(t == NULL && strstr(m40_errmsg(C), "2^62"));
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
    m40_tensor_free(v);
    EXPECT(m40_tensor_view(C, base, &st, 17, &v), M40_ERR_INVALID_ARG);
    /* a view of a view: bounds are those of the storage, from the inner start */
    m40_tensor *v1 = NULL, *v2 = NULL;
    m40_tensor_desc eight = {.dtype = M40_DTYPE_I32, .ndim = 1, .shape = {8}, .stride = {1}};
    CHECK_ST(m40_tensor_view(C, base, &eight, 8, &v1), M40_OK);
    CHECK_ST(m40_tensor_view(C, v1, &eight, 0, &v2), M40_OK);
    m40_tensor_free(v2);
    EXPECT(m40_tensor_view(C, v1, &eight, 1, &v2), M40_ERR_INVALID_ARG);
    m40_tensor_free(v1);

    /* wrap: the alignment rule, and strides that span more than 2^62 */
    _Alignas(8) unsigned char buf[64] = {0};
    m40_tensor_desc w4 = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {4}, .stride = {1}};
    m40_tensor *w = NULL;
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 2, &w), M40_ERR_INVALID_ARG);
    CHECK(w == NULL && strstr(m40_errmsg(C), "aligned"));
    w4.dtype = M40_DTYPE_F16;
    CHECK_ST(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 2, &w), M40_OK);
    m40_tensor_free(w);
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 1, &w), M40_ERR_INVALID_ARG);
    w4.dtype = M40_DTYPE_I8;
    CHECK_ST(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf + 1, &w), M40_OK);
    m40_tensor_free(w);
    w4.dtype = M40_DTYPE_F32;
    w4.stride[0] = (int64_t)1 << 61;
    EXPECT(m40_tensor_wrap(C, &w4, M40_LOC_HOST, buf, &w), M40_ERR_INVALID_ARG);

    /* transfers: a size that would wrap is refused before memory is touched */
    EXPECT(m40_tensor_upload(C, base, buf, SIZE_MAX), M40_ERR_INVALID_ARG);
    EXPECT(m40_tensor_download(C, base, buf, (size_t)1 << 63), M40_ERR_INVALID_ARG);
    m40_tensor_free(base);

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
    m40_ctx_destroy(C);
    return m40t_finish("test_api");
}
