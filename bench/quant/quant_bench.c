/* Quantized GEMV/GEMM bench (issue 6), one process, CUDA events, median of
** repeated launches after warm-up, fresh random data.
**
**   m40-bench-quant [--quick] [--gemv | --prefill]   (sections 1, 2, 4 | 3)
**
** 1. Device-to-device copy bandwidth (bytes read + written / time), the
**    ceiling for the GEMV.
** 2. GEMV (decode) for the ChatGLM2 shapes 4608x4096, 4096x4096, 27392x4096,
**    4096x13696, 65024x4096 at batch 1, 2, 4, 8; int8 and int4 (per-row f16
**    scales, the official layout), int4 g128 and fp16 weights. Effective
**    bandwidth = (quantized weight + scale bytes) / time; the weights rotate
**    over enough copies that the working set is >= 4x L2 (no cache hits).
**    Every rows-per-warp variant of kernel v3, and the previous kernel v2,
**    is timed; "auto" is what the library uses.
** 3. Prefill GEMM, M = 128 ... 2048: GFLOP/s of our dequantizing GEMM vs
**    our FP32 SGEMM (m40k_sgemm, kernels/sgemm.cu) and cuBLAS SGEMM
**    (CUBLAS_PEDANTIC_MATH: true FP32, no TF32), both on the dequantized
**    FP32 matrix.
** 4. Projected ChatGLM2-6B decode tokens/s on an M40 (288 GB/s) from the
**    measured fractions of copy bandwidth (weights only; attention, norms
**    and the KV cache are left out). */
#include "m40/quant.h"
#include "half.h"
#include "../../kernels/quant.h"
#include "gemv_versions.h"
#include "../../kernels/sgemm.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static cudaStream_t S;
static cudaEvent_t E0, E1;
static int SMS;
static size_t L2;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float urand(void) { return (float)(rng() >> 40) * (1.0f / 16777216.0f); }

static void fill_bytes(void *p, size_t n) {
    unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { uint64_t r = rng(); memcpy(b + i, &r, 8); }
    for (; i < n; i++) b[i] = (unsigned char)rng();
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median over `reps` samples of the time (ms) per call of fn, after `warm`
** untimed calls; each sample times `per` calls issued back to back between
** one pair of events (as a decode step runs its linears), so the ~5-10 us
** an event pair adds around one short kernel is not charged to it. */
typedef void (*launch_fn)(void *ctx, int i);
static float time_median_n(launch_fn fn, void *ctx, int warm, int reps, int per) {
    float t[256];
    if (reps > 256) reps = 256;
    for (int i = 0; i < warm; i++) fn(ctx, i);
    CK(cudaStreamSynchronize(S));
    int call = warm;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(E0, S));
        for (int j = 0; j < per; j++) fn(ctx, call++);
        CK(cudaEventRecord(E1, S));
        CK(cudaEventSynchronize(E1));
        CK(cudaEventElapsedTime(&t[i], E0, E1));
        t[i] /= (float)per;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_float);
    return t[reps / 2];
}

static float time_median(launch_fn fn, void *ctx, int warm, int reps) {
    return time_median_n(fn, ctx, warm, reps, 1);
}

enum { GEMV_PER = 16 }; /* GEMV calls per timed sample (weights rotate over nbuf copies) */

/* ---- copy ---- */
typedef struct { void *a, *b; size_t n, pool; } copy_ctx;
/* Copies n bytes; below the pool size, each call takes the next n-byte
** slot of the two pools, so that L2 never holds the source (as the GEMV
** rotates over copies of its weights). */
static void copy_launch(void *c, int i) {
    copy_ctx *k = c;
    size_t off = 0;
    if (k->pool > k->n) off = ((size_t)i * ((k->n + 255) & ~(size_t)255)) % (k->pool - k->n) & ~(size_t)255;
    char *a = (char *)k->a + off, *b = (char *)k->b + off;
    CK(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, k->n, cudaMemcpyDeviceToDevice, S));
}

