/* Convolution and pooling: the CPU reference against independent facts
** (a 1x1 conv is a matmul; a hand-computed case; pooling by definition),
** the bad-input cases, and — with a GPU — the CUDA kernels against the
** reference on ResNet-like and odd shapes with every epilogue and poisoned
** outputs (test_gpu_conv). */
#include "check.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C, *G;

static void test_ref_facts(void) {
    /* 1x1 conv == linear over channels at each pixel */
    enum { N = 2, Cc = 5, H = 3, W = 4, K = 6 };
    float x[N * Cc * H * W], w[K * Cc], y[N * K * H * W], xt[N * H * W * Cc], yl[N * H * W * K];
    for (int i = 0; i < N * Cc * H * W; i++) x[i] = sinf((float)i);
    for (int i = 0; i < K * Cc; i++) w[i] = cosf((float)i * 0.7f);
    m40_conv2d_desc d;
    m40_conv2d_desc_init(&d);
    m40__ref_conv2d(&d, N, Cc, H, W, K, 1, 1, H, W, x, w, NULL, NULL, NULL, y);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < Cc; c++)
            for (int p = 0; p < H * W; p++) xt[(n * H * W + p) * Cc + c] = x[(n * Cc + c) * H * W + p];
    m40__ref_linear(N * H * W, K, Cc, xt, w, NULL, yl);
    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < H * W; p++)
                bad += fabsf(y[(n * K + k) * H * W + p] - yl[(n * H * W + p) * K + k]) > 1e-6f;
    CHECK(bad == 0);
    /* 3x3, pad 1, stride 2 on a 3x3 ramp, by hand: output [1,1,2,2] */
    float xr[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, yr[4];
    float sc = 2.0f, bi = -1.0f, res[4] = {0, 10, 20, 30};
    d.stride_h = d.stride_w = 2;
    d.pad_h = d.pad_w = 1;
    m40__ref_conv2d(&d, 1, 1, 3, 3, 1, 3, 3, 2, 2, xr, ones, &sc, &bi, res, yr);
    /* windows: {1,2,4,5}=12, {2,3,5,6}=16, {4,5,7,8}=24, {5,6,8,9}=28 */
    CHECK(yr[0] == 23 && yr[1] == 41 && yr[2] == 67 && yr[3] == 85);
    /* max / avg pool 2x2 stride 2 and global average */
    float xp[16], yp[4];
    for (int i = 0; i < 16; i++) xp[i] = (float)((i * 7) % 16);
    m40__ref_pool2d(M40_POOL_MAX, 2, 2, 2, 2, 0, 0, M40_LAYOUT_NCHW, 1, 1, 4, 4, 2, 2, xp, yp);
    CHECK(yp[0] == fmaxf(fmaxf(xp[0], xp[1]), fmaxf(xp[4], xp[5])));
    m40__ref_pool2d(M40_POOL_AVG, 3, 3, 2, 2, 1, 1, M40_LAYOUT_NCHW, 1, 1, 4, 4, 2, 2, xp, yp);
    CHECK(fabsf(yp[0] - (xp[0] + xp[1] + xp[4] + xp[5]) / 4) < 1e-6f); /* corner: 4 in bounds */
    float g;
    m40__ref_global_avgpool(M40_LAYOUT_NCHW, 1, 1, 16, xp, &g);
    CHECK(g == 7.5f); /* 0..15 permuted */
    /* dilation, each axis alone: a [2] filter of ones 2 apart over 0..4 gives
    ** x[i] + x[i+2] (a mutation run found dilation checked only against this
    ** same reference on the GPU) */
    float xd[5] = {0, 1, 2, 3, 4}, wd[2] = {1, 1}, yd[3];
    m40_conv2d_desc dd;
    m40_conv2d_desc_init(&dd);
    dd.dilation_h = 2;
    m40__ref_conv2d(&dd, 1, 1, 5, 1, 1, 2, 1, 3, 1, xd, wd, NULL, NULL, NULL, yd);
    CHECK(yd[0] == 2 && yd[1] == 4 && yd[2] == 6);
    m40_conv2d_desc_init(&dd);
    dd.dilation_w = 2;
    m40__ref_conv2d(&dd, 1, 1, 1, 5, 1, 1, 2, 1, 3, xd, wd, NULL, NULL, NULL, yd);
    CHECK(yd[0] == 2 && yd[1] == 4 && yd[2] == 6);
    /* max pool over a window of negatives (the maximum starts at -inf, not
    ** 0), through the public op: a 2x2 window over a 2x2 input, exactly as
    ** large as the padded input, gives one output (P = (2 - 2)/2 + 1) */
    m40_tensor *xt4 = m40t_f32(C, 4, 1, 1, 2, 2), *yt4 = m40t_f32(C, 4, 1, 1, 1, 1);
    float *fx = m40_tensor_get_data(xt4), *fy = m40_tensor_get_data(yt4);
    fx[0] = -3, fx[1] = -1, fx[2] = -2, fx[3] = -4, fy[0] = 99;
    m40_pool2d_desc pd;
    m40_pool2d_desc_init(&pd);
    CHECK_ST(m40_pool2d(C, &pd, xt4, yt4), M40_OK);
    CHECK(fy[0] == -1);
    m40_tensor_destroy(xt4), m40_tensor_destroy(yt4);
}

