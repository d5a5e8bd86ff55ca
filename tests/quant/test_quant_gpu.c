/* m40_quant_linear on the GPU against the CPU reference (dequantize, then a
** double-precision matmul): every format (int4/int8 per row and per group of
** 32/64/128 with f16/f32 scales, fp16 weights), the ChatGLM2 shapes
** (4608x4096, 4096x4096, 27392x4096, 4096x13696) at batch 1..8 (GEMV) and
** 9..64 rows (8-row GEMV slices) and M > 64 (the SGEMM converting W as it
** loads where K % 8 == 0 and x is aligned, else the quantized GEMM), odd shapes (1, 7, 127, 129 rows; K = 4097, 1000, ...), the
** forced generic paths and every GEMV variant the library carries
** (kernels/quant.h: kernel, rows per warp, chunks in flight, split-K R = 4
** and 8), unaligned x, with
** poisoned outputs. For the large shapes the CPU reference covers a slice of
** rows at each end; the whole output is checked for unwritten (NaN) values.
** The fused SwiGLU (a->glu) on every GEMV variant: test_glu.
** Exits 77 without a GPU. */
#include "check.h"
#include "m40/quant.h"
#include "../../kernels/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *G, *C;

static m40_tensor *tnew(m40_ctx *ctx, m40_dtype dt, int ndim, const int64_t *shape) {
    m40_tensor *t = NULL;
    if (m40_tensor_new(ctx, dt, ndim, shape, &t) != M40_OK) {
        fprintf(stderr, "tensor_new: %s\n", m40_errmsg(ctx));
        exit(1);
    }
    return t;
}

static void upload_copy(m40_tensor *dev, const m40_tensor *hst) {
    CHECK_ST(m40_tensor_upload(G, dev, m40_tensor_get_data(hst), m40_tensor_get_nbytes(hst)), M40_OK);
}

/* A quantized weight on both sides. */
typedef struct qpair {
    m40_quant_format fmt;
    int64_t n, k;
    m40_tensor *hd, *hs, *gd, *gs; /* host data/scale, device data/scale */
} qpair;

/* W ~ N(0, 0.02) made on the GPU (fast for big shapes), quantized on the host. */
static qpair make_weight(m40_quant_format fmt, int64_t N, int64_t K, uint64_t seed) {
    qpair q = {.fmt = fmt, .n = N, .k = K};
    int64_t ws[2] = {N, K};
    m40_tensor *wg = tnew(G, M40_DTYPE_F32, 2, ws), *wh = tnew(C, M40_DTYPE_F32, 2, ws);
    CHECK_ST(m40_fill_random(G, seed, M40_RANDOM_NORMAL, 0.0f, 0.02f, wg), M40_OK);
    CHECK_ST(m40_tensor_download(G, wg, m40_tensor_get_data(wh), m40_tensor_get_nbytes(wh)), M40_OK);
    m40_tensor_destroy(wg);
    m40_tensor_desc dd, sd;
    CHECK_ST(m40_quant_descs(&fmt, N, K, &dd, &sd), M40_OK);
    q.hd = tnew(C, dd.dtype, dd.ndim, dd.shape);
    q.gd = tnew(G, dd.dtype, dd.ndim, dd.shape);
    if (fmt.wtype != M40_DTYPE_F16) {
        q.hs = tnew(C, sd.dtype, sd.ndim, sd.shape);
        q.gs = tnew(G, sd.dtype, sd.ndim, sd.shape);
    }
    CHECK_ST(m40_quantize(C, &fmt, wh, q.hd, q.hs), M40_OK);
    m40_tensor_destroy(wh);
    upload_copy(q.gd, q.hd);
    if (q.hs) upload_copy(q.gs, q.hs);
    return q;
}

static void qpair_free(qpair q) {
    m40_tensor_destroy(q.hd); m40_tensor_destroy(q.hs); m40_tensor_destroy(q.gd); m40_tensor_destroy(q.gs);
}

/* The host weight restricted to rows [r0, r0 + nr): views of data and scale. */
static m40_qweight host_rows(const qpair *q, int64_t r0, int64_t nr, m40_tensor **vd, m40_tensor **vs) {
    const m40_tensor_desc *dd = m40_tensor_get_desc(q->hd);
    m40_tensor_desc d = *dd;
    d.shape[0] = nr;
    CHECK_ST(m40_tensor_view(C, q->hd, &d, r0 * dd->shape[1], vd), M40_OK);
    *vs = NULL;
    if (q->hs) {
        const m40_tensor_desc *sd = m40_tensor_get_desc(q->hs);
        m40_tensor_desc s = *sd;
        s.shape[0] = nr;
        CHECK_ST(m40_tensor_view(C, q->hs, &s, r0 * (sd->ndim == 2 ? sd->shape[1] : 1), vs), M40_OK);
    }
    m40_qweight w = {q->fmt, nr, q->k, *vd, *vs};
    return w;
}

