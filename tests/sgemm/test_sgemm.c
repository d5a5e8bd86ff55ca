/* kernels/sgemm.cu against the CPU reference m40__ref_linear, through the
** launcher (every variant forced in turn, plus the automatic plan) and through
** m40_matmul. Shapes take each of M, N, K in {1, 7, 127, 128, 129, 1000, 4097};
** both layouts (C = A·B and y = x·Wᵀ), F32 and F16 B, every epilogue, split-K,
** misaligned pointers and padded leading dims, outputs poisoned with NaN
** before each run. Exits 77 without a GPU. */
#include "check.h"
#include "half.h"
#include "ref/ref.h"
#include "../kernels/sgemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *G;
static int SMS = 1;

/* Device buffer of n floats (n counts 4-byte words, so F16 data fits too). */
typedef struct dbuf {
    m40_tensor *t;
    float *p;
    int64_t n;
} dbuf;

static dbuf dbuf_new(int64_t n) {
    dbuf d = {0};
    d.n = n < 1 ? 1 : n;
    m40_status st = m40_tensor_new(G, M40_DTYPE_F32, 1, &d.n, &d.t);
    if (st != M40_OK) {
        fprintf(stderr, "tensor_new(%lld floats): %s\n", (long long)d.n, m40_errmsg(G));
        exit(1);
    }
    d.p = m40_tensor_get_data(d.t);
    return d;
}