/* The NHWC reference gives the NCHW reference's numbers, transposed. */
static void test_layouts_agree(void) {
    enum { N = 2, Cc = 5, H = 7, W = 6, K = 4, R = 3, S = 3, P = 4, Q = 3 }; /* stride 2, pad 1 */
    m40_conv2d_desc d;
    m40_conv2d_desc_init(&d);
    d.stride_h = d.stride_w = 2;
    d.pad_h = d.pad_w = 1;
    d.relu = 1;
    static float x[N * Cc * H * W], xt[N * Cc * H * W], w[K * Cc * R * S], wt[K * Cc * R * S];
    static float res[N * K * P * Q], rest[N * K * P * Q], y[N * K * P * Q], yt[N * K * P * Q];
    float bias[K];
    for (int i = 0; i < N * Cc * H * W; i++) x[i] = sinf(0.37f * (float)i);
    for (int i = 0; i < K * Cc * R * S; i++) w[i] = cosf(0.11f * (float)i);
    for (int i = 0; i < N * K * P * Q; i++) res[i] = 0.01f * (float)(i % 17);
    for (int k = 0; k < K; k++) bias[k] = 0.1f * (float)k - 0.2f;
    for (int n = 0; n < N; n++) for (int c = 0; c < Cc; c++) for (int h = 0; h < H; h++)
        for (int v = 0; v < W; v++) xt[((n * H + h) * W + v) * Cc + c] = x[((n * Cc + c) * H + h) * W + v];
    for (int k = 0; k < K; k++) for (int c = 0; c < Cc; c++) for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) wt[((k * R + r) * S + s) * Cc + c] = w[((k * Cc + c) * R + r) * S + s];
    for (int n = 0; n < N; n++) for (int k = 0; k < K; k++) for (int p = 0; p < P * Q; p++)
        rest[(n * P * Q + p) * K + k] = res[(n * K + k) * P * Q + p];
    m40__ref_conv2d(&d, N, Cc, H, W, K, R, S, P, Q, x, w, NULL, bias, res, y);
    d.layout = M40_LAYOUT_NHWC;
    m40__ref_conv2d(&d, N, Cc, H, W, K, R, S, P, Q, xt, wt, NULL, bias, rest, yt);
    int bad = 0;
    for (int n = 0; n < N; n++) for (int k = 0; k < K; k++) for (int p = 0; p < P * Q; p++)
        bad += y[(n * K + k) * P * Q + p] != yt[(n * P * Q + p) * K + k];
    CHECK(bad == 0);
    float pm[N * Cc * 4 * 3], pmt[N * Cc * 4 * 3], g1[N * Cc], g2[N * Cc];
    m40__ref_pool2d(M40_POOL_MAX, 3, 3, 2, 2, 1, 1, M40_LAYOUT_NCHW, N, Cc, H, W, 4, 3, x, pm);
    m40__ref_pool2d(M40_POOL_MAX, 3, 3, 2, 2, 1, 1, M40_LAYOUT_NHWC, N, Cc, H, W, 4, 3, xt, pmt);
    bad = 0;
    for (int n = 0; n < N; n++) for (int c = 0; c < Cc; c++) for (int p = 0; p < 12; p++)
        bad += pm[(n * Cc + c) * 12 + p] != pmt[(n * 12 + p) * Cc + c];
    CHECK(bad == 0);
    m40__ref_global_avgpool(M40_LAYOUT_NCHW, N, Cc, H * W, x, g1);
    m40__ref_global_avgpool(M40_LAYOUT_NHWC, N, Cc, H * W, xt, g2);
    CHECK(memcmp(g1, g2, sizeof g1) == 0);
}