/* Tolerance for a K-long FP32 dot product of x ~ U(-1,1) and w ~ N(0, .02):
** terms ~ 0.008 on average, so the sum of |terms| is ~ 0.008 K; FP32
** accumulation errs by a few ulp of that. */
static m40t_tol tol_for(int64_t K) {
    double s = 0.008 * (double)(K > 0 ? K : 1);
    return (m40t_tol){4e-7 * s + 1e-6, 1e-4, 1e-9};
}

/* 0 = m40_quant_linear; else a launcher variant: every GEMV variant the
** library carries (kernels/quant.h, m40k_qgemv_variant), the GEMM and its
** generic loader. The teaching versions (every other setting) are checked
** by bench/quant/gemv_check.c (m40-quant-versions). */
enum {
    V_OP, V_GENERIC, V_V2, V_V2_R1, V_V2_WHOLE, V_V2_DEEP, V_V2_WHOLE_DEEP, V_V2_KS2, V_V2_KS4, V_V2_EZ, V_V2_WHOLE_EZ, V_V2_WHOLE_EZ_D2, V_V2_WHOLE_EZ_D4, V_V2_WHOLE_EZ_R1, V_V2_PASS, V_V2_PASS_EZ, V_V2_PASS_D4, V_V2_PASS_EZ_D4, V_V2_PASS_DB, V_V2_PASS_EZ_D4_DB, V_V3, V_V3_R4_2SM, V_V3_D4, V_V3_R4_D4, V_SPLIT, V_SPLIT_R8,
    V_GEMM, V_GEMM_GENERIC, V_COUNT
};
static const struct {
    const char *name;
    m40k_qgemv_variant v;
    int sms;
} VARIANTS[V_COUNT] = {
    [V_OP] = {"op", {0, 0, 0, 0}, 0},
    [V_GENERIC] = {"gemv generic", {M40K_QGEMV_GENERIC, 0, 0, 0}, 24},
    [V_V2] = {"gemv v2", {M40K_QGEMV_V2, 0, 0, 0}, 24},
    [V_V2_R1] = {"gemv v2 R1", {M40K_QGEMV_V2, 1, 0, 0}, 24},
    [V_V2_WHOLE] = {"gemv v2 whole x", {M40K_QGEMV_V2, 2, 1, 0}, 24},
    [V_V2_DEEP] = {"gemv v2 4 in flight", {M40K_QGEMV_V2, 2, 0, 0, 4}, 24},
    [V_V2_WHOLE_DEEP] = {"gemv v2 whole x 4 in flight", {M40K_QGEMV_V2, 2, 1, 0, 4}, 24},
    [V_V2_KS2] = {"gemv v2 whole x K over 2 warps", {M40K_QGEMV_V2, 2, 1, 0, 0, 2}, 24},
    [V_V2_KS4] = {"gemv v2 whole x K over 4 warps", {M40K_QGEMV_V2, 2, 1, 0, 0, 4}, 24},
    [V_V2_EZ] = {"gemv v2 exponent-zero", {M40K_QGEMV_V2, 2, 0, 0, 0, 0, 1}, 24},
    [V_V2_WHOLE_EZ] = {"gemv v2 whole x exponent-zero", {M40K_QGEMV_V2, 2, 1, 0, 0, 0, 1}, 24},
    [V_V2_WHOLE_EZ_D2] = {"gemv v2 whole x exponent-zero 2 in flight", {M40K_QGEMV_V2, 2, 1, 0, 2, 0, 1}, 24},
    [V_V2_WHOLE_EZ_D4] = {"gemv v2 whole x exponent-zero 4 in flight", {M40K_QGEMV_V2, 2, 1, 0, 4, 0, 1}, 24},
    [V_V2_WHOLE_EZ_R1] = {"gemv v2 whole x exponent-zero R1 16 warps", {M40K_QGEMV_V2, 1, 1, 0, 0, 0, 1}, 24},
    [V_V2_PASS] = {"gemv v2 x in passes", {M40K_QGEMV_V2, 2, 2, 0}, 24},
    [V_V2_PASS_EZ] = {"gemv v2 x in passes exponent-zero", {M40K_QGEMV_V2, 2, 2, 0, 0, 0, 1}, 24},
    [V_V2_PASS_D4] = {"gemv v2 x in passes 4 in flight", {M40K_QGEMV_V2, 2, 2, 0, 4}, 24},
    [V_V2_PASS_EZ_D4] = {"gemv v2 x in passes exponent-zero 4 in flight", {M40K_QGEMV_V2, 2, 2, 0, 4, 0, 1}, 24},
    /* x double-buffered in passes: int8 (v2's decode), int4's ring (EZ) */
    [V_V2_PASS_DB] = {"gemv v2 x in passes x double-buffered", {M40K_QGEMV_V2, 2, 2, 0, 0, 0, 0, 1}, 24},
    [V_V2_PASS_EZ_D4_DB] = {"gemv v2 x in passes exponent-zero 4 in flight x double-buffered",
                            {M40K_QGEMV_V2, 2, 2, 0, 4, 0, 1, 1}, 24},
    [V_V3] = {"gemv v3 R2", {M40K_QGEMV_V3, 2, 2, 0}, 24},
    /* each warp walks many row groups */
    [V_V3_R4_2SM] = {"gemv v3 R4 2x1 blocks", {M40K_QGEMV_V3, 4, 2, 1}, 2},
    [V_V3_D4] = {"gemv v3 R2 D4", {M40K_QGEMV_V3, 2, 4, 0}, 24},
    [V_V3_R4_D4] = {"gemv v3 R4 D4", {M40K_QGEMV_V3, 4, 4, 0}, 24},
    [V_SPLIT] = {"gemv split-K", {M40K_QGEMV_SPLIT, 0, 0, 0}, 24},
    [V_SPLIT_R8] = {"gemv split-K R8", {M40K_QGEMV_SPLIT, 8, 0, 0}, 24},
    [V_GEMM] = {"gemm", {0, 0, 0, 0}, 0},
    [V_GEMM_GENERIC] = {"gemm generic", {0, 0, 0, 0}, 0},
};

