/* SGEMM bench: libm40's kernels (kernels/sgemm.cu) against cuBLAS in
** pedantic FP32 (no TF32), in one process, plus the teaching trail v1..v6.
**
**   sgemm_bench [--trail N] [--no-trail] [--shapes squares|resnet|chatglm|all]
**
** Each timing: fresh non-zero random inputs, 2 warm-up runs, then the median
** of R runs timed with CUDA events (R so that ~50 ms are spent, 5..50),
** ours and cuBLAS alternating run by run. GFLOP/s = 2·M·N·K / time.
** Each result is checked: ours against cuBLAS (relative max error), every
** trail version against a double-precision CPU dot product on 512 sampled
** elements. Exit 1 if any check fails. */
#include "sgemm.h"

#include "v1_naive.cuh"
#include "v2_coalesced.cuh"
#include "v3_smem.cuh"
#include "v4_regblock.cuh"
#include "v5_vectorized.cuh"
#include "v6_double_buffer.cuh"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CUDA_OK(x)                                                                    \
    do {                                                                              \
        cudaError_t e_ = (x);                                                         \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
                    cudaGetErrorString(e_));                                          \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)
#define CUBLAS_OK(x)                                                                  \
    do {                                                                              \
        cublasStatus_t s_ = (x);                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                            \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x,  \
                    (int)s_);                                                         \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static int g_failures = 0;
static cudaStream_t g_stream;
static cublasHandle_t g_cublas;
static int g_sms = 1;

