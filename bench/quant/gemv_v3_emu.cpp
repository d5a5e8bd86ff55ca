/* A host emulation of the quantized GEMV v3 (kernels/quant_gemv_v3.cuh
** gemv_kernel, the source as it is in the tree: gemv_v3_emu.sh extracts it),
** for machines without a GPU: each block run as 256 std::threads with a
** barrier for __syncthreads and per-warp barriers for the shuffles
** (bench/attention/emu_common.h), against a double reference over the same
** quantized weights, and a poisoned tail past y that must stay untouched. It
** checks the whole-K staging (a persistent grid smaller than the row groups,
** so warps walk several; D chunks in flight; the fused norm) and the
** segmented mode, with row scales and with group scales of each GROUPED kind
** (1 f32, 2 f16, 3 the dtype at run time: v3's int8). Not the compiler, not
** timing, not sm_52 rounding. */
#include "emu_common.h" /* bench/attention/: CUDA names on the host */
#define __host__
thread_local D3 gridDim, blockDim;
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline int __ffs(int v) { return v ? __builtin_ctz((unsigned)v) + 1 : 0; }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned char b[8];
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(x >> (8 * i)), b[4 + i] = (unsigned char)(y >> (8 * i));
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)b[(s >> (4 * i)) & 7] << (8 * i);
    return r;
}
/* the staging's max of x's bits is an int: shuffled as its bits, not as a float */
static int __shfl_xor_sync(unsigned m, int v, int w) { return __float_as_int(__shfl_xor_sync(m, __int_as_float(v), w)); }
static inline float __half2float(__half h) { return h2f(h.b); }
static inline __half __ushort_as_half(unsigned short u) { return __half{u}; }
static inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
static float4 *emu_smem; /* the block's dynamic shared memory (blocks run one after another) */
#include "quant_gemv_common.cuh"
#include "quant_plan.h"
namespace {
#include "v3kernel.inc"
}