/* Does the library carry this variant for the format, batch and K (as
** kernels/quant.h lists them)? Shapes the vector loads cannot take run the
** generic kernel under every variant. */
static int carried(int variant, m40_dtype wt, int64_t M, int64_t K, int unaligned_x) {
    const int vc = wt == M40_DTYPE_Q4 ? 32 : wt == M40_DTYPE_Q8 ? 16 : 8;
    const int isq = wt != M40_DTYPE_F16;
    if (variant == V_OP || variant >= V_GEMM || variant == V_GENERIC || variant == V_V2) return 1;
    if (M > 8) return 0;
    if (K <= 0 || K % vc != 0 || unaligned_x) return 1; /* generic */
    switch (variant) {
    case V_V2_R1: return !isq && M <= 2;
    case V_V2_WHOLE: case V_V2_WHOLE_DEEP: case V_V2_KS2: case V_V2_KS4: case V_V2_WHOLE_EZ: case V_V2_WHOLE_EZ_D2: case V_V2_WHOLE_EZ_D4: case V_V2_WHOLE_EZ_R1:
        return isq && M == 1 && K <= M40K_QGEMV_V2_WHOLE_K;
    case V_V2_EZ: case V_V2_PASS: case V_V2_PASS_EZ: return isq && M == 1;
    case V_V2_PASS_D4: case V_V2_PASS_EZ_D4: case V_V2_PASS_EZ_D4_DB:
        return wt == M40_DTYPE_Q4 && M == 1; /* the ring: int4 only */
    case V_V2_PASS_DB: return wt == M40_DTYPE_Q8 && M == 1; /* one chunk ahead, no EZ: int8 only */
    case V_V2_DEEP: return M == 1;
    case V_SPLIT: case V_SPLIT_R8: return isq;
    default: { /* v3: whole K in shared memory; int8 at batch 1, R = 2 also in segments */
        const int r2 = VARIANTS[variant].v.R == 2;
        return isq && M <= 2 &&
               (m40k_quant_gemv_whole((int)wt, (int)M, (int)K) || (r2 && wt == M40_DTYPE_Q8 && M == 1));
    }
    }
}

static int run_variant(int variant, const m40_tensor *x, const qpair *q, const m40_tensor *bias,
                       m40_tensor *y, int64_t M) {
    if (variant == V_OP) {
        m40_qweight w = {q->fmt, q->n, q->k, q->gd, q->gs};
        m40_status st = m40_quant_linear(G, x, &w, bias, y);
        if (st != M40_OK) fprintf(stderr, "m40_quant_linear: %s\n", m40_errmsg(G));
        return st == M40_OK;
    }
    m40k_qlinear_args a = {
        .M = (int)M, .N = (int)q->n, .K = (int)q->k, .x = m40_tensor_get_data(x),
        .wtype = (int)q->fmt.wtype, .w = m40_tensor_get_data(q->gd),
        .scale = q->gs ? m40_tensor_get_data(q->gs) : NULL,
        .scale_f16 = q->fmt.scale_dtype == M40_DTYPE_F16,
        .group = q->fmt.wtype == M40_DTYPE_F16 ? 0 : q->fmt.group,
        .bias = bias ? m40_tensor_get_data(bias) : NULL, .y = m40_tensor_get_data(y)};
    int e;
    if (variant >= V_GEMM) {
        e = m40k_quant_gemm_run(m40_ctx_get_stream(G), &a, variant == V_GEMM_GENERIC);
    } else if (variant == V_SPLIT || variant == V_SPLIT_R8) { /* with its scratch, poisoned */
        const size_t bytes = m40k_quant_gemv_workspace(&a);
        int64_t n = bytes ? (int64_t)(bytes / 4) : 1;
        m40_tensor *ws = tnew(G, M40_DTYPE_F32, 1, &n);
        float *poison = malloc((size_t)n * 4);
        m40t_poison(poison, n);
        CHECK_ST(m40_tensor_upload(G, ws, poison, (size_t)n * 4), M40_OK);
        free(poison);
        a.ws = m40_tensor_get_data(ws);
        a.ws_bytes = bytes;
        e = m40k_quant_gemv_variant(m40_ctx_get_stream(G), &a, VARIANTS[variant].sms, &VARIANTS[variant].v);
        CHECK_ST(m40_ctx_sync(G), M40_OK);
        m40_tensor_destroy(ws);
    } else {
        e = m40k_quant_gemv_variant(m40_ctx_get_stream(G), &a, VARIANTS[variant].sms, &VARIANTS[variant].v);
    }
    if (e) fprintf(stderr, "launcher variant %s: CUDA error %d\n", VARIANTS[variant].name, e);
    return e == 0;
}