static void test_errors(void) {
    m40_tensor *x = m40t_f32(C, 4, 1, 3, 8, 8), *w = m40t_f32(C, 4, 4, 3, 3, 3), *y = m40t_f32(C, 4, 1, 4, 8, 8);
    m40_tensor *wbad = m40t_f32(C, 4, 4, 2, 3, 3), *b = m40t_f32(C, 1, 5, 0, 0, 0), *y2 = m40t_f32(C, 2, 1, 3, 0, 0);
    m40_conv2d_desc d;
    m40_conv2d_desc_init(&d);
    d.pad_h = d.pad_w = 1;
    CHECK_ST(m40_conv2d(C, &d, x, w, NULL, NULL, NULL, y), M40_OK);
    CHECK_ST(m40_conv2d(C, NULL, x, w, NULL, NULL, NULL, y), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_conv2d(C, &d, x, wbad, NULL, NULL, NULL, y), M40_ERR_SHAPE);
    CHECK(strstr(m40_errmsg(C), "channels") != NULL);
    CHECK_ST(m40_conv2d(C, &d, x, w, NULL, b, NULL, y), M40_ERR_SHAPE);   /* bias [5] for K=4 */
    CHECK_ST(m40_conv2d(C, &d, x, w, NULL, NULL, x, y), M40_ERR_SHAPE);   /* residual shape */
    CHECK_ST(m40_conv2d(C, &d, x, w, NULL, NULL, NULL, x), M40_ERR_SHAPE);
    CHECK_ST(m40_conv2d(C, &d, x, NULL, NULL, NULL, NULL, y), M40_ERR_INVALID_ARG);
    d.stride_h = 0;
    CHECK_ST(m40_conv2d(C, &d, x, w, NULL, NULL, NULL, y), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(C), "stride") != NULL);
    CHECK_ST(m40t_pool2d(C, M40_POOL_MAX, 3, 3, 2, 2, 2, 2, x, y, M40_LAYOUT_NCHW), M40_ERR_INVALID_ARG); /* pad > k/2 */
    CHECK_ST(m40t_pool2d(C, M40_POOL_GLOBAL_AVG, 3, 3, 2, 2, 1, 1, x, y, M40_LAYOUT_NCHW), M40_ERR_INVALID_ARG);
    CHECK_ST(m40t_pool2d(C, M40_POOL_MAX, 3, 3, 2, 2, 1, 1, x, y, (m40_layout)7), M40_ERR_INVALID_ARG);
    CHECK_ST(m40t_pool2d(C, M40_POOL_MAX, 3, 3, 2, 2, 1, 1, x, y, M40_LAYOUT_NCHW), M40_ERR_SHAPE);
    CHECK_ST(m40_global_avgpool(C, M40_LAYOUT_NCHW, x, y), M40_ERR_SHAPE);
    CHECK_ST(m40_global_avgpool(C, M40_LAYOUT_NCHW, x, y2), M40_OK);
    m40_tensor *ts[] = {x, w, y, wbad, b, y2};
    for (int i = 0; i < 6; i++) m40_tensor_destroy(ts[i]);
}

/* > 0: gpu_conv's GPU input is a view that many floats into a larger
** tensor (misaligned for 16-byte loads: the NHWC path must notice). */
static int x_offset;

