/* The quantizer against numpy (tests/quant/make_golden.py -> quant.golden):
** data and scale bytes must match exactly, dequantized weights too. Then the
** argument checks of m40_quantize / m40_quant_linear, and the CPU
** m40_quant_linear against m40_dequantize + m40_matmul (bit for bit: the
** same double-precision sum). CPU only.
**   test_quant_cpu tests/quant/quant.golden */
#include "check.h"
#include "m40/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

static m40_tensor *host(m40_dtype dt, int ndim, const int64_t *shape) {
    m40_tensor *t = NULL;
    if (m40_tensor_new(C, dt, ndim, shape, &t) != M40_OK) {
        fprintf(stderr, "tensor_new: %s\n", m40_errmsg(C));
        exit(1);
    }
    return t;
}

static m40_tensor *host_like(const m40_tensor_desc *d) {
    return host(d->dtype, d->ndim, d->shape);
}

static int rd(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

static void test_golden(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        CHECK(0);
        return;
    }
    char magic[8];
    int32_t ncase = 0;
    CHECK(rd(f, magic, 8) && memcmp(magic, "M40QGLD1", 8) == 0 && rd(f, &ncase, 4));
    for (int c = 0; c < ncase; c++) {
        int32_t h[6];
        if (!rd(f, h, sizeof h)) { CHECK(0); break; }
        m40_quant_format fmt = {(m40_dtype)h[0], h[1], (m40_dtype)h[2]};
        m40_dtype src = (m40_dtype)h[3];
        int64_t shape[2] = {h[4], h[5]}, N = h[4], K = h[5];
        m40_tensor *w = host(src, 2, shape);
        CHECK(rd(f, m40_tensor_get_data(w), m40_tensor_get_nbytes(w)));
        m40_tensor_desc dd, sd;
        CHECK_ST(m40_quant_descs(&fmt, N, K, &dd, &sd), M40_OK);
        m40_tensor *data = host_like(&dd);
        m40_tensor *scale = fmt.wtype == M40_DTYPE_F16 ? NULL : host_like(&sd);
        size_t nd = m40_tensor_get_nbytes(data), ns = scale ? m40_tensor_get_nbytes(scale) : 0;
        unsigned char *want_d = malloc(nd + 1), *want_s = malloc(ns + 1);
        float *want_w = malloc((size_t)(N * K) * 4 + 4);
        CHECK(rd(f, want_d, nd) && rd(f, want_s, ns) && rd(f, want_w, (size_t)(N * K) * 4));
        memset(m40_tensor_get_data(data), 0xA5, nd); /* every byte must be written */
        CHECK_ST(m40_quantize(C, &fmt, w, data, scale), M40_OK);
        int dok = memcmp(m40_tensor_get_data(data), want_d, nd) == 0;
        int sok = !scale || memcmp(m40_tensor_get_data(scale), want_s, ns) == 0;
        m40_tensor *deq = host(M40_DTYPE_F32, 2, shape);
        m40_qweight qw = {fmt, N, K, data, scale};
        CHECK_ST(m40_dequantize(C, &qw, deq), M40_OK);
        const float *got = m40_tensor_get_data(deq);
        int64_t bad = -1;
        for (int64_t i = 0; i < N * K && bad < 0; i++)
            if (!(got[i] == want_w[i])) bad = i; /* -0 == +0 */
        CHECK(dok && sok && bad < 0);
        printf("%-4s golden %2d %-12s src %s [%lld,%lld]: data %s, scales %s, dequant %s",
               dok && sok && bad < 0 ? "ok" : "FAIL", c, m40_quant_format_name(&fmt),
               m40_dtype_name(src), (long long)N, (long long)K, dok ? "=" : "DIFF",
               sok ? "=" : "DIFF", bad < 0 ? "=" : "DIFF");
        if (bad >= 0) printf(" (first at %lld: %g vs %g)", (long long)bad, got[bad], want_w[bad]);
        printf("\n");
        free(want_d); free(want_s); free(want_w);
        m40_tensor_destroy(w); m40_tensor_destroy(data); m40_tensor_destroy(scale); m40_tensor_destroy(deq);
    }
    fclose(f);
}