/* x columns [0, K/2) are multiplied by X_LO and [K/2, K) by X_HI (both 1
** unless a test of the decode's per-staging power-of-two scale sets them). */
static float X_LO = 1.0f, X_HI = 1.0f;

/* One case: y = x·Wᵀ (+ bias) on the GPU vs the CPU reference on rows
** [0, nr0) and [N - nr1, N) of W (all rows when nr0 + nr1 >= N). */
static void run_case(const qpair *q, int64_t M, int with_bias, int variant, int64_t nr0,
                     int64_t nr1, int unaligned_x, uint64_t seed) {
    const int64_t N = q->n, K = q->k;
    if (!carried(variant, q->fmt.wtype, M, K, unaligned_x)) return;
    int64_t xs[2] = {M, K}, ys[2] = {M, N}, bs[1] = {N};
    /* x lives one element into a bigger buffer when unaligned_x */
    int64_t xbs[1] = {M * K + 4};
    m40_tensor *xbase_g = tnew(G, M40_DTYPE_F32, 1, xbs);
    m40_tensor *xh = tnew(C, M40_DTYPE_F32, 2, xs);
    CHECK_ST(m40_fill_random(C, seed, M40_RANDOM_UNIFORM, -1.0f, 1.0f, xh), M40_OK);
    {
        float *xp = m40_tensor_get_data(xh);
        for (int64_t i = 0; i < M * K; i++) xp[i] *= (i % K) < K / 2 ? X_LO : X_HI;
    }
    m40_tensor_desc xd = *m40_tensor_get_desc(xh);
    m40_tensor *xg = NULL;
    CHECK_ST(m40_tensor_view(G, xbase_g, &xd, unaligned_x ? 1 : 0, &xg), M40_OK);
    upload_copy(xg, xh);
    m40_tensor *bh = NULL, *bg = NULL;
    if (with_bias) {
        bh = tnew(C, M40_DTYPE_F32, 1, bs);
        bg = tnew(G, M40_DTYPE_F32, 1, bs);
        CHECK_ST(m40_fill_random(C, seed + 1, M40_RANDOM_UNIFORM, -1.0f, 1.0f, bh), M40_OK);
        upload_copy(bg, bh);
    }
    m40_tensor *yg = tnew(G, M40_DTYPE_F32, 2, ys);
    float *yout = malloc((size_t)(M * N) * 4 + 4);
    m40t_poison(yout, M * N);
    CHECK_ST(m40_tensor_upload(G, yg, yout, (size_t)(M * N) * 4), M40_OK);
    int ok = run_variant(variant, xg, q, bg, yg, M);
    CHECK(ok);
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    CHECK_ST(m40_tensor_download(G, yg, yout, (size_t)(M * N) * 4), M40_OK);
    int64_t unwritten = 0;
    for (int64_t i = 0; i < M * N; i++) unwritten += !isfinite(yout[i]);
    CHECK(unwritten == 0);

    char name[160];
    snprintf(name, sizeof name, "%s %s [%lld,%lld] M=%lld%s%s", VARIANTS[variant].name,
             m40_quant_format_name(&q->fmt), (long long)N, (long long)K, (long long)M,
             with_bias ? " +b" : "", unaligned_x ? " x+1" : "");
    if (unwritten) printf("FAIL %s: %lld outputs not finite (unwritten?)\n", name, (long long)unwritten);
    int64_t r0s[2] = {0, N - nr1}, nrs[2] = {nr0, nr1};
    if (nr0 + nr1 >= N) { nrs[0] = N; nrs[1] = 0; }
    for (int part = 0; part < 2; part++) {
        int64_t r0 = r0s[part], nr = nrs[part];
        if (nr <= 0) continue;
        m40_tensor *vd, *vs, *bv = NULL;
        m40_qweight w = host_rows(q, r0, nr, &vd, &vs);
        if (bh) {
            m40_tensor_desc bd = *m40_tensor_get_desc(bh);
            bd.shape[0] = nr;
            CHECK_ST(m40_tensor_view(C, bh, &bd, r0, &bv), M40_OK);
        }
        int64_t rs[2] = {M, nr};
        m40_tensor *yr = tnew(C, M40_DTYPE_F32, 2, rs);
        CHECK_ST(m40_quant_linear(C, xh, &w, bv, yr), M40_OK);
        float *got = malloc((size_t)(M * nr) * 4 + 4);
        for (int64_t m = 0; m < M; m++) memcpy(got + m * nr, yout + m * N + r0, (size_t)nr * 4);
        char nm[400];
        snprintf(nm, sizeof nm, "%s rows %lld+%lld", name, (long long)r0, (long long)nr);
        m40t_tol tol = tol_for(K);
        tol.atol *= fmax(fabs(X_LO), fabs(X_HI));
        m40t_compare(nm, got, m40_tensor_get_data(yr), M * nr, tol);
        free(got);
        m40_tensor_destroy(yr); m40_tensor_destroy(vd); m40_tensor_destroy(vs); m40_tensor_destroy(bv);
    }
    free(yout);
    m40_tensor_destroy(xg); m40_tensor_destroy(xbase_g); m40_tensor_destroy(xh);
    m40_tensor_destroy(bh); m40_tensor_destroy(bg); m40_tensor_destroy(yg);
}