/* GPU vs CPU reference for one conv configuration. */
static void gpu_conv(int N, int Cc, int H, int W, int K, int R, int S, int st, int pad, int dil,
                     int epi, m40_layout lay) {
    m40_conv2d_desc d = m40t_conv_desc(lay, st, pad, dil, epi & 8);
    int nhwc = lay == M40_LAYOUT_NHWC;
    int P = (H + 2 * pad - dil * (R - 1) - 1) / st + 1, Q = (W + 2 * pad - dil * (S - 1) - 1) / st + 1;
    m40_ctx *cs[2] = {G, C};
    m40_tensor *t[2][6], *xbase = NULL;
    uint64_t seed = (uint64_t)(N * 131 + Cc * 17 + H * 7 + K + R * 3 + st + epi);
    for (int i = 0; i < 2; i++) {
        m40_ctx *c = cs[i];
        m40t_conv_tensors(c, nhwc, N, Cc, H, W, K, R, S, P, Q, t[i]);
        if (i == 0 && x_offset) { /* same values, at a misaligned address */
            m40_tensor *big = m40t_f32(c, 1, (int64_t)N * Cc * H * W + x_offset, 0, 0, 0), *v = NULL;
            CHECK_ST(m40_tensor_view(c, big, m40_tensor_get_desc(t[i][0]), x_offset, &v), M40_OK);
            CHECK_ST(m40_fill_random(c, seed, M40_RANDOM_UNIFORM, -1, 1, v), M40_OK);
            m40_tensor_destroy(t[i][0]);
            t[i][0] = v;
            xbase = big;
            for (int j = 1; j < 5; j++)
                CHECK_ST(m40_fill_random(c, seed + (uint64_t)j, M40_RANDOM_UNIFORM, -1, 1, t[i][j]), M40_OK);
            continue;
        }
        for (int j = 0; j < 5; j++)
            CHECK_ST(m40_fill_random(c, seed + (uint64_t)j, M40_RANDOM_UNIFORM, -1, 1, t[i][j]), M40_OK);
    }
    size_t nb = m40_tensor_get_nbytes(t[0][5]);
    float *poison = malloc(nb + 4), *got = malloc(nb + 4), *ref = malloc(nb + 4);
    m40t_poison(poison, (int64_t)(nb / 4));
    CHECK_ST(m40_tensor_upload(G, t[0][5], poison, nb), M40_OK);
    for (int i = 0; i < 2; i++)
        CHECK_ST(m40_conv2d(cs[i], &d, t[i][0], t[i][1], epi & 1 ? t[i][2] : NULL,
                            epi & 2 ? t[i][3] : NULL, epi & 4 ? t[i][4] : NULL, t[i][5]), M40_OK);
    CHECK_ST(m40_tensor_download(G, t[0][5], got, nb), M40_OK);
    CHECK_ST(m40_tensor_download(C, t[1][5], ref, nb), M40_OK);
    char name[96];
    snprintf(name, sizeof name, "conv %s N%d C%d %dx%d K%d %dx%d s%d p%d d%d epi%d%s",
             nhwc ? "NHWC" : "NCHW", N, Cc, H, W, K, R, S, st, pad, dil, epi,
             x_offset ? " x+1" : "");
    /* FP32 sums of C·R·S products of magnitude <= 1 vs double: error grows
    ** like sqrt(CRS)·eps; bound it by CRS·2^-22 absolute */
    double crs = (double)Cc * R * S;
    m40t_compare(name, got, ref, (int64_t)(nb / 4), (m40t_tol){crs * 2.4e-7, 1e-5, 1e-10});
    free(poison); free(got); free(ref);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++) m40_tensor_destroy(t[i][j]);
    m40_tensor_destroy(xbase);
}