static int fails = 0;
/* y[b] = scale · (q · x[b]) per row (GROUPED: a scale per row and K-group;
** f16: the scales stored as f16, the reference on their f16 values), double */
template <int WT, int B, int R, int GROUPED, bool SEG, int D, bool NORM>
static void run(const char *what, int N, int K, int group, bool f16, int grid, int cps_max = 0) {
    const bool q4 = WT == M40_DTYPE_Q4;
    const int rb = q4 ? K / 2 : K, ng = GROUPED ? (K + group - 1) / group : 1;
    std::vector<unsigned char> w((size_t)N * rb);
    std::vector<int> q((size_t)N * K);
    std::vector<float> x((size_t)B * K), sc((size_t)N * ng), nw(K), y((size_t)B * N + 8, -7.25f);
    std::vector<__half> sh(sc.size());
    srand(N * 131 + K + B);
    auto rnd = [] { return (float)rand() / RAND_MAX * 2 - 1; };
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            const int v = q4 ? rand() % 16 - 8 : rand() % 256 - 128;
            q[(size_t)n * K + k] = v;
            if (q4) {
                unsigned char &byte = w[(size_t)n * rb + k / 2];
                const unsigned nib = (unsigned)v & 0xFu;
                byte = (k & 1) ? (unsigned char)((byte & 0xF0u) | nib) : (unsigned char)((byte & 0x0Fu) | (nib << 4));
            } else {
                w[(size_t)n * rb + k] = (unsigned char)(signed char)v;
            }
        }
    for (auto &v : x) v = rnd();
    for (size_t i = 0; i < sc.size(); i++) {
        sc[i] = 0.01f + 0.02f * (rnd() + 1);
        sh[i].b = f2h(sc[i]);
        if (f16) sc[i] = h2f(sh[i].b);
    }
    for (auto &v : nw) v = 0.5f + 0.5f * (rnd() + 1);
    const float eps = 1e-5f;
    m40k_qlinear_args a = {};
    a.M = B, a.N = N, a.K = K, a.x = x.data(), a.wtype = WT, a.w = w.data();
    a.scale = f16 ? (const void *)sh.data() : (const void *)sc.data();
    a.scale_f16 = f16, a.group = GROUPED ? group : 0, a.y = y.data();
    if (NORM) a.nw = nw.data(), a.nw_f16 = 0, a.eps = eps;
    /* the launcher's plan (v3_plan) */
    using P = V3<WT, R>;
    const int Kc = (K + P::KC - 1) / P::KC, nch_pad = (Kc + D - 1) / D * D;
    int cps = nch_pad;
    if (SEG) {
        const int c = cps_max ? cps_max : M40K_QGEMV_SMEM / (B * P::CB);
        const int nseg = (nch_pad + c - 1) / c;
        cps = (nch_pad + nseg - 1) / nseg;
    }
    std::vector<float4> smem((size_t)B * cps * P::CB / sizeof(float4));
    emu_smem = smem.data();
    const int ngroups = (N + R - 1) / R, nblk = (ngroups + kWarps - 1) / kWarps;
    if (SEG) grid = nblk; /* one row group a warp */
    for (int blk = 0; blk < grid; blk++) {
        pthread_barrier_init(&bar, NULL, kThreads);
        for (int i = 0; i < kWarps; i++) pthread_barrier_init(&wbar[i], NULL, 32);
        std::vector<std::thread> th;
        for (int t = 0; t < kThreads; t++)
            th.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = (unsigned)blk;
                gridDim.x = (unsigned)grid;
                blockDim.x = kThreads;
                gemv_kernel<WT, B, R, GROUPED, SEG, D, NORM>(a, nch_pad, cps, 1);
            });
        for (auto &t : th) t.join();
        pthread_barrier_destroy(&bar);
        for (int i = 0; i < kWarps; i++) pthread_barrier_destroy(&wbar[i]);
    }
    double emax = 0, rmax = 0;
    for (int b = 0; b < B; b++) {
        const float *xb = x.data() + (size_t)b * K;
        double ss = 0;
        for (int k = 0; k < K; k++) ss += (double)xb[k] * xb[k];
        const double inv = NORM ? 1.0 / sqrt(ss / K + eps) : 1.0;
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                const double xk = NORM ? xb[k] * inv * nw[k] : xb[k];
                s += xk * q[(size_t)n * K + k] * (GROUPED ? sc[(size_t)n * ng + k / group] : 1.0);
            }
            if (!GROUPED) s *= sc[n];
            const float got = y[(size_t)b * N + n];
            emax = std::max(emax, std::isfinite(got) ? fabs(s - got) : INFINITY);
            rmax = std::max(rmax, fabs(s));
        }
    }
    int tail = 0;
    for (int i = B * N; i < B * N + 8; i++) tail += y[i] != -7.25f;
    const double e = emax / (rmax > 0 ? rmax : 1);
    const bool ok = e < 1e-5 && tail == 0;
    printf("%-44s B %d N %4d K %5d  rel err %.3g  tail %d  %s\n", what, B, N, K, e, tail, ok ? "ok" : "FAIL");
    fails += !ok;
}

int main() {
    constexpr int Q4 = M40_DTYPE_Q4, Q8 = M40_DTYPE_Q8;
    /* whole K, a persistent grid of 2 blocks: warps walk several row groups */
    run<Q4, 1, 2, 0, false, 4, false>("int4 row scales, R 2, D 4", 70, 4096, 0, true, 2);
    run<Q4, 1, 4, 2, false, 4, true>("int4 g128 f16, R 4, D 4, norm (h_to_4h)", 72, 4096, 128, true, 2);
    run<Q4, 1, 4, 1, false, 4, false>("int4 g64 f32, R 4, D 4", 68, 3072, 64, false, 2);
    run<Q4, 2, 4, 2, false, 2, false>("int4 g32 f16, R 4, D 2, batch 2", 40, 2048, 32, true, 1);
    run<Q8, 1, 4, 3, false, 4, true>("int8 g128 run-time dtype (f16), R 4, D 4, norm", 36, 2048, 128, true, 2);
    run<Q8, 1, 2, 3, false, 4, false>("int8 g64 run-time dtype (f32), R 2, D 4", 34, 2048, 64, false, 2);
    /* segments of x (3 chunks a segment) */
    run<Q8, 1, 2, 0, true, 2, false>("int8 row scales, segmented", 20, 6144, 0, false, 0, 3);
    run<Q4, 1, 2, 2, true, 2, false>("int4 g128 f16, segmented", 18, 8192, 128, true, 0, 3);
    printf("%s\n", fails ? "FAILED" : "all ok");
    return fails != 0;
}