static const m40_quant_format F_Q4ROW = {M40_DTYPE_Q4, 0, M40_DTYPE_F16};
static const m40_quant_format F_Q8ROW = {M40_DTYPE_Q8, 0, M40_DTYPE_F16};
static const m40_quant_format F_F16 = {M40_DTYPE_F16, 0, M40_DTYPE_F16};

/* The ChatGLM2 shapes: official layouts (q4/q8 per row, f16 scales) and f16
** weights; batch 1..8 and two prefill sizes; a 192-row slice at each end. */
static void test_chatglm_shapes(void) {
    static const int64_t shapes[][2] = {{4608, 4096}, {4096, 4096}, {27392, 4096}, {4096, 13696}};
    const m40_quant_format fmts[] = {F_Q4ROW, F_Q8ROW, F_F16, {M40_DTYPE_Q4, 64, M40_DTYPE_F32}};
    for (int s = 0; s < 4; s++)
        for (int f = 0; f < 4; f++) {
            if (f == 3 && s != 2) continue; /* a grouped format on one big shape */
            qpair q = make_weight(fmts[f], shapes[s][0], shapes[s][1], 100 + (uint64_t)(s * 4 + f));
            for (int64_t M = 1; M <= 8; M++)
                if (f < 2 || M == 1 || M == 5 || M == 8)
                    run_case(&q, M, M % 2, 0, 96, 96, 0, 1000 + (uint64_t)M);
            if (f < 2) { /* every variant the library carries (those it does not: skipped) */
                for (int64_t M = 1; M <= 2; M++)
                    for (int v = V_V2; v <= V_V3_R4_D4; v++)
                        run_case(&q, M, (int)(M + v) % 2, v, 96, 96, 0, 1100 + (uint64_t)v);
                run_case(&q, 8, 0, V_V2, 96, 96, 0, 1108);
                for (int64_t M = 1; M <= 8; M += 7) run_case(&q, M, 1, V_SPLIT, 96, 96, 0, 1111);
                for (int64_t M = 3; M <= 8; M += 5) run_case(&q, M, M == 3, V_SPLIT_R8, 96, 96, 0, 1112);
            }
            run_case(&q, 130, 1, 0, 64, 64, 0, 2000);
            if (s == 0) run_case(&q, 512, 0, 0, 32, 32, 0, 2001);
            qpair_free(q);
        }
}

/* Every format on odd shapes, full comparison, all variants. */
static void test_odd_shapes(void) {
    static const int64_t shapes[][2] = {{1, 32}, {7, 64}, {127, 4097}, {129, 1000},
                                        {33, 4128}, {300, 96}, {9, 1}};
    m40_quant_format fmts[18];
    int nf = 0;
    const int groups[] = {0, 32, 64, 128};
    for (int wt = 0; wt < 2; wt++)
        for (int g = 0; g < 4; g++)
            for (int sd = 0; sd < 2; sd++)
                fmts[nf++] = (m40_quant_format){wt ? M40_DTYPE_Q8 : M40_DTYPE_Q4, groups[g],
                                                sd ? M40_DTYPE_F32 : M40_DTYPE_F16};
    fmts[nf++] = F_F16;
    static const int64_t Ms[] = {1, 2, 3, 4, 7, 8, 9, 17, 130};
    /* M40_QUANT_QUICK=2 (racecheck): the four smallest weights only, every
    ** format, batch and variant still */
    const char *quick = getenv("M40_QUANT_QUICK");
    const int tiny = quick && strcmp(quick, "2") == 0;
    for (int s = 0; s < 7; s++)
        for (int f = 0; f < nf; f++) {
            if (tiny && (s == 2 || s == 3 || s == 5)) continue;
            qpair q = make_weight(fmts[f], shapes[s][0], shapes[s][1], 300 + (uint64_t)(s * 32 + f));
            for (int mi = 0; mi < 9; mi++) {
                int64_t M = Ms[mi];
                if (f % 3 != 0 && mi % 2) continue; /* thin the grid a little */
                run_case(&q, M, (mi + f) % 2, 0, q.n, 0, 0, 3000 + (uint64_t)mi);
                if (M <= 8) { /* every GEMV variant (not carried: skipped) */
                    for (int v = V_GENERIC; v <= V_SPLIT_R8; v++)
                        if (mi % 3 == 0 || v != V_V2_R1)
                            run_case(&q, M, (int)(M + v) % 2, v, q.n, 0, 0, 4000 + (uint64_t)v);
                } else {
                    run_case(&q, M, 1, V_GEMM_GENERIC, q.n, 0, 0, 5000);
                }
            }
            run_case(&q, 3, 1, 0, q.n, 0, 1, 6000);  /* unaligned x: generic gemv */
            run_case(&q, 20, 0, 0, q.n, 0, 1, 6001); /* unaligned x: generic 8-row slices */
            run_case(&q, 130, 1, 0, q.n, 0, 1, 6002); /* unaligned x: quant_gemm, not the SGEMM */
            qpair_free(q);
        }
}