static void dbuf_put(dbuf d, const void *host) {
    CHECK_ST(m40_tensor_upload(G, d.t, host, (size_t)d.n * 4), M40_OK);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float urand(void) { /* uniform [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

enum { EPI_NONE, EPI_BIAS, EPI_BIAS_RELU, EPI_RES_SILU, EPI_BIAS_RES_INPLACE, EPI_COUNT };
static const char *EPI_NAME[] = {"", " +bias", " +bias relu", " +res silu", " +bias +res(in place)"};

typedef struct problem {
    int M, N, K, b_nk, b_f16, misalign;
    int64_t lda, ldb, ldc;
    float *a, *b32, *bias, *res; /* host: A [M,lda], B as float (F16-rounded if b_f16) */
    uint16_t *b16;
    double *prod;                 /* A·op(B) in double [M,N] */
    dbuf da, db, dc, dbias, dres;
} problem;

static void problem_init(problem *p, int M, int N, int K, int b_nk, int b_f16, int misalign) {
    memset(p, 0, sizeof *p);
    p->M = M; p->N = N; p->K = K; p->b_nk = b_nk; p->b_f16 = b_f16; p->misalign = misalign;
    /* misaligned: one element off a 16-byte boundary and odd leading dims */
    int off = misalign ? 1 : 0;
    p->lda = K + off;
    p->ldb = (b_nk ? K : N) + off;
    p->ldc = N + off;
    int64_t brows = b_nk ? N : K;
    p->a = calloc((size_t)M * p->lda + 1, 4);
    p->b32 = calloc((size_t)brows * p->ldb + 1, 4);
    p->b16 = calloc((size_t)brows * p->ldb + 2, 2);
    p->bias = calloc((size_t)N + 1, 4);
    p->res = calloc((size_t)M * p->ldc + 1, 4);
    for (int64_t i = 0; i < (int64_t)M * p->lda; i++) p->a[i] = urand();
    for (int64_t i = 0; i < brows * p->ldb; i++) {
        float v = urand();
        if (b_f16) {
            p->b16[i] = m40__f32_to_f16(v);
            v = m40__f16_to_f32(p->b16[i]); /* the reference sees what the GPU sees */
        }
        p->b32[i] = v;
    }
    for (int i = 0; i < N; i++) p->bias[i] = urand();
    for (int64_t i = 0; i < (int64_t)M * p->ldc; i++) p->res[i] = urand();

    /* Reference: m40__ref_linear wants contiguous x [M,K] and w [N,K]. */
    float *x = malloc((size_t)M * K * 4 + 4), *w = malloc((size_t)N * K * 4 + 4);
    float *y = malloc((size_t)M * N * 4 + 4);
    for (int m = 0; m < M; m++) memcpy(x + (int64_t)m * K, p->a + m * p->lda, (size_t)K * 4);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            w[(int64_t)n * K + k] = b_nk ? p->b32[(int64_t)n * p->ldb + k]
                                         : p->b32[(int64_t)k * p->ldb + n];
    m40__ref_linear(M, N, K, x, w, NULL, y);
    p->prod = malloc((size_t)M * N * 8 + 8);
    for (int64_t i = 0; i < (int64_t)M * N; i++) p->prod[i] = y[i];
    free(x); free(w); free(y);

    /* Device copies, shifted by `off` elements when misaligned. */
    p->da = dbuf_new((int64_t)M * p->lda + 1);
    float *tmp = calloc((size_t)p->da.n, 4);
    memcpy(tmp + off, p->a, (size_t)M * p->lda * 4);
    dbuf_put(p->da, tmp);
    free(tmp);
    int64_t bel = brows * p->ldb;
    p->db = dbuf_new(b_f16 ? (bel + 2) / 2 + 1 : bel + 1);
    tmp = calloc((size_t)p->db.n, 4);
    if (b_f16) memcpy((uint16_t *)tmp + off, p->b16, (size_t)bel * 2);
    else memcpy(tmp + off, p->b32, (size_t)bel * 4);
    dbuf_put(p->db, tmp);
    free(tmp);
    p->dbias = dbuf_new(N + 1);
    tmp = calloc((size_t)N + 1, 4);
    memcpy(tmp + off, p->bias, (size_t)N * 4);
    dbuf_put(p->dbias, tmp);
    free(tmp);
    p->dres = dbuf_new((int64_t)M * p->ldc + 1);
    p->dc = dbuf_new((int64_t)M * p->ldc + 1);
    tmp = calloc((size_t)p->dres.n, 4);
    memcpy(tmp + off, p->res, (size_t)M * p->ldc * 4);
    dbuf_put(p->dres, tmp);
    free(tmp);
}

static void problem_free(problem *p) {
    free(p->a); free(p->b32); free(p->b16); free(p->bias); free(p->res); free(p->prod);
    m40_tensor_destroy(p->da.t); m40_tensor_destroy(p->db.t); m40_tensor_destroy(p->dc.t);
    m40_tensor_destroy(p->dbias.t); m40_tensor_destroy(p->dres.t);
}

/* Runs one configuration and compares. variant < 0: m40k_sgemm's own plan. */
static void run_case(problem *p, int variant, int splits, int epi) {
    int off = p->misalign ? 1 : 0;
    int M = p->M, N = p->N, K = p->K;
    int inplace = epi == EPI_BIAS_RES_INPLACE;
    int use_bias = epi == EPI_BIAS || epi == EPI_BIAS_RELU || inplace;
    int use_res = epi == EPI_RES_SILU || inplace;

    /* C: NaN poison, or the residual itself for the in-place case */
    float *hc = malloc((size_t)p->dc.n * 4);
    m40t_poison(hc, p->dc.n);
    if (inplace) memcpy(hc + off, p->res, (size_t)M * p->ldc * 4);
    dbuf_put(p->dc, hc);

    m40k_sgemm_args a = {
        .M = M, .N = N, .K = K,
        .a = p->da.p + off, .lda = p->lda,
        .b = p->b_f16 ? (const void *)((const uint16_t *)p->db.p + off)
                      : (const void *)(p->db.p + off),
        .ldb = p->ldb, .b_nk = p->b_nk, .b_f16 = p->b_f16,
        .c = p->dc.p + off, .ldc = p->ldc,
        .bias = use_bias ? p->dbias.p + off : NULL,
        .res = inplace ? p->dc.p + off : use_res ? p->dres.p + off : NULL,
        .ldr = p->ldc,
        .act = epi == EPI_BIAS_RELU ? M40K_SGEMM_ACT_RELU
               : epi == EPI_RES_SILU ? M40K_SGEMM_ACT_SILU : M40K_SGEMM_ACT_NONE};
    size_t wsb = variant < 0 ? m40k_sgemm_workspace_size(&a, SMS)
                             : (size_t)(splits > 1 ? splits : 0) * M * N * 4;
    dbuf ws = {0};
    if (wsb) ws = dbuf_new((int64_t)(wsb / 4));
    int e = variant < 0 ? m40k_sgemm(m40_ctx_get_stream(G), &a, SMS, ws.p, wsb)
                        : m40k_sgemm_run(m40_ctx_get_stream(G), &a, variant, splits, ws.p, wsb);
    CHECK(e == 0);
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    CHECK_ST(m40_tensor_download(G, p->dc.t, hc, (size_t)p->dc.n * 4), M40_OK);
    if (ws.t) m40_tensor_destroy(ws.t);

    /* got/ref over the M x N block; the padding column of a misaligned C
    ** must still hold its poison (nothing written outside the matrix). */
    float *got = malloc((size_t)M * N * 4 + 4), *ref = malloc((size_t)M * N * 4 + 4);
    int outside_ok = 1;
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            double v = p->prod[(int64_t)m * N + n];
            if (use_bias) v += p->bias[n];
            if (use_res) v += p->res[(int64_t)m * p->ldc + n];
            if (epi == EPI_BIAS_RELU) v = v > 0 ? v : 0;
            if (epi == EPI_RES_SILU) v = v / (1.0 + exp(-v));
            ref[(int64_t)m * N + n] = (float)v;
            got[(int64_t)m * N + n] = hc[off + (int64_t)m * p->ldc + n];
        }
        if (off && !inplace && m + 1 < M && !isnan(hc[off + (int64_t)m * p->ldc + N]))
            outside_ok = 0;
    }
    CHECK(outside_ok);
    static const char *VN[] = {"tile128", "tile64", "skinny"};
    char name[160];
    snprintf(name, sizeof name, "%s M=%d N=%d K=%d %s%s%s %s/%d", p->b_nk ? "x·Wᵀ" : "A·B", M,
             N, K, p->b_f16 ? "f16B" : "f32B", p->misalign ? " misaligned" : "",
             EPI_NAME[epi], variant < 0 ? "auto" : VN[variant], splits);
    /* Tolerance. Inputs are uniform in [-1,1], so each product is <= 1 and
    ** an FP32 sum of K of them (any order: tiles, split-K partials, the
    ** skinny kernel's lane-strided sums and shuffle tree) differs from the
    ** double reference by far less than K·2^-22 (= 2K ulps of 1.0); bias and
    ** residual add <= 2 more roundings of values <= K+2; SiLU's expf is within
    ** 2 ulp. The reference uses the F16-rounded B, so F16 adds no error.
    ** NMSE: K·eps² scale, 1e-9 is generous and still catches a wrong term. */
    m40t_tol tol = {(double)(K + 2) * 2.4e-7, 1e-5, 1e-9};
    m40t_compare(name, got, ref, (int64_t)M * N, tol);
    free(got); free(ref); free(hc);
}