/* ---- gemv / gemm ---- */
typedef struct {
    m40k_qlinear_args a;
    void **w, **s; /* nbuf copies */
    int nbuf, R, gemm, version, bps; /* gemv: bench/quant/gemv_versions.cu (0 = library), blocks per SM */
} q_ctx;
static void q_launch(void *c, int i) {
    q_ctx *k = c;
    m40k_qlinear_args a = k->a;
    a.w = k->w[i % k->nbuf];
    a.scale = k->s[i % k->nbuf];
    /* prefill: the library's path (m40k_quant_linear: the SGEMM with W
    ** converted as it loads where it can, else quant_gemm.cu) */
    int e = k->gemm ? m40k_quant_linear(S, &a, SMS)
                    : m40b_quant_gemv_version(S, &a, SMS, k->version, k->R, k->bps);
    if (e) { fprintf(stderr, "launch failed: %s\n", cudaGetErrorString((cudaError_t)e)); exit(1); }
}

typedef struct { cublasHandle_t h; int M, N, K; const float *x, *w; float *y; } sg_ctx;
static void sg_launch(void *c, int i) {
    (void)i;
    sg_ctx *k = c;
    const float one = 1.0f, zero = 0.0f;
    /* row-major y[M,N] = x[M,K]·w[N,K]ᵀ, as lib/cuda/backend.c does it */
    if (cublasSgemm(k->h, CUBLAS_OP_T, CUBLAS_OP_N, k->N, k->M, k->K, &one, k->w, k->K, k->x, k->K,
                    &zero, k->y, k->N) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasSgemm failed\n");
        exit(1);
    }
}

/* our FP32 SGEMM (kernels/sgemm.cu) on the dequantized matrix, y = x·wᵀ */
typedef struct { m40k_sgemm_args a; void *ws; size_t wsb; } os_ctx;
static void os_launch(void *c, int i) {
    (void)i;
    os_ctx *k = c;
    int e = m40k_sgemm(S, &k->a, SMS, k->ws, k->wsb);
    if (e) { fprintf(stderr, "m40k_sgemm failed: %s\n", cudaGetErrorString((cudaError_t)e)); exit(1); }
}

typedef struct {
    const char *name;
    m40_quant_format f;
} fmt_t;
static const fmt_t FMTS[] = {
    {"int8", {M40_DTYPE_Q8, 0, M40_DTYPE_F16}},
    {"int4", {M40_DTYPE_Q4, 0, M40_DTYPE_F16}},
    {"int4g128", {M40_DTYPE_Q4, 128, M40_DTYPE_F16}},
    {"fp16", {M40_DTYPE_F16, 0, M40_DTYPE_F16}},
};
#define NFMT 4

/* Device weights for one format and shape: random bits, sane f16 scales. */
static void make_weights(const m40_quant_format *f, int N, int K, int nbuf, void **w, void **s,
                         size_t *wbytes, size_t *sbytes) {
    m40_tensor_desc dd, sd;
    m40_quant_descs(f, N, K, &dd, &sd);
    *wbytes = (size_t)m40_tensor_desc_numel(&dd) * m40_dtype_size(dd.dtype);
    *sbytes = f->wtype == M40_DTYPE_F16 ? 0 : (size_t)m40_tensor_desc_numel(&sd) * m40_dtype_size(sd.dtype);
    void *hw = malloc(*wbytes), *hs = malloc(*sbytes + 2);
    for (int b = 0; b < nbuf; b++) {
        if (f->wtype == M40_DTYPE_F16) { /* random normal-ish halves, no inf/NaN */
            uint16_t *h = hw;
            for (size_t i = 0; i < *wbytes / 2; i++) h[i] = m40__f32_to_f16((urand() - 0.5f) * 0.1f);
        } else {
            fill_bytes(hw, *wbytes);
        }
        uint16_t *hh = hs;
        for (size_t i = 0; i < *sbytes / 2; i++) hh[i] = m40__f32_to_f16(0.001f + 0.01f * urand());
        CK(cudaMalloc(&w[b], *wbytes));
        CK(cudaMemcpy(w[b], hw, *wbytes, cudaMemcpyHostToDevice));
        s[b] = NULL;
        if (*sbytes) {
            CK(cudaMalloc(&s[b], *sbytes));
            CK(cudaMemcpy(s[b], hs, *sbytes, cudaMemcpyHostToDevice));
        }
    }
    free(hw);
    free(hs);
}

