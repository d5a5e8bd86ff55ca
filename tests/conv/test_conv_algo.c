/* The NHWC conv algorithms of kernels/conv.cu, each forced through
** m40k_conv_shape::algo, against the CPU reference: the implicit GEMM (with
** the channel-padding copy for C % 4 != 0) and Winograd F(2x2, 3x3) on odd
** shapes (partial output tiles, pad 0/1/2, C = 4, every epilogue), poisoned
** outputs; and a case big enough for Winograd to run in several tile chunks,
** checked against the implicit GEMM. AUTO is checked to pick what
** m40k_conv2d_nhwc_algo says. Exits 77 without a GPU. */
#include "check.h"
#include "ref/ref.h"
#include "../kernels/conv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *G;
static int SMS = 1;

static m40_tensor *dev_floats(int64_t n) {
    m40_tensor *t = NULL;
    if (m40_tensor_new(G, M40_DTYPE_F32, 1, &n, &t) != M40_OK) {
        fprintf(stderr, "tensor_new: %s\n", m40_errmsg(G));
        exit(1);
    }
    return t;
}

static void fill(float *p, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    }
}

/* Runs m40k_conv2d_nhwc with `algo` on host data; returns y (malloc'd). */
static float *run(const m40k_conv_shape *s, const float *x, const float *w, const float *scale,
                  const float *bias, const float *res) {
    int64_t nx = (int64_t)s->N * s->H * s->W * s->C, nw = (int64_t)s->K * s->R * s->S * s->C;
    int64_t ny = (int64_t)s->N * s->P * s->Q * s->K;
    m40_tensor *t[6] = {dev_floats(nx), dev_floats(nw), dev_floats(s->K), dev_floats(s->K),
                        dev_floats(ny), dev_floats(ny)};
    CHECK_ST(m40_tensor_upload(G, t[0], x, (size_t)nx * 4), M40_OK);
    CHECK_ST(m40_tensor_upload(G, t[1], w, (size_t)nw * 4), M40_OK);
    if (scale) CHECK_ST(m40_tensor_upload(G, t[2], scale, (size_t)s->K * 4), M40_OK);
    if (bias) CHECK_ST(m40_tensor_upload(G, t[3], bias, (size_t)s->K * 4), M40_OK);
    if (res) CHECK_ST(m40_tensor_upload(G, t[4], res, (size_t)ny * 4), M40_OK);
    float *y = malloc((size_t)ny * 4);
    m40t_poison(y, ny);
    CHECK_ST(m40_tensor_upload(G, t[5], y, (size_t)ny * 4), M40_OK);
    const void *xd = m40_tensor_get_data(t[0]);
    size_t wsb = m40k_conv2d_nhwc_workspace(s, xd, SMS);
    m40_tensor *ws = wsb ? dev_floats((int64_t)(wsb + 3) / 4) : NULL;
    int e = m40k_conv2d_nhwc(m40_ctx_get_stream(G), s, xd, m40_tensor_get_data(t[1]),
                             scale ? m40_tensor_get_data(t[2]) : NULL,
                             bias ? m40_tensor_get_data(t[3]) : NULL,
                             res ? m40_tensor_get_data(t[4]) : NULL, m40_tensor_get_data(t[5]),
                             ws ? m40_tensor_get_data(ws) : NULL, wsb, SMS);
    CHECK(e == 0);
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    CHECK_ST(m40_tensor_download(G, t[5], y, (size_t)ny * 4), M40_OK);
    for (int i = 0; i < 6; i++) m40_tensor_destroy(t[i]);
    m40_tensor_destroy(ws);
    return y;
}

static const char *algo_name(int a) {
    return a == M40K_CONV_WINOGRAD ? "winograd" : a == M40K_CONV_IMPLICIT ? "implicit" : "auto";
}