/* The eager op: m40_matmul on the GPU vs the CPU context (bias fused). */
static void test_matmul_op(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *C = NULL;
    if (m40_ctx_create(&d, &C) != M40_OK) { CHECK(0); return; }
    static const int64_t mnk[][3] = {{1, 4097, 129}, {7, 127, 1000}, {129, 1000, 128},
                                     {1000, 129, 4097}, {4097, 7, 127}};
    for (size_t t = 0; t < sizeof mnk / sizeof mnk[0]; t++) {
        int64_t M = mnk[t][0], N = mnk[t][1], K = mnk[t][2];
        int64_t xs[2] = {M, K}, wsh[2] = {N, K}, ys[2] = {M, N};
        m40_tensor *xg, *wg, *bg, *yg, *xc, *wc, *bc, *yc;
        m40_tensor_new(G, M40_DTYPE_F32, 2, xs, &xg); m40_tensor_new(C, M40_DTYPE_F32, 2, xs, &xc);
        m40_tensor_new(G, M40_DTYPE_F32, 2, wsh, &wg); m40_tensor_new(C, M40_DTYPE_F32, 2, wsh, &wc);
        m40_tensor_new(G, M40_DTYPE_F32, 1, &N, &bg); m40_tensor_new(C, M40_DTYPE_F32, 1, &N, &bc);
        m40_tensor_new(G, M40_DTYPE_F32, 2, ys, &yg); m40_tensor_new(C, M40_DTYPE_F32, 2, ys, &yc);
        m40_fill_random(G, 11 + t, M40_RANDOM_UNIFORM, -1, 1, xg);
        m40_fill_random(C, 11 + t, M40_RANDOM_UNIFORM, -1, 1, xc);
        m40_fill_random(G, 21 + t, M40_RANDOM_UNIFORM, -1, 1, wg);
        m40_fill_random(C, 21 + t, M40_RANDOM_UNIFORM, -1, 1, wc);
        m40_fill_random(G, 31 + t, M40_RANDOM_UNIFORM, -1, 1, bg);
        m40_fill_random(C, 31 + t, M40_RANDOM_UNIFORM, -1, 1, bc);
        float *hy = malloc((size_t)(M * N) * 4), *hr = malloc((size_t)(M * N) * 4);
        m40t_poison(hy, M * N);
        CHECK_ST(m40_tensor_upload(G, yg, hy, (size_t)(M * N) * 4), M40_OK);
        CHECK_ST(m40_matmul(G, xg, wg, bg, yg), M40_OK);
        CHECK_ST(m40_matmul(C, xc, wc, bc, yc), M40_OK);
        CHECK_ST(m40_tensor_download(G, yg, hy, (size_t)(M * N) * 4), M40_OK);
        CHECK_ST(m40_tensor_download(C, yc, hr, (size_t)(M * N) * 4), M40_OK);
        char name[96];
        snprintf(name, sizeof name, "m40_matmul M=%lld N=%lld K=%lld +bias", (long long)M,
                 (long long)N, (long long)K);
        m40t_tol tol = {(double)(K + 1) * 2.4e-7, 1e-5, 1e-9}; /* as run_case */
        m40t_compare(name, hy, hr, M * N, tol);
        free(hy); free(hr);
        m40_tensor_destroy(xg); m40_tensor_destroy(wg); m40_tensor_destroy(bg); m40_tensor_destroy(yg);
        m40_tensor_destroy(xc); m40_tensor_destroy(wc); m40_tensor_destroy(bc); m40_tensor_destroy(yc);
    }
    m40_ctx_destroy(C);
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_sgemm");
    if (!G) return M40T_SKIP;
    m40_device_info info;
    if (m40_ctx_get_info(G, &info) == M40_OK) SMS = info.sm_count;
    /* Each of 1, 7, 127, 128, 129, 1000, 4097 appears as M, N and K. */
    static const int SH[][3] = {
        {1, 1, 1},        {7, 7, 7},       {1, 4097, 127},   {127, 1, 4097},
        {128, 128, 128},  {129, 129, 129}, {7, 1000, 1000},  {1000, 7, 129},
        {129, 1000, 7},   {4097, 129, 128}, {128, 4097, 129}, {1000, 127, 4097},
        {4097, 128, 7},   {3, 1000, 1000}, {300, 600, 1000},
        /* K = 4 mod 8: 16-byte loads with a residue tile of 4 */
        {129, 127, 1004}, {5, 200, 12},
    };
    const int nsh = (int)(sizeof SH / sizeof SH[0]);
    /* M40_SGEMM_QUICK=1 (compute-sanitizer's racecheck, which instruments
    ** every shared-memory access): only shapes up to 300 in M and N, so every
    ** tile, split-K and epilogue path still runs, on small problems */
    const char *quick = getenv("M40_SGEMM_QUICK");
    const int is_quick = quick && strcmp(quick, "1") == 0;
    for (int s = 0; s < nsh; s++) {
        if (is_quick && (SH[s][0] > 300 || SH[s][1] > 300)) continue;
        for (int layout = 0; layout < 2; layout++) {
            for (int f16 = 0; f16 < 2; f16++) {
                problem p;
                problem_init(&p, SH[s][0], SH[s][1], SH[s][2], layout, f16, 0);
                for (int epi = 0; epi < EPI_COUNT; epi++) run_case(&p, -1, 1, epi);
                run_case(&p, M40K_SGEMM_TILE128, 1, (s + 1) % EPI_COUNT);
                run_case(&p, M40K_SGEMM_TILE64, 1, (s + 2) % EPI_COUNT);
                run_case(&p, M40K_SGEMM_TILE64, 3, (s + 3) % EPI_COUNT);
                run_case(&p, M40K_SGEMM_TILE128, 2, (s + 4) % EPI_COUNT);
                if (layout == 1) run_case(&p, M40K_SGEMM_SKINNY, 1, s % EPI_COUNT);
                problem_free(&p);
                /* The element-by-element load path */
                problem_init(&p, SH[s][0], SH[s][1], SH[s][2], layout, f16, 1);
                run_case(&p, -1, 1, (s + f16) % EPI_COUNT);
                run_case(&p, M40K_SGEMM_TILE64, 2, EPI_BIAS_RES_INPLACE);
                problem_free(&p);
            }
        }
    }
    test_matmul_op();
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    m40_ctx_destroy(G);
    return m40t_finish("test_sgemm");
}