/* The int8/int4 decode stores x times 2^(149 - pos - S), S from the
** largest |x| of each staging: x far from 1, and halves of K (separate
** stagings at batch >= 3) 2^40 apart, must still match the reference. */
static void test_x_range(void) {
    static const float mul[][2] = {{1e30f, 1e30f}, {1e-30f, 1e-30f}, {1e-6f, 1e6f}, {1e6f, 1e-6f}};
    const m40_quant_format fmts[] = {F_Q4ROW, F_Q8ROW, {M40_DTYPE_Q4, 32, M40_DTYPE_F32}};
    for (int f = 0; f < 3; f++) {
        qpair q = make_weight(fmts[f], 300, 13696, 700 + (uint64_t)f);
        for (int i = 0; i < 4; i++) {
            X_LO = mul[i][0];
            X_HI = mul[i][1];
            for (int64_t M = 1; M <= 8; M += 7) {
                run_case(&q, M, 0, V_OP, q.n, 0, 0, 7000 + (uint64_t)i);
                run_case(&q, M, 0, V_SPLIT, q.n, 0, 0, 7100 + (uint64_t)i);
                if (M >= 3) run_case(&q, M, 0, V_SPLIT_R8, q.n, 0, 0, 7200 + (uint64_t)i);
            }
            run_case(&q, 130, 0, V_OP, q.n, 0, 0, 7300 + (uint64_t)i); /* the SGEMM's loads */
        }
        X_LO = X_HI = 1.0f;
        qpair_free(q);
    }
}

/* The fused SwiGLU (kernels/quant.h: a->glu = F, N = 2F) on every GEMV
** variant the library carries, against the same variant's unfused outputs
** put through silu(g)·u on the host (expf: a few ulp): where
** m40k_quant_gemv_glu_ok, y [M, F] matches and 64 poisoned floats past it
** stay untouched (a v2 grid's last block holds warps past N: they must
** store nothing); elsewhere cudaErrorInvalidValue and y untouched. N 300
** (F 150: R 2 and 4 pair), 14 (F 7: R 4 cannot), 2·13696 (ChatGLM2's). */
static void test_glu(void) {
    static const struct { int64_t N, K; } shapes[] = {{300, 1024}, {14, 512}, {2 * 13696, 4096}};
    static const m40_quant_format fmts[3] = {{M40_DTYPE_Q4, 0, M40_DTYPE_F16},
                                             {M40_DTYPE_Q8, 0, M40_DTYPE_F16},
                                             {M40_DTYPE_F16, 0, M40_DTYPE_F16}};
    static const m40_quant_format q4g = {M40_DTYPE_Q4, 128, M40_DTYPE_F16};
    static const int64_t Ms[] = {1, 2, 4, 5, 8};
    int fused = 0, refused = 0;
    for (int si = 0; si < 3; si++)
        for (int fi = 0; fi < 4; fi++) {
            const int64_t N = shapes[si].N, K = shapes[si].K, F = N / 2, G2 = 64;
            if (si == 2 && fi == 3) continue;
            qpair q = make_weight(fi == 3 ? q4g : fmts[fi], N, K, 900 + (uint64_t)(si * 4 + fi));
            for (int mi = 0; mi < 5; mi++) {
                const int64_t M = Ms[mi];
                if (si == 2 && M > 2) continue;
                int64_t xs[2] = {M, K}, y0s[1] = {M * N}, y1s[1] = {M * F + G2};
                m40_tensor *xh = tnew(C, M40_DTYPE_F32, 2, xs), *xg = tnew(G, M40_DTYPE_F32, 2, xs);
                CHECK_ST(m40_fill_random(C, 77 + (uint64_t)mi, M40_RANDOM_UNIFORM, -1.0f, 1.0f, xh), M40_OK);
                upload_copy(xg, xh);
                m40_tensor *y0 = tnew(G, M40_DTYPE_F32, 1, y0s), *y1 = tnew(G, M40_DTYPE_F32, 1, y1s);
                float *h0 = malloc((size_t)(M * N) * 4), *h1 = malloc((size_t)(M * F + G2) * 4),
                      *p1 = malloc((size_t)(M * F + G2) * 4);
                m40t_poison(p1, M * F + G2);
                for (int v = V_GENERIC; v <= V_SPLIT_R8; v++) {
                    m40k_qlinear_args a = {
                        .M = (int)M, .N = (int)N, .K = (int)K, .x = m40_tensor_get_data(xg),
                        .wtype = (int)q.fmt.wtype, .w = m40_tensor_get_data(q.gd),
                        .scale = q.gs ? m40_tensor_get_data(q.gs) : NULL, .scale_f16 = 1,
                        .group = q.fmt.group, .y = m40_tensor_get_data(y0)};
                    const size_t wsb = m40k_quant_gemv_workspace(&a);
                    int64_t wn = wsb ? (int64_t)(wsb / 4) : 1;
                    m40_tensor *ws = tnew(G, M40_DTYPE_F32, 1, &wn);
                    a.ws = m40_tensor_get_data(ws), a.ws_bytes = wsb;
                    void *st = m40_ctx_get_stream(G);
                    const int e0 = m40k_quant_gemv_variant(st, &a, VARIANTS[v].sms, &VARIANTS[v].v);
                    CHECK_ST(m40_ctx_sync(G), M40_OK);
                    if (e0) { /* the variant does not take this shape or format */
                        m40_tensor_destroy(ws);
                        continue;
                    }
                    CHECK_ST(m40_tensor_download(G, y0, h0, (size_t)(M * N) * 4), M40_OK);
                    CHECK_ST(m40_tensor_upload(G, y1, p1, (size_t)(M * F + G2) * 4), M40_OK);
                    a.glu = (int)F;
                    a.y = m40_tensor_get_data(y1);
                    const int ok = m40k_quant_gemv_glu_ok(&a, &VARIANTS[v].v);
                    const int e1 = m40k_quant_gemv_variant(st, &a, VARIANTS[v].sms, &VARIANTS[v].v);
                    CHECK_ST(m40_ctx_sync(G), M40_OK);
                    CHECK_ST(m40_tensor_download(G, y1, h1, (size_t)(M * F + G2) * 4), M40_OK);
                    char name[200];
                    snprintf(name, sizeof name, "glu %s %s [%lld,%lld] M=%lld", VARIANTS[v].name,
                             m40_quant_format_name(&q.fmt), (long long)N, (long long)K, (long long)M);
                    const int64_t from = ok ? M * F : 0; /* what must be untouched */
                    int64_t touched = 0;
                    for (int64_t i = from; i < M * F + G2; i++) touched += memcmp(&h1[i], &p1[i], 4) != 0;
                    if (ok) {
                        fused++;
                        CHECK(e1 == 0);
                        float *ref = malloc((size_t)(M * F) * 4);
                        for (int64_t m = 0; m < M; m++)
                            for (int64_t c = 0; c < F; c++) {
                                const float g = h0[m * N + c], u = h0[m * N + F + c];
                                ref[m * F + c] = g / (1.0f + expf(-g)) * u;
                            }
                        m40t_compare(name, h1, ref, M * F, (m40t_tol){1e-6, 1e-5, 1e-12});
                        free(ref);
                    } else {
                        refused++;
                        CHECK(e1 == 1); /* cudaErrorInvalidValue */
                    }
                    if (touched) printf("FAIL %s: %lld floats written %s\n", name, (long long)touched,
                                        ok ? "past y" : "by a refused call");
                    CHECK(touched == 0);
                    m40_tensor_destroy(ws);
                }
                free(h0), free(h1), free(p1);
                m40_tensor_destroy(xh), m40_tensor_destroy(xg), m40_tensor_destroy(y0), m40_tensor_destroy(y1);
            }
            qpair_free(q);
        }
    printf("glu: %d variant calls fused, %d refused\n", fused, refused);
    CHECK(fused > 0 && refused > 0);
}