/* Uniform in [-1, 1) from a hash of (seed, i): fresh, non-zero data. */
__global__ void fill_kernel(float *p, long long n, unsigned seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed * 0x9E3779B9u ^ (unsigned)(i >> 32);
        x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
        p[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}
static void fill(float *p, long long n, unsigned seed) {
    fill_kernel<<<1024, 256, 0, g_stream>>>(p, n, seed);
    CUDA_OK(cudaGetLastError());
}

/* Median time (ms) of each of fns, run alternately. */
static std::vector<double> time_alternating(const std::vector<std::function<void()>> &fns,
                                            double est_ms_hint = -1) {
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    std::vector<std::vector<float>> t(fns.size());
    float first = 0;
    for (size_t f = 0; f < fns.size(); f++) { /* warm-up x2, the second timed */
        fns[f]();
        CUDA_OK(cudaEventRecord(e0, g_stream));
        fns[f]();
        CUDA_OK(cudaEventRecord(e1, g_stream));
        CUDA_OK(cudaEventSynchronize(e1));
        float ms;
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        first = std::max(first, ms);
    }
    (void)est_ms_hint;
    int reps = (int)std::min(50.0, std::max(5.0, 50.0 / std::max(first, 1e-3f)));
    for (int r = 0; r < reps; r++)
        for (size_t f = 0; f < fns.size(); f++) {
            CUDA_OK(cudaEventRecord(e0, g_stream));
            fns[f]();
            CUDA_OK(cudaEventRecord(e1, g_stream));
            CUDA_OK(cudaEventSynchronize(e1));
            float ms;
            CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
            t[f].push_back(ms);
        }
    CUDA_OK(cudaGetLastError());
    std::vector<double> med;
    for (auto &v : t) {
        std::sort(v.begin(), v.end());
        med.push_back(v[v.size() / 2]);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return med;
}

/* max |got - ref| / max |ref| over n elements (device buffers). */
static double rel_err(const float *got_d, const float *ref_d, long long n) {
    std::vector<float> g(n), r(n);
    CUDA_OK(cudaMemcpy(g.data(), got_d, n * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(r.data(), ref_d, n * 4, cudaMemcpyDeviceToHost));
    double md = 0, mr = 0;
    for (long long i = 0; i < n; i++) {
        if (!std::isfinite(g[i])) return INFINITY;
        md = std::max(md, (double)std::fabs(g[i] - r[i]));
        mr = std::max(mr, (double)std::fabs(r[i]));
    }
    return mr > 0 ? md / mr : md;
}

/* C = A·B (row-major, A [M,K], B [K,N]) checked on `samples` elements
** against a double dot product; returns max |err| / (K * 2^-22) (<= 1 passes,
** the bound tests/sgemm/test_sgemm.c justifies). */
static double sampled_check(const float *A_d, const float *B_d, const float *C_d, int M, int N,
                            int K, bool b_nk, int samples = 512) {
    std::vector<float> arow(K), bcol(K);
    double worst = 0;
    unsigned s = 12345;
    for (int i = 0; i < samples; i++) {
        s = s * 1664525u + 1013904223u;
        int m = (int)(s % (unsigned)M);
        s = s * 1664525u + 1013904223u;
        int n = (int)(s % (unsigned)N);
        CUDA_OK(cudaMemcpy(arow.data(), A_d + (long long)m * K, K * 4, cudaMemcpyDeviceToHost));
        if (b_nk)
            CUDA_OK(cudaMemcpy(bcol.data(), B_d + (long long)n * K, K * 4, cudaMemcpyDeviceToHost));
        else
            CUDA_OK(cudaMemcpy2D(bcol.data(), 4, B_d + n, (size_t)N * 4, 4, K,
                                 cudaMemcpyDeviceToHost));
        float c;
        CUDA_OK(cudaMemcpy(&c, C_d + (long long)m * N + n, 4, cudaMemcpyDeviceToHost));
        double ref = 0;
        for (int k = 0; k < K; k++) ref += (double)arow[k] * bcol[k];
        double e = std::isfinite(c) ? std::fabs(c - ref) / (K * 2.4e-7) : INFINITY;
        worst = std::max(worst, e);
    }
    return worst;
}

static const char *VNAME[] = {"tile128", "tile64", "skinny"};

/* ---------------------------------------------------------- the trail ---- */
static void run_trail(int S) {
    printf("\n== teaching trail: C = A·B, row-major, M = N = K = %d ==\n", S);
    printf("%-22s %10s %10s %8s %8s  %s\n", "version", "ms", "GFLOP/s", "%cuBLAS", "check",
           "(check: max err / (K·2^-22), sampled; <= 1 passes)");
    long long n = (long long)S * S;
    float *A, *B, *C, *R;
    CUDA_OK(cudaMalloc(&A, n * 4));
    CUDA_OK(cudaMalloc(&B, n * 4));
    CUDA_OK(cudaMalloc(&C, n * 4));
    CUDA_OK(cudaMalloc(&R, n * 4));
    fill(A, n, 101);
    fill(B, n, 202);
    const float one = 1, zero = 0;
    auto cublas = [&] {
        CUBLAS_OK(cublasSgemm(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, S, S, S, &one, B, S, A, S,
                              &zero, R, S));
    };
    m40k_sgemm_args a = {};
    a.M = a.N = a.K = S;
    a.a = A; a.lda = S; a.b = B; a.ldb = S; a.b_nk = 0; a.c = C; a.ldc = S;
    struct V { const char *name; std::function<void()> fn; };
    std::vector<V> vs = {
        {"v1 naive", [&] { v1_launch(S, S, S, A, B, C, g_stream); }},
        {"v2 coalesced", [&] { v2_launch(S, S, S, A, B, C, g_stream); }},
        {"v3 smem tiles", [&] { v3_launch(S, S, S, A, B, C, g_stream); }},
        {"v4 register blocking", [&] { v4_launch(S, S, S, A, B, C, g_stream); }},
        {"v5 vectorized", [&] { v5_launch(S, S, S, A, B, C, g_stream); }},
        {"v6 double buffering", [&] { v6_launch(S, S, S, A, B, C, g_stream); }},
        {"main (tile128)", [&] {
             if (m40k_sgemm_run(g_stream, &a, M40K_SGEMM_TILE128, 1, nullptr, 0)) exit(1);
         }},
    };
    double flop = 2.0 * S * S * S;
    for (auto &v : vs) {
        CUDA_OK(cudaMemset(C, 0xff, n * 4)); /* NaN poison */
        auto t = time_alternating({v.fn, cublas});
        double chk = sampled_check(A, B, C, S, S, S, false);
        bool ok = chk <= 1.0;
        if (!ok) g_failures++;
        printf("%-22s %10.3f %10.0f %7.1f%% %8.3f%s\n", v.name, t[0], flop / t[0] / 1e6,
               100.0 * t[1] / t[0], chk, ok ? "" : "  FAIL");
        fflush(stdout);
    }
    auto t = time_alternating({cublas});
    printf("%-22s %10.3f %10.0f %7.1f%%\n", "cuBLAS (pedantic)", t[0], flop / t[0] / 1e6, 100.0);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
}

/* ------------------------------------------------------- the shape set ---- */
struct Shape { const char *group, *what; int M, N, K; };

static std::vector<Shape> shapes(const std::string &which) {
    std::vector<Shape> v;
    bool all = which == "all";
    if (all || which == "squares")
        for (int s : {512, 1024, 2048, 4096, 8192}) v.push_back({"square", "", s, s, s});
    if (all || which == "resnet") {
        /* ResNet-50, batch 32, conv as GEMM: M = 32·H·W, N = Cout, K = Cin·kh·kw */
        v.push_back({"resnet", "conv1 7x7", 32 * 112 * 112, 64, 147});
        v.push_back({"resnet", "l1 1x1 64", 32 * 56 * 56, 64, 64});
        v.push_back({"resnet", "l1 3x3", 32 * 56 * 56, 64, 576});
        v.push_back({"resnet", "l1 1x1 256", 32 * 56 * 56, 256, 64});
        v.push_back({"resnet", "l2 3x3", 32 * 28 * 28, 128, 1152});
        v.push_back({"resnet", "l2 1x1 512", 32 * 28 * 28, 512, 128});
        v.push_back({"resnet", "l3 3x3", 32 * 14 * 14, 256, 2304});
        v.push_back({"resnet", "l3 1x1 1024", 32 * 14 * 14, 1024, 256});
        v.push_back({"resnet", "l4 3x3", 32 * 7 * 7, 512, 4608});
        v.push_back({"resnet", "l4 1x1 2048", 32 * 7 * 7, 2048, 512});
        v.push_back({"resnet", "fc", 32, 1000, 2048});
    }
    if (all || which == "chatglm") {
        /* ChatGLM2-6B linears: qkv 4608x4096, dense 4096x4096, h->4h 27392x4096,
        ** 4h->h 4096x13696; M = tokens */
        const int nk[4][2] = {{4608, 4096}, {4096, 4096}, {27392, 4096}, {4096, 13696}};
        const char *nm[4] = {"qkv", "dense", "h->4h", "4h->h"};
        for (int m : {1, 8, 32, 128, 512})
            for (int j = 0; j < 4; j++) v.push_back({"chatglm", nm[j], m, nk[j][0], nk[j][1]});
    }
    return v;
}

static void run_shapes(const std::string &which) {
    printf("\n== shape set: y[M,N] = x[M,K]·W[N,K]ᵀ (Linear layout), ours vs cuBLAS ==\n");
    printf("%-8s %-12s %7s %6s %6s %-9s %3s %10s %10s %7s %9s\n", "group", "shape", "M", "N",
           "K", "variant", "sK", "ours", "cuBLAS", "ratio", "rel_err");
    std::vector<double> ratios;
    double r4096 = 0, r8192 = 0;
    unsigned seed = 1;
    for (const Shape &s : shapes(which)) {
        long long na = (long long)s.M * s.K, nb = (long long)s.N * s.K, nc = (long long)s.M * s.N;
        float *X, *W, *Y, *R;
        CUDA_OK(cudaMalloc(&X, na * 4));
        CUDA_OK(cudaMalloc(&W, nb * 4));
        CUDA_OK(cudaMalloc(&Y, nc * 4));
        CUDA_OK(cudaMalloc(&R, nc * 4));
        fill(X, na, seed++);
        fill(W, nb, seed++);
        m40k_sgemm_args a = {};
        a.M = s.M; a.N = s.N; a.K = s.K;
        a.a = X; a.lda = s.K; a.b = W; a.ldb = s.K; a.b_nk = 1; a.c = Y; a.ldc = s.N;
        size_t wsb = m40k_sgemm_workspace_size(&a, g_sms);
        void *ws = nullptr;
        if (wsb) CUDA_OK(cudaMalloc(&ws, wsb));
        int variant, splits;
        m40k_sgemm_plan(&a, g_sms, wsb, &variant, &splits);
        const float one = 1, zero = 0;
        auto ours = [&] {
            if (m40k_sgemm(g_stream, &a, g_sms, ws, wsb)) { fprintf(stderr, "launch\n"); exit(1); }
        };
        auto cublas = [&] {
            CUBLAS_OK(cublasSgemm(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, W, s.K,
                                  X, s.K, &zero, R, s.N));
        };
        CUDA_OK(cudaMemset(Y, 0xff, nc * 4));
        auto t = time_alternating({ours, cublas});
        double err = rel_err(Y, R, nc);
        /* FP32 sums of K products in different orders: ~sqrt(K)·eps relative
        ** to the largest output; 1e-4 is two orders above that. */
        bool ok = err < 1e-4;
        if (!ok) g_failures++;
        double flop = 2.0 * s.M * s.N * s.K;
        double ratio = t[1] / t[0];
        ratios.push_back(ratio);
        if (s.M == 4096 && s.N == 4096 && s.K == 4096) r4096 = ratio;
        if (s.M == 8192 && s.N == 8192 && s.K == 8192) r8192 = ratio;
        printf("%-8s %-12s %7d %6d %6d %-9s %3d %10.0f %10.0f %7.3f %9.2e%s\n", s.group, s.what,
               s.M, s.N, s.K, VNAME[variant], splits, flop / t[0] / 1e6, flop / t[1] / 1e6, ratio,
               err, ok ? "" : "  FAIL");
        fflush(stdout);
        cudaFree(X); cudaFree(W); cudaFree(Y); cudaFree(R);
        if (ws) cudaFree(ws);
    }
    double lg = 0;
    for (double r : ratios) lg += std::log(r);
    printf("\nsummary: geomean ours/cuBLAS over %zu shapes = %.3f (target >= 0.80)",
           ratios.size(), ratios.empty() ? 0.0 : std::exp(lg / ratios.size()));
    if (r4096 > 0) printf("; 4096^3 %.3f", r4096);
    if (r8192 > 0) printf("; 8192^3 %.3f", r8192);
    printf(" (targets >= 0.90)\n");
}

static void print_resources() {
#ifdef M40_SGEMM_RESOURCES
    FILE *f = fopen(M40_SGEMM_RESOURCES, "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (line[0] != '#') printf("sm_52 %s", line);
        fclose(f);
        return;
    }
#endif
    printf("sm_52 resources: bench/sgemm/resources_sm52.txt not found\n");
}

int main(int argc, char **argv) {
    int trail = 4096;
    std::string which = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trail") && i + 1 < argc) trail = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-trail")) trail = 0;
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) which = argv[++i];
        else { fprintf(stderr, "usage: %s [--trail N|--no-trail] [--shapes squares|resnet|chatglm|all]\n", argv[0]); return 2; }
    }
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) { printf("no GPU: skipped\n"); return 77; }
    cudaDeviceProp p;
    CUDA_OK(cudaGetDeviceProperties(&p, dev));
    g_sms = p.multiProcessorCount;
    printf("GPU %s (cc %d.%d, %d SMs)\n", p.name, p.major, p.minor, p.multiProcessorCount);
    print_resources();
    CUDA_OK(cudaStreamCreate(&g_stream));
    CUBLAS_OK(cublasCreate(&g_cublas));
    CUBLAS_OK(cublasSetStream(g_cublas, g_stream));
    CUBLAS_OK(cublasSetMathMode(g_cublas, CUBLAS_PEDANTIC_MATH)); /* real FP32, no TF32 */
    if (trail > 0) {
        if (trail % 128) { fprintf(stderr, "--trail must be a multiple of 128\n"); return 2; }
        run_trail(trail);
    }
    run_shapes(which);
    cublasDestroy(g_cublas);
    printf("%s\n", g_failures ? "CHECKS FAILED" : "all checks passed");
    return g_failures ? 1 : 0;
}