/* One shape, each algorithm that applies, against the reference. */
static void check_shape(int N, int C, int H, int W, int K, int R, int S, int st, int pad,
                        int dil, int epi) {
    m40k_conv_shape s = {N, C, H, W, K, R, S, 0, 0, st, st, pad, pad, dil, dil, epi & 8, 0};
    s.P = (H + 2 * pad - dil * (R - 1) - 1) / st + 1;
    s.Q = (W + 2 * pad - dil * (S - 1) - 1) / st + 1;
    int64_t nx = (int64_t)N * H * W * C, nw = (int64_t)K * R * S * C;
    int64_t ny = (int64_t)N * s.P * s.Q * K;
    float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4), *sc = malloc((size_t)K * 4);
    float *bi = malloc((size_t)K * 4), *res = malloc((size_t)ny * 4), *ref = malloc((size_t)ny * 4);
    unsigned seed = (unsigned)(N * 131 + C * 17 + H * 7 + K + R * 3 + st + epi);
    fill(x, nx, seed); fill(w, nw, seed + 1); fill(sc, K, seed + 2); fill(bi, K, seed + 3);
    fill(res, ny, seed + 4);
    const float *scale = epi & 1 ? sc : NULL, *bias = epi & 2 ? bi : NULL;
    const float *rp = epi & 4 ? res : NULL;
    m40_conv2d_desc d = m40t_conv_desc(M40_LAYOUT_NHWC, st, pad, dil, epi & 8);
    m40__ref_conv2d(&d, N, C, H, W, K, R, S, s.P, s.Q, x, w, scale, bias, rp, ref);
    int wino = R == 3 && S == 3 && st == 1 && dil == 1 && C % 4 == 0 && K % 4 == 0;
    for (int a = M40K_CONV_AUTO; a <= M40K_CONV_WINOGRAD; a++) {
        if (a == M40K_CONV_WINOGRAD && !wino) continue;
        s.algo = a;
        float *y = run(&s, x, w, scale, bias, rp);
        char name[112];
        snprintf(name, sizeof name, "nhwc %s N%d C%d %dx%d K%d %dx%d s%d p%d d%d epi%d",
                 algo_name(a), N, C, H, W, K, R, S, st, pad, dil, epi);
        /* as test_conv: FP32 sums of C·R·S products vs double; Winograd's
        ** transforms add a few roundings per term (measured ~2x the error) */
        double crs = (double)C * R * S;
        m40t_compare(name, y, ref, ny, (m40t_tol){crs * 2.4e-7, 1e-5, 1e-10});
        free(y);
    }
    free(x); free(w); free(sc); free(bi); free(res); free(ref);
}

/* Winograd in several tile chunks (T > the per-pass chunk) vs the implicit GEMM. */
static void check_chunked(void) {
    m40k_conv_shape s = {2, 512, 66, 66, 512, 3, 3, 66, 66, 1, 1, 1, 1, 1, 1, 1, 0};
    int64_t nx = (int64_t)2 * 66 * 66 * 512, nw = (int64_t)512 * 9 * 512;
    float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4), *b = malloc(512 * 4);
    fill(x, nx, 5); fill(w, nw, 6); fill(b, 512, 7);
    s.algo = M40K_CONV_IMPLICIT;
    float *yi = run(&s, x, w, NULL, b, NULL);
    s.algo = M40K_CONV_WINOGRAD;
    float *yw = run(&s, x, w, NULL, b, NULL);
    m40t_compare("winograd (2178 tiles in 2 chunks) vs implicit, 66x66 512>512", yw, yi, nx,
                 (m40t_tol){4608 * 2.4e-7, 1e-5, 1e-10});
    free(x); free(w); free(b); free(yi); free(yw);
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_conv_algo");
    if (!G) return M40T_SKIP;
    m40_device_info info;
    if (m40_ctx_get_info(G, &info) == M40_OK) SMS = info.sm_count;
    check_shape(1, 8, 2, 2, 8, 3, 3, 1, 1, 1, 2);            /* 1 tile, M = 4 */
    check_shape(1, 4, 3, 3, 4, 3, 3, 1, 1, 1, 1 | 2 | 8);    /* C = K = 4 */
    check_shape(2, 16, 9, 11, 24, 3, 3, 1, 1, 1, 2 | 4 | 8); /* odd P, Q */
    check_shape(1, 192, 7, 9, 200, 3, 3, 1, 1, 1, 2 | 4 | 8);
    check_shape(2, 256, 5, 6, 256, 3, 3, 1, 0, 1, 1 | 2);    /* pad 0 */
    check_shape(1, 256, 6, 5, 192, 3, 3, 1, 2, 1, 1 | 2 | 4 | 8); /* pad 2 */
    check_shape(3, 512, 7, 7, 512, 3, 3, 1, 1, 1, 2 | 4 | 8); /* layer4 */
    check_shape(4, 64, 20, 20, 64, 3, 3, 1, 1, 1, 2 | 8);    /* layer1-like */
    check_shape(2, 3, 23, 19, 16, 7, 7, 2, 3, 1, 2 | 8);     /* stem: padded to 4 channels */
    check_shape(1, 6, 9, 9, 10, 3, 3, 2, 1, 2, 1 | 4);       /* C % 4 != 0, dilation */
    check_shape(2, 12, 8, 7, 20, 3, 3, 2, 1, 1, 2 | 4 | 8);  /* C = 12: C % 8 != 0 */
    check_chunked();
    /* AUTO follows m40k_conv2d_nhwc_algo: Winograd for many channels and tiles */
    m40k_conv_shape big = {64, 256, 14, 14, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 0};
    m40k_conv_shape few = {1, 512, 7, 7, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 0};
    m40k_conv_shape s2 = {64, 256, 14, 14, 256, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 0};
    CHECK(m40k_conv2d_nhwc_algo(&big, 132) == M40K_CONV_WINOGRAD);
    CHECK(m40k_conv2d_nhwc_algo(&few, 132) == M40K_CONV_IMPLICIT);
    CHECK(m40k_conv2d_nhwc_algo(&s2, 132) == M40K_CONV_IMPLICIT);
    big.algo = M40K_CONV_IMPLICIT;
    CHECK(m40k_conv2d_nhwc_algo(&big, 132) == M40K_CONV_IMPLICIT);
    m40_ctx_destroy(G);
    return m40t_finish("test_conv_algo");
}