static void test_errors(void) {
    int64_t s[2] = {4, 64}, s1[1] = {4}, bad_s[2] = {4, 31};
    m40_quant_format q4 = {M40_DTYPE_Q4, 0, M40_DTYPE_F16};
    m40_tensor *w = host(M40_DTYPE_F32, 2, s);
    float *wp = m40_tensor_get_data(w);
    for (int i = 0; i < 256; i++) wp[i] = (float)(i % 13) - 6.0f;
    m40_tensor_desc dd, sd;
    CHECK_ST(m40_quant_descs(&q4, 4, 64, &dd, &sd), M40_OK);
    CHECK(dd.dtype == M40_DTYPE_I8 && dd.shape[0] == 4 && dd.shape[1] == 32);
    CHECK(sd.dtype == M40_DTYPE_F16 && sd.ndim == 1 && sd.shape[0] == 4);
    CHECK(m40_quant_nbytes(&q4, 4, 64) == 4 * 32 + 4 * 2);
    m40_tensor *data = host_like(&dd), *scale = host_like(&sd);
    CHECK_ST(m40_quantize(NULL, &q4, w, data, scale), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_quantize(C, NULL, w, data, scale), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_quantize(C, &q4, NULL, data, scale), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_quantize(C, &q4, w, data, NULL), M40_ERR_INVALID_ARG);
    m40_quant_format bad = q4;
    bad.group = 48;
    CHECK_ST(m40_quantize(C, &bad, w, data, scale), M40_ERR_UNSUPPORTED);
    CHECK(strstr(m40_errmsg(C), "group 48") != NULL);
    bad = q4; bad.scale_dtype = M40_DTYPE_I8;
    CHECK_ST(m40_quantize(C, &bad, w, data, scale), M40_ERR_DTYPE);
    bad = q4; bad.wtype = M40_DTYPE_I32;
    CHECK_ST(m40_quantize(C, &bad, w, data, scale), M40_ERR_DTYPE);
    CHECK_ST(m40_quant_descs(&bad, 4, 64, &dd, NULL), M40_ERR_DTYPE);
    CHECK_ST(m40_quant_descs(&q4, -1, 64, &dd, NULL), M40_ERR_INVALID_ARG);
    m40_tensor *wrong = host(M40_DTYPE_I8, 2, bad_s);
    CHECK_ST(m40_quantize(C, &q4, w, wrong, scale), M40_ERR_SHAPE);
    m40_tensor *s32 = host(M40_DTYPE_F32, 1, s1);
    CHECK_ST(m40_quantize(C, &q4, w, data, s32), M40_ERR_DTYPE);
    m40_tensor *wi = host(M40_DTYPE_I32, 2, s);
    CHECK_ST(m40_quantize(C, &q4, wi, data, scale), M40_ERR_DTYPE);
    wp[70] = NAN;
    CHECK_ST(m40_quantize(C, &q4, w, data, scale), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(C), "w[1, 6]") != NULL);
    wp[70] = 1e6f; /* 1e6 / 7 overflows an f16 scale */
    CHECK_ST(m40_quantize(C, &q4, w, data, scale), M40_ERR_UNSUPPORTED);
    CHECK(strstr(m40_errmsg(C), "f32 scales") != NULL);
    wp[70] = 0.0f;
    CHECK_ST(m40_quantize(C, &q4, w, data, scale), M40_OK);
    printf("ok   quantize argument checks (%s)\n", "NULLs, group, dtypes, shapes, NaN, f16 overflow");

    /* m40_quant_linear checks */
    m40_qweight qw = {q4, 4, 64, data, scale};
    int64_t xs[2] = {3, 64}, ys[2] = {3, 4}, yb[2] = {3, 5}, bs[1] = {4};
    m40_tensor *x = host(M40_DTYPE_F32, 2, xs), *y = host(M40_DTYPE_F32, 2, ys);
    m40_tensor *y5 = host(M40_DTYPE_F32, 2, yb), *bias = host(M40_DTYPE_F32, 1, bs);
    memset(m40_tensor_get_data(x), 0, m40_tensor_get_nbytes(x));
    memset(m40_tensor_get_data(bias), 0, m40_tensor_get_nbytes(bias));
    CHECK_ST(m40_quant_linear(C, x, &qw, bias, y), M40_OK);
    CHECK_ST(m40_quant_linear(C, x, &qw, NULL, y5), M40_ERR_SHAPE);
    CHECK_ST(m40_quant_linear(C, x, NULL, NULL, y), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_quant_linear(C, NULL, &qw, NULL, y), M40_ERR_INVALID_ARG);
    m40_qweight q2 = qw;
    q2.scale = NULL;
    CHECK_ST(m40_quant_linear(C, x, &q2, NULL, y), M40_ERR_INVALID_ARG);
    q2 = qw; q2.k = 62;
    CHECK_ST(m40_quant_linear(C, x, &q2, NULL, y), M40_ERR_SHAPE);
    q2 = qw; q2.fmt.group = 32; /* scale tensor is [4], the format needs [4,2] */
    CHECK_ST(m40_quant_linear(C, x, &q2, NULL, y), M40_ERR_SHAPE);
    q2 = qw; q2.fmt.wtype = M40_DTYPE_Q8; /* data is [4,32], Q8 needs [4,64] */
    CHECK_ST(m40_quant_linear(C, x, &q2, NULL, y), M40_ERR_SHAPE);
    CHECK_ST(m40_quant_linear(C, x, &qw, y, y), M40_ERR_SHAPE); /* bias [3,4] */
    m40_tensor *xi = host(M40_DTYPE_I32, 2, xs);
    CHECK_ST(m40_quant_linear(C, xi, &qw, NULL, y), M40_ERR_DTYPE);
    printf("ok   quant_linear argument checks\n");
    m40_tensor_destroy(x); m40_tensor_destroy(y); m40_tensor_destroy(y5); m40_tensor_destroy(bias);
    m40_tensor_destroy(xi); m40_tensor_destroy(w); m40_tensor_destroy(wi); m40_tensor_destroy(data);
    m40_tensor_destroy(scale); m40_tensor_destroy(wrong); m40_tensor_destroy(s32);
}

