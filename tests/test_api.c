/* The core API on the CPU: statuses, contexts, tensors, views, transfers,
** and every bad-input case returning a status and a message while the
** context stays usable. Runs everywhere. */
#include "check.h"

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
    m40_ctx_destroy(C);
    return m40t_finish("test_api");
}