static void gpu_pool(int kind, int N, int Cc, int H, int W, int k, int st, int pad, m40_layout lay) {
    int P = (H + 2 * pad - k) / st + 1, Q = (W + 2 * pad - k) / st + 1, nhwc = lay == M40_LAYOUT_NHWC;
    m40_tensor *xg = nhwc ? m40t_f32(G, 4, N, H, W, Cc) : m40t_f32(G, 4, N, Cc, H, W);
    m40_tensor *yg = nhwc ? m40t_f32(G, 4, N, P, Q, Cc) : m40t_f32(G, 4, N, Cc, P, Q);
    m40_tensor *xc = nhwc ? m40t_f32(C, 4, N, H, W, Cc) : m40t_f32(C, 4, N, Cc, H, W);
    m40_tensor *yc = nhwc ? m40t_f32(C, 4, N, P, Q, Cc) : m40t_f32(C, 4, N, Cc, P, Q);
    m40_tensor *gg = m40t_f32(G, 2, N, Cc, 0, 0), *gc = m40t_f32(C, 2, N, Cc, 0, 0);
    CHECK_ST(m40_fill_random(G, 99, M40_RANDOM_NORMAL, 0, 1, xg), M40_OK);
    CHECK_ST(m40_fill_random(C, 99, M40_RANDOM_NORMAL, 0, 1, xc), M40_OK);
    size_t nb = m40_tensor_get_nbytes(yg);
    float *got = malloc(nb + 4), *ref = malloc(nb + 4);
    m40t_poison(got, (int64_t)(nb / 4));
    CHECK_ST(m40_tensor_upload(G, yg, got, nb), M40_OK);
    CHECK_ST(m40t_pool2d(G, (m40_pool)kind, k, k, st, st, pad, pad, xg, yg, lay), M40_OK);
    CHECK_ST(m40t_pool2d(C, (m40_pool)kind, k, k, st, st, pad, pad, xc, yc, lay), M40_OK);
    CHECK_ST(m40_tensor_download(G, yg, got, nb), M40_OK);
    CHECK_ST(m40_tensor_download(C, yc, ref, nb), M40_OK);
    char name[96];
    snprintf(name, sizeof name, "%s pool %s N%d C%d %dx%d k%d s%d p%d", kind ? "avg" : "max",
             nhwc ? "NHWC" : "NCHW", N, Cc, H, W, k, st, pad);
    m40t_compare(name, got, ref, (int64_t)(nb / 4), (m40t_tol){1e-6, 1e-6, 1e-12});
    size_t gb = m40_tensor_get_nbytes(gg);
    float *g1 = malloc(gb), *g2 = malloc(gb);
    m40t_poison(g1, (int64_t)(gb / 4));
    CHECK_ST(m40_tensor_upload(G, gg, g1, gb), M40_OK);
    CHECK_ST(m40_global_avgpool(G, lay, xg, gg), M40_OK);
    CHECK_ST(m40_global_avgpool(C, lay, xc, gc), M40_OK);
    CHECK_ST(m40_tensor_download(G, gg, g1, gb), M40_OK);
    CHECK_ST(m40_tensor_download(C, gc, g2, gb), M40_OK);
    snprintf(name, sizeof name, "global avgpool %s N%d C%d %dx%d", nhwc ? "NHWC" : "NCHW", N, Cc, H, W);
    /* a float sum of n = H·W zero-mean terms: NCHW reduces as a tree in a warp
    ** (error ~ log2(n)·eps), NHWC sums sequentially per channel (one thread
    ** each, coalesced across channels): error up to ~n·eps relative to the
    ** mean, 3136 · 6e-8 ≈ 2e-4 at 56x56; measured 1.1e-5 on the H200 */
    m40t_tol tol = nhwc ? (m40t_tol){1e-6, 2e-4, 1e-9} : (m40t_tol){1e-6, 1e-5, 1e-12};
    m40t_compare(name, g1, g2, (int64_t)(gb / 4), tol);
    free(got); free(ref); free(g1); free(g2);
    m40_tensor *ts[] = {xg, yg, xc, yc, gg, gc};
    for (int i = 0; i < 6; i++) m40_tensor_destroy(ts[i]);
}