/* CPU quant_linear == dequantize + matmul, exactly, for every format. */
static void test_linear_ref(void) {
    static const m40_quant_format fmts[] = {
        {M40_DTYPE_Q4, 0, M40_DTYPE_F16},  {M40_DTYPE_Q8, 0, M40_DTYPE_F16},
        {M40_DTYPE_Q4, 32, M40_DTYPE_F32}, {M40_DTYPE_Q8, 64, M40_DTYPE_F32},
        {M40_DTYPE_Q4, 128, M40_DTYPE_F16}, {M40_DTYPE_F16, 0, M40_DTYPE_F16}};
    const int64_t N = 37, K = 203, M = 5;
    int64_t ws[2] = {N, K}, xs[2] = {M, K}, ys[2] = {M, N}, bs[1] = {N};
    m40_tensor *w = host(M40_DTYPE_F32, 2, ws), *x = host(M40_DTYPE_F32, 2, xs);
    m40_tensor *b = host(M40_DTYPE_F32, 1, bs), *deq = host(M40_DTYPE_F32, 2, ws);
    m40_tensor *y1 = host(M40_DTYPE_F32, 2, ys), *y2 = host(M40_DTYPE_F32, 2, ys);
    CHECK_ST(m40_fill_random(C, 1, M40_RANDOM_NORMAL, 0.0f, 0.05f, w), M40_OK);
    CHECK_ST(m40_fill_random(C, 2, M40_RANDOM_UNIFORM, -1.0f, 1.0f, x), M40_OK);
    CHECK_ST(m40_fill_random(C, 3, M40_RANDOM_UNIFORM, -1.0f, 1.0f, b), M40_OK);
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        m40_tensor_desc dd, sd;
        CHECK_ST(m40_quant_descs(&fmts[i], N, K, &dd, &sd), M40_OK);
        m40_tensor *data = host_like(&dd);
        m40_tensor *scale = fmts[i].wtype == M40_DTYPE_F16 ? NULL : host_like(&sd);
        CHECK_ST(m40_quantize(C, &fmts[i], w, data, scale), M40_OK);
        m40_qweight qw = {fmts[i], N, K, data, scale};
        CHECK_ST(m40_dequantize(C, &qw, deq), M40_OK);
        m40t_poison(m40_tensor_get_data(y1), M * N);
        CHECK_ST(m40_quant_linear(C, x, &qw, b, y1), M40_OK);
        CHECK_ST(m40_matmul(C, x, deq, b, y2), M40_OK);
        char name[80];
        snprintf(name, sizeof name, "cpu quant_linear %s == dequant+matmul", m40_quant_format_name(&fmts[i]));
        m40t_compare(name, m40_tensor_get_data(y1), m40_tensor_get_data(y2), M * N, (m40t_tol){0, 0, 0});
        m40_tensor_destroy(data);
        m40_tensor_destroy(scale);
    }
    m40_tensor_destroy(w); m40_tensor_destroy(x); m40_tensor_destroy(b); m40_tensor_destroy(deq);
    m40_tensor_destroy(y1); m40_tensor_destroy(y2);
}