static float x_dummy_nw[4] __attribute__((aligned(16)));
/* The chooser under m40k_quant_gemv_v2_pass: dense_4h_to_h's shape (M 1,
** K 13696) goes to v2 with x in passes for int4 and int8, not with a fused
** norm, not with the knob off (so the knob's A/B times the kernel it names);
** its depth, EZ and x double-buffered (db), and the launcher's refusals of
** forms it does not carry. Host only: no launch, no buffers */
static void test_pass_choice(void) {
    const int p0 = m40k_quant_gemv_v2_pass, d0 = m40k_quant_gemv_v2_pass_depth;
    m40k_qlinear_args a = {0};
    a.M = 1, a.N = 4096, a.K = 13696, a.wtype = M40_DTYPE_Q4;
    m40k_quant_gemv_v2_pass = 1;
    m40k_quant_gemv_v2_pass_depth = 1; /* one chunk of weights ahead */
    m40k_qgemv_variant v = m40k_quant_gemv_choose(&a, 132);
    CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && v.R == 2 && !v.ez && v.depth <= 1);
    a.wtype = M40_DTYPE_Q8;
    v = m40k_quant_gemv_choose(&a, 132);
    CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2);
    a.K = 4096; /* int8 that v2 stages whole already: unchanged */
    CHECK(m40k_quant_gemv_choose(&a, 132).D != 2);
    a.K = 13696, a.nw = x_dummy_nw, a.wtype = M40_DTYPE_Q4;
    CHECK(m40k_quant_gemv_choose(&a, 132).D != 2);
    a.nw = NULL;
    for (int pv = 2; pv <= 3; pv++) { /* the exponent-zero decode in passes: int4 (2), int8 too (3) */
        m40k_quant_gemv_v2_pass = pv;
        a.wtype = M40_DTYPE_Q4;
        v = m40k_quant_gemv_choose(&a, 132);
        CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && v.R == 2 && v.ez && v.depth <= 1);
        a.wtype = M40_DTYPE_Q8;
        v = m40k_quant_gemv_choose(&a, 132);
        CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && v.ez == (pv == 3));
        const int ez0 = m40k_quant_gemv_v2_ez;
        m40k_quant_gemv_v2_ez = 0; /* no EZ anywhere: passes with v2's own decode */
        v = m40k_quant_gemv_choose(&a, 132);
        CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && !v.ez);
        m40k_quant_gemv_v2_ez = ez0;
    }
    /* int4's ring of four chunks: the rule (0) with row scales only, 4
    ** with group scales too, never int8 */
    m40k_quant_gemv_v2_pass = 2;
    for (int dv = 0; dv <= 4; dv += 4) {
        m40k_quant_gemv_v2_pass_depth = dv;
        a.wtype = M40_DTYPE_Q4, a.group = 0;
        v = m40k_quant_gemv_choose(&a, 132);
        CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && v.ez && v.depth == 4);
        a.group = 128;
        CHECK(m40k_quant_gemv_choose(&a, 132).depth == (dv ? 4 : 0));
        a.group = 0, a.wtype = M40_DTYPE_Q8;
        CHECK(m40k_quant_gemv_choose(&a, 132).depth <= 1);
    }
    /* the launcher refuses a ring in passes where none is carried: int8
    ** (checked before any launch, so no buffers are needed) */
    const m40k_qgemv_variant ring = {M40K_QGEMV_V2, 2, 2, 0, 4, 0, 0, 0};
    a.wtype = M40_DTYPE_Q8;
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &ring) != 0);
    a.wtype = M40_DTYPE_Q4;
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 2, 0, 2, 0, 0, 0}) != 0);
    /* x double-buffered (db), the chooser's rule under m40k_quant_gemv_v2_pass_db
    ** (0 the rule, 1 never, 2 int4 one chunk ahead too, 5 as 0): int4's ring
    ** (row scales, EZ), int4g128 one chunk ahead with EZ, int8 without EZ
    ** (pass 2) one chunk ahead, int8 with EZ (pass 3) never */
    static const int dbs[4] = {0, 1, 2, 5};
    static const struct { int wt, group, pass, depth, db[4]; } dbr[4] = {
        {M40_DTYPE_Q4, 0, 2, 4, {1, 0, 1, 1}},
        {M40_DTYPE_Q4, 128, 2, 0, {0, 0, 1, 0}},
        {M40_DTYPE_Q8, 0, 2, 0, {1, 0, 1, 1}},
        {M40_DTYPE_Q8, 0, 3, 0, {0, 0, 0, 0}},
    };
    const int b0 = m40k_quant_gemv_v2_pass_db;
    m40k_quant_gemv_v2_pass_depth = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            m40k_quant_gemv_v2_pass = dbr[i].pass, m40k_quant_gemv_v2_pass_db = dbs[j];
            a.wtype = dbr[i].wt, a.group = dbr[i].group;
            v = m40k_quant_gemv_choose(&a, 132);
            CHECK(v.kernel == M40K_QGEMV_V2 && v.D == 2 && v.ez == (dbr[i].wt == M40_DTYPE_Q4 || dbr[i].pass == 3));
            CHECK(v.depth == dbr[i].depth || (dbr[i].depth == 0 && v.depth <= 1));
            CHECK(v.db == dbr[i].db[j]);
        }
    m40k_quant_gemv_v2_pass_db = b0, m40k_quant_gemv_v2_pass = 2, a.group = 0;
    /* the launcher refuses db where no instance is: int8 with EZ, int4
    ** without (one chunk ahead or the ring), fp16, x staged whole */
    a.wtype = M40_DTYPE_Q8;
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 2, 0, 0, 0, 1, 1}) != 0);
    a.wtype = M40_DTYPE_Q4;
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 2, 0, 0, 0, 0, 1}) != 0);
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 2, 0, 4, 0, 0, 1}) != 0);
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 1, 0, 0, 0, 1, 1}) != 0);
    a.wtype = M40_DTYPE_F16;
    CHECK(m40k_quant_gemv_variant(NULL, &a, 132, &(m40k_qgemv_variant){M40K_QGEMV_V2, 2, 2, 0, 0, 0, 0, 1}) != 0);
    a.wtype = M40_DTYPE_Q4; /* int8's split-K is v3 in segments, also D 2 */
    m40k_quant_gemv_v2_pass = 0;
    CHECK(m40k_quant_gemv_choose(&a, 132).D != 2);
    m40k_quant_gemv_v2_pass = p0, m40k_quant_gemv_v2_pass_depth = d0;
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_quant_gpu");
    if (!G) return M40T_SKIP;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    test_pass_choice();
    test_odd_shapes();
    test_x_range();
    test_glu();
    /* M40_QUANT_QUICK=1: odd shapes only (compute-sanitizer runs); 2: fewer */
    const char *quick = getenv("M40_QUANT_QUICK");
    if (!quick || (strcmp(quick, "1") != 0 && strcmp(quick, "2") != 0)) test_chatglm_shapes();
    m40_ctx_destroy(C);
    m40_ctx_destroy(G);
    return m40t_finish("test_quant_gpu");
}