/* Without arguments: the CPU part. With --gpu: the GPU part (exit 77 without
** a GPU), registered as its own `gpu` test. */
int main(int argc, char **argv) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    if (argc < 2 || strcmp(argv[1], "--gpu") != 0) {
        test_ref_facts();
        test_layouts_agree();
        test_errors();
        m40_ctx_destroy(C);
        return m40t_finish("test_conv");
    }
    G = m40t_gpu_ctx_or_skip("test_gpu_conv");
    if (!G) {
        m40_ctx_destroy(C);
        return M40T_SKIP;
    }
    /* ResNet-50 layer shapes (scaled down in N/H/W), odd shapes, each epilogue, both layouts */
    for (int l = 0; l < 2; l++) {
        m40_layout lay = (m40_layout)l;
        gpu_conv(2, 3, 29, 31, 16, 7, 7, 2, 3, 1, 2 | 8, lay);       /* stem: 7x7/2 + bias + ReLU */
        gpu_conv(1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1 | 2 | 8, lay);  /* 3x3 + BN + ReLU */
        gpu_conv(2, 32, 15, 15, 48, 3, 3, 2, 1, 1, 2, lay);          /* strided 3x3 (v1.5) */
        gpu_conv(2, 64, 7, 7, 256, 1, 1, 1, 0, 1, 2 | 4 | 8, lay);   /* 1x1 + residual + ReLU */
        gpu_conv(1, 128, 8, 8, 33, 1, 1, 2, 0, 1, 1 | 2, lay);       /* downsample 1x1/2 */
        gpu_conv(1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, lay);              /* smallest */
        gpu_conv(3, 7, 9, 5, 5, 3, 3, 1, 2, 2, 1 | 2 | 4 | 8, lay);  /* dilation 2 */
        gpu_conv(1, 129, 6, 6, 127, 3, 1, 1, 1, 1, 4, lay);          /* non-square kernel */
        gpu_conv(4, 256, 14, 14, 256, 3, 3, 1, 1, 1, 2 | 4 | 8, lay); /* bigger: several SGEMM tiles */
        /* NHWC implicit GEMM (C % 8 == 0): padding on every side, strides,
        ** dilation, non-square kernels, M <= 8, the 64x64 tile with split-K
        ** (few pixels, long K), 128x128 tiles with edge rows/columns */
        gpu_conv(1, 8, 2, 2, 8, 3, 3, 1, 1, 1, 2, lay);               /* M = 4 */
        gpu_conv(2, 16, 9, 11, 24, 3, 3, 1, 1, 1, 2 | 4 | 8, lay);    /* odd H, W */
        gpu_conv(1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 2 | 8, lay);       /* split-K, layer4 */
        gpu_conv(3, 64, 23, 17, 130, 3, 3, 2, 1, 1, 2 | 4, lay);      /* stride 2, K % 4 != 0 */
        gpu_conv(2, 24, 12, 13, 40, 5, 3, 1, 2, 2, 2 | 8, lay);       /* 5x3, pad 2, dilation 2 */
        gpu_conv(2, 256, 15, 15, 72, 1, 1, 2, 0, 1, 2 | 4, lay);      /* 1x1 stride 2 */
        gpu_conv(1, 16, 6, 6, 8, 3, 3, 1, 3, 1, 2, lay);              /* pad > kernel reach */
        gpu_conv(1, 8, 4, 4, 200, 3, 3, 3, 0, 1, 1 | 2 | 8, lay);     /* scale epilogue */
        gpu_conv(8, 64, 28, 28, 128, 3, 3, 1, 1, 1, 2 | 4 | 8, lay);  /* 49 x 1 tiles of 128 */
        gpu_conv(16, 64, 20, 20, 64, 3, 3, 1, 1, 1, 2 | 4 | 8, lay);  /* Winograd by AUTO */
        x_offset = 1;                                                  /* misaligned x */
        gpu_conv(2, 16, 9, 11, 24, 3, 3, 1, 1, 1, 2 | 4 | 8, lay);
        gpu_conv(1, 256, 6, 5, 192, 3, 3, 1, 1, 1, 2 | 8, lay);       /* Winograd shape */
        x_offset = 0;
        gpu_pool(M40_POOL_MAX, 2, 16, 56, 56, 3, 2, 1, lay);          /* ResNet maxpool */
        gpu_pool(M40_POOL_AVG, 1, 7, 13, 11, 3, 2, 1, lay);
        gpu_pool(M40_POOL_MAX, 1, 1, 1, 1, 1, 1, 0, lay);
    }
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    m40_ctx_destroy(G);
    m40_ctx_destroy(C);
    return m40t_finish("test_gpu_conv");
}