/* A row so small that its f16 scale (amax/127 = 8.7e-8) is subnormal and
** rounds down (to 6e-8): w/scale reaches ~184, past int8's range. The
** quantizer clamps to ±127 against the stored scale, so every weight keeps
** its sign (unclamped, 184 wraps to -72; a mutation run found no case). */
static void test_tiny_scale(void) {
    const m40_quant_format f = {M40_DTYPE_Q8, 0, M40_DTYPE_F16};
    const int64_t ws[2] = {1, 4};
    m40_tensor *w = host(M40_DTYPE_F32, 2, ws), *out = host(M40_DTYPE_F32, 2, ws);
    float *fw = m40_tensor_get_data(w), *fo = m40_tensor_get_data(out);
    fw[0] = 1.1e-5f, fw[1] = -1.1e-5f, fw[2] = 3e-6f, fw[3] = 0.0f;
    m40_tensor_desc dd, sd;
    CHECK_ST(m40_quant_descs(&f, 1, 4, &dd, &sd), M40_OK);
    m40_tensor *data = host_like(&dd), *scale = host_like(&sd);
    CHECK_ST(m40_quantize(C, &f, w, data, scale), M40_OK);
    m40_qweight qw = {f, 1, 4, data, scale};
    CHECK_ST(m40_dequantize(C, &qw, out), M40_OK);
    CHECK(fo[0] > 0 && fo[1] < 0 && fo[2] > 0 && fo[3] == 0);
    CHECK(fo[0] <= fw[0] && fo[1] >= fw[1]); /* clamped, not grown */
    m40_tensor_destroy(w), m40_tensor_destroy(out), m40_tensor_destroy(data), m40_tensor_destroy(scale);
}

int main(int argc, char **argv) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) {
        fprintf(stderr, "cpu ctx: %s\n", m40_errmsg(C));
        return 1;
    }
    test_golden(argc > 1 ? argv[1] : "tests/quant/quant.golden");
    test_errors();
    test_linear_ref();
    test_tiny_scale();
    m40_ctx_destroy(C);
    return m40t_finish("test_quant_cpu");
}