static float *dev_random_floats(size_t n, float lo, float hi) {
    float *h = malloc(n * sizeof *h), *d;
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * urand();
    CK(cudaMalloc((void **)&d, n * sizeof *d));
    CK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* fraction of copy bandwidth at batch 1 (best variant), per [shape][fmt] */
static double FRAC[5][NFMT];

int main(int argc, char **argv) {
    int quick = 0, do_gemv = 1, do_prefill = 1, ours = 1, only_m = 0, only_shape = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--gemv") == 0) do_prefill = 0;
        else if (strcmp(argv[i], "--prefill") == 0) do_gemv = 0;
        else if (strcmp(argv[i], "--no-ours") == 0) ours = 0;
        else if (strcmp(argv[i], "--m") == 0 && i + 1 < argc) only_m = atoi(argv[++i]);
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) only_shape = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: m40-bench-quant [--quick] [--gemv | --prefill [--no-ours] [--m M] "
                            "[--shape 0-4]]\n"
                            "  --shape i: only ChatGLM2 shape i (GEMV: 0-4, prefill: 0-3)\n");
            return 2;
        }
    }
    struct cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    SMS = p.multiProcessorCount;
    L2 = (size_t)p.l2CacheSize;
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    CK(cudaEventCreate(&E0));
    CK(cudaEventCreate(&E1));
    printf("GPU %s, %d SMs, L2 %zu MB, cc %d.%d\n", p.name, SMS, L2 >> 20, p.major, p.minor);

    if (do_gemv) {
        /* 1. copy */
        copy_ctx cc = {.n = (size_t)1 << 30, .pool = (size_t)1 << 30};
        CK(cudaMalloc(&cc.a, cc.n));
        CK(cudaMalloc(&cc.b, cc.n));
        CK(cudaMemset(cc.a, 1, cc.n));
        CK(cudaMemset(cc.b, 2, cc.n));
        float tc = time_median(copy_launch, &cc, 3, 15);
        double copy_gbs = 2.0 * (double)cc.n / (tc * 1e-3) / 1e9;
        printf("device copy 1 GiB: %.3f ms, %.0f GB/s (read + write)\n\n", tc, copy_gbs);

        /* 2. GEMV; split-K scratch for every shape */
        const size_t ws_bytes = (size_t)64 << 20;
        float *ws;
        CK(cudaMalloc((void **)&ws, ws_bytes));
        static const int shapes[5][2] = {{4608, 4096}, {4096, 4096}, {27392, 4096}, {4096, 13696}, {65024, 4096}};
        static const int batches[4] = {1, 2, 4, 8};
        printf("GEMV: effective GB/s = (weight + scale bytes) / median time per call, %d calls back to back\n"
               "per sample (1x: one call between events, for comparison); frac = / copy GB/s.\n", GEMV_PER);
        printf("auto = what m40_quant_linear runs (int8/int4: kernel v3 at batch <= 2, v2 above; fp16: v2).\n"
               "Then every variant's time in us: v3 R=1/2/4, v4 = v3 with 4 chunks in flight per warp\n"
               "(batch <= 2), the previous kernel v2 at R=2/4, v7 = v3 with split-K (R = 2 at batch <= 2,\n"
               "else 4) and v9 = split-K at R = 8 (batch >= 3, row scales).\n"
               "frac sz (batch 1 rows) = GB/s / a device copy moving the same bytes (half read, half\n"
               "written; %d copies back to back, sources rotating through 1 GiB): what this GPU streams at\n"
               "this size.\n", GEMV_PER);
        printf("%-12s %-9s %2s %9s %9s %6s %7s %6s %7s  %s\n", "shape", "format", "B", "us(auto)", "GB/s", "frac",
               "frac sz", "B/B1", "frac 1x", "variants (us)");
        int reps = quick ? 10 : 15;
        for (int si = 0; si < 5; si++) {
            int N = shapes[si][0], K = shapes[si][1];
            if (only_shape >= 0 && si != only_shape) continue;
            for (int fi = 0; fi < NFMT; fi++) {
                if (quick && fi == 2) continue;
                size_t wb, sb;
                size_t one = m40_quant_nbytes(&FMTS[fi].f, N, K);
                int nbuf = (int)((4 * L2 + one - 1) / one);
                if (nbuf < 2) nbuf = 2;
                if (nbuf > 64) nbuf = 64;
                void *w[64], *s[64];
                make_weights(&FMTS[fi].f, N, K, nbuf, w, s, &wb, &sb);
                float *x = dev_random_floats((size_t)8 * K, -1.0f, 1.0f), *y;
                CK(cudaMalloc((void **)&y, (size_t)8 * N * sizeof(float)));
                double t1 = 0;
                copy_ctx cs = cc;
                cs.n = (wb + sb) / 2;
                const double copy_sz_gbs = 2.0 * (double)cs.n / (time_median_n(copy_launch, &cs, 3, reps, GEMV_PER) * 1e-3) / 1e9;
                const int isq = FMTS[fi].f.wtype != M40_DTYPE_F16;
                for (int bi = 0; bi < 4; bi++) {
                    const int B = batches[bi];
                    q_ctx k = {.a = {.M = B, .N = N, .K = K, .x = x, .wtype = FMTS[fi].f.wtype,
                                     .scale_f16 = 1, .group = FMTS[fi].f.wtype == M40_DTYPE_F16 ? 0 : FMTS[fi].f.group,
                                     .y = y, .ws = ws, .ws_bytes = ws_bytes},
                               .w = w, .s = s, .nbuf = nbuf, .R = 0};
                    float ta = time_median_n(q_launch, &k, 3, reps, GEMV_PER);
                    float ta1 = time_median(q_launch, &k, 3, reps);
                    char var[512];
                    int vl = 0;
                    var[0] = 0;
                    /* {version, R, bps}; version 4 = v3 with 4 chunks in flight (B <= 2) */
                    static const int vs[][3] = {{3, 1, 0}, {3, 2, 0}, {3, 4, 0}, {4, 1, 0}, {4, 2, 0},
                                                {4, 4, 0}, {2, 2, 0}, {2, 4, 0}, {7, 0, 0}, {9, 0, 0}};
                    static const char *vn[] = {"v3R1", "v3R2", "v3R4", "v4R1", "v4R2",
                                               "v4R4", "v2R2", "v2R4", "v7", "v9"};
                    for (int v = 0; v < 10; v++) {
                        /* v9: split-K at R = 8, batch >= 3, row scales */
                        if (v == 9 && (B < 3 || FMTS[fi].f.group)) continue;
                        if (!isq && v >= 3) continue; /* fp16: v2 only, = R1/2/4 */
                        if (v >= 3 && v <= 5 && B > 2) continue;
                        if (v == 0 && B > 2) continue;
                        q_ctx kv = k;
                        kv.version = vs[v][0];
                        kv.R = vs[v][1];
                        kv.bps = vs[v][2];
                        float t = time_median_n(q_launch, &kv, 2, reps, GEMV_PER);
                        vl += snprintf(var + vl, sizeof var - (size_t)vl, " %s %.2f", isq ? vn[v] : vn[v] + 2, t * 1e3);
                    }
                    double gbs = (double)(wb + sb) / (ta * 1e-3) / 1e9;
                    if (bi == 0) {
                        t1 = ta;
                        FRAC[si][fi] = gbs / copy_gbs;
                    }
                    char sh[32];
                    snprintf(sh, sizeof sh, "%dx%d", N, K);
                    printf("%-12s %-9s %2d %9.2f %9.0f %6.3f %7.3f %6.2f %7.3f %s\n", sh, FMTS[fi].name, B,
                           ta * 1e3, gbs, gbs / copy_gbs, gbs / copy_sz_gbs, ta / t1,
                           (double)(wb + sb) / (ta1 * 1e-3) / 1e9 / copy_gbs, var);
                    fflush(stdout);
                }
                for (int b = 0; b < nbuf; b++) { CK(cudaFree(w[b])); if (s[b]) CK(cudaFree(s[b])); }
                CK(cudaFree(x));
                CK(cudaFree(y));
            }
        }

        CK(cudaFree(cc.a));
        CK(cudaFree(cc.b));
        CK(cudaFree(ws));

        /* 4. ChatGLM2-6B decode on an M40, projected (needs every shape) */
        const double m40_bw = 288e9;
        /* per layer: qkv 4608x4096, dense 4096x4096, h_to_4h 27392x4096, 4h_to_h 4096x13696;
        ** the output layer 65024x4096 stays fp16 (as in the official quantization) */
        if (only_shape < 0) {
            printf("\nPROJECTION (not measured on an M40): ChatGLM2-6B decode on an M40 (288 GB/s), batch 1,\n"
                   "weights only, each linear at the fraction of copy bandwidth measured above (auto):\n");
            for (int fi = 0; fi < 2; fi++) {
                double t = 0, bytes = 0;
                for (int si = 0; si < 4; si++) {
                    double b = (double)m40_quant_nbytes(&FMTS[fi].f, shapes[si][0], shapes[si][1]) * 28;
                    bytes += b;
                    t += b / (m40_bw * FRAC[si][fi]);
                }
                double bo = (double)m40_quant_nbytes(&FMTS[3].f, 65024, 4096);
                bytes += bo;
                t += bo / (m40_bw * FRAC[4][3]);
                printf("  %s: %.2f GB per token, %.1f tok/s at the measured fractions of copy bandwidth "
                       "(%.1f tok/s at 100%% of 288 GB/s)\n",
                       FMTS[fi].name, bytes / 1e9, 1.0 / t, m40_bw / bytes);
            }
            printf("  (assumes the M40 reaches the same fraction of its copy bandwidth as this GPU; the M40's own\n"
                   "   copy reaches ~0.8-0.9 of 288 GB/s, so the real figure is lower by that factor)\n");
        }
    }
    if (do_prefill) {
        /* 3. prefill GEMM vs cuBLAS on the dequantized FP32 matrix */
        cublasHandle_t h;
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return 1; }
        cublasSetStream(h, S);
        cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
        printf("\nPrefill GEMM: GFLOP/s = 2MNK / median time. Baselines on the dequantized FP32 matrix: our SGEMM\n"
               "(kernels/sgemm.cu, m40k_sgemm with its split-K workspace) and cuBLAS SGEMM (pedantic FP32).\n"
               "int8 / int4 / fp16: the library's path, m40k_quant_linear (since 2026-12-02 the SGEMM with W\n"
               "converted as its tiles load; before, kernels/quant_gemm.cu).\n");
        printf("%-12s %5s %8s %8s %8s %8s %8s %7s %7s %7s %7s %7s %7s\n", "shape", "M", "cuBLAS", "oursSG", "int8",
               "int4", "fp16", "i8/sg", "i4/sg", "f16/sg", "i8/cub", "i4/cub", "f16/cub");
        static const int gshapes[4][2] = {{4096, 4096}, {27392, 4096}, {4096, 13696}, {4608, 4096}};
        static const int Ms[5] = {128, 256, 512, 1024, 2048};
        for (int si = 0; si < 4; si++) {
            if (only_shape >= 0 && si != only_shape) continue;
            int N = gshapes[si][0], K = gshapes[si][1];
            /* the int4 weight, dequantized on the host for cuBLAS */
            m40_quant_format f4 = FMTS[1].f;
            void *w4[1], *s4[1];
            size_t wb, sb;
            make_weights(&f4, N, K, 1, w4, s4, &wb, &sb);
            unsigned char *hq = malloc(wb);
            uint16_t *hs = malloc(sb);
            CK(cudaMemcpy(hq, w4[0], wb, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hs, s4[0], sb, cudaMemcpyDeviceToHost));
            float *hw = malloc((size_t)N * K * sizeof *hw);
            for (int64_t n = 0; n < N; n++) {
                float sc = m40__f16_to_f32(hs[n]);
                for (int64_t kk = 0; kk < K; kk++) {
                    unsigned byte = hq[n * (K / 2) + kk / 2];
                    unsigned nib = (kk & 1) ? (byte & 0xFu) : (byte >> 4);
                    hw[n * K + kk] = (float)((int)nib - (int)((nib & 8u) << 1)) * sc;
                }
            }
            float *dw;
            CK(cudaMalloc((void **)&dw, (size_t)N * K * sizeof *dw));
            CK(cudaMemcpy(dw, hw, (size_t)N * K * sizeof *dw, cudaMemcpyHostToDevice));
            free(hw); free(hq); free(hs);
            void *w8[1], *s8[1], *wf[1], *sf[1];
            size_t wb8, sb8, wbf, sbf;
            make_weights(&FMTS[0].f, N, K, 1, w8, s8, &wb8, &sb8);
            make_weights(&FMTS[3].f, N, K, 1, wf, sf, &wbf, &sbf);
            float *x = dev_random_floats((size_t)2048 * K, -1.0f, 1.0f), *y;
            CK(cudaMalloc((void **)&y, (size_t)2048 * N * sizeof(float)));
            for (int mi = 0; mi < 5; mi++) {
                if (quick && !only_m && mi % 2) continue;
                int M = Ms[mi];
                if (only_m && M != only_m) continue;
                double flop = 2.0 * M * N * (double)K;
                /* progress on stderr: a failing launch shows up at the next synchronize */
                fprintf(stderr, "prefill %dx%d M=%d: cuBLAS\n", N, K, M);
                sg_ctx sg = {h, M, N, K, x, dw, y};
                float tcub = time_median(sg_launch, &sg, 3, quick ? 5 : 15);
                os_ctx os = {.a = {.M = M, .N = N, .K = K, .a = x, .lda = K, .b = dw, .ldb = K, .b_nk = 1,
                                   .c = y, .ldc = N}};
                os.wsb = m40k_sgemm_workspace_size(&os.a, SMS);
                os.ws = NULL;
                if (os.wsb) CK(cudaMalloc(&os.ws, os.wsb));
                fprintf(stderr, "prefill %dx%d M=%d: m40k_sgemm (workspace %zu bytes)\n", N, K, M, os.wsb);
                float tos = ours ? time_median(os_launch, &os, 3, quick ? 5 : 15) : NAN;
                if (os.ws) CK(cudaFree(os.ws));
                float tq[3];
                void **ws[3] = {w8, w4, wf}, **ss[3] = {s8, s4, sf};
                int fidx[3] = {0, 1, 3};
                for (int j = 0; j < 3; j++) {
                    q_ctx k = {.a = {.M = M, .N = N, .K = K, .x = x, .wtype = FMTS[fidx[j]].f.wtype, .scale_f16 = 1,
                                     .group = 0, .y = y},
                               .w = ws[j], .s = ss[j], .nbuf = 1, .gemm = 1};
                    k.a.ws_bytes = m40k_quant_linear_workspace(&k.a, SMS);
                    if (k.a.ws_bytes) CK(cudaMalloc((void **)&k.a.ws, k.a.ws_bytes));
                    fprintf(stderr, "prefill %dx%d M=%d: m40k_quant_linear %s\n", N, K, M, FMTS[fidx[j]].name);
                    tq[j] = time_median(q_launch, &k, 3, quick ? 5 : 15);
                    if (k.a.ws) CK(cudaFree(k.a.ws));
                }
                char sh[32];
                snprintf(sh, sizeof sh, "%dx%d", N, K);
                printf("%-12s %5d %8.0f %8.0f %8.0f %8.0f %8.0f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n", sh, M,
                       flop / tcub / 1e6, flop / tos / 1e6, flop / tq[0] / 1e6, flop / tq[1] / 1e6, flop / tq[2] / 1e6,
                       tos / tq[0], tos / tq[1], tos / tq[2], tcub / tq[0], tcub / tq[1], tcub / tq[2]);
                fflush(stdout);
            }
            CK(cudaFree(dw)); CK(cudaFree(x)); CK(cudaFree(y));
            CK(cudaFree(w4[0])); CK(cudaFree(s4[0])); CK(cudaFree(w8[0])); CK(cudaFree(s8[0]));
            CK(cudaFree(wf[0]));
        }
        cublasDestroy(h);

    }
    return 0;
}
