/* m40-quant-versions: every numbered GEMV version (bench/quant/gemv_versions.cu)
** at every rows-per-warp setting and batch 1..8, against the CPU reference
** (m40_quant_linear on a CPU context, as tests/quant/test_quant_gpu.c does),
** on int4/int8 with row and group scales and fp16 weights, shapes with K
** that fits the shared memory and K that does not. Exit 0 when all match,
** 1 on a mismatch, 77 without a GPU.
**
**   m40-quant-versions [--quick]     (--quick: batch 1, 2, 3 and 8) */
#include "gemv_versions.h"
#include "m40/m40.h"
#include "m40/quant.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;
static long checks, failed;

static m40_tensor *hnew(m40_dtype dt, int ndim, const int64_t *shape) {
    m40_tensor *t = NULL;
    if (m40_tensor_new(C, dt, ndim, shape, &t) != M40_OK) {
        fprintf(stderr, "tensor_new: %s\n", m40_errmsg(C));
        exit(1);
    }
    return t;
}

static void *upload(const m40_tensor *t) {
    void *d = NULL;
    size_t n = m40_tensor_get_nbytes(t);
    if (cudaMalloc(&d, n ? n : 4) != cudaSuccess ||
        cudaMemcpy(d, m40_tensor_get_data(t), n, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "upload failed\n");
        exit(1);
    }
    return d;
}

/* One format and shape: every version, R and batch against the reference. */
static void check_shape(const m40_quant_format *f, int64_t N, int64_t K, int quick, int sms) {
    int64_t ws_[2] = {N, K}, xs[2] = {8, K};
    m40_tensor *w = hnew(M40_DTYPE_F32, 2, ws_), *x = hnew(M40_DTYPE_F32, 2, xs);
    m40_fill_random(C, 11 + (uint64_t)N, M40_RANDOM_NORMAL, 0.0f, 0.02f, w);
    m40_fill_random(C, 12 + (uint64_t)K, M40_RANDOM_UNIFORM, -1.0f, 1.0f, x);
    m40_tensor_desc dd, sd;
    m40_quant_descs(f, N, K, &dd, &sd);
    m40_tensor *qd = hnew(dd.dtype, dd.ndim, dd.shape), *qs = NULL;
    if (f->wtype != M40_DTYPE_F16) qs = hnew(sd.dtype, sd.ndim, sd.shape);
    if (m40_quantize(C, f, w, qd, qs) != M40_OK) {
        fprintf(stderr, "quantize: %s\n", m40_errmsg(C));
        exit(1);
    }
    void *gd = upload(qd), *gs = qs ? upload(qs) : NULL, *gx = upload(x);
    float *gy = NULL, *gws = NULL;
    cudaMalloc((void **)&gy, (size_t)(8 * N) * 4);
    float *got = malloc((size_t)(8 * N) * 4);
    for (int M = 1; M <= 8; M++) {
        if (quick && M > 3 && M != 8) continue;
        /* reference on the first M rows of x */
        int64_t ym[2] = {M, N};
        m40_tensor_desc xd = *m40_tensor_get_desc(x);
        xd.shape[0] = M;
        m40_tensor *xv = NULL, *yr = hnew(M40_DTYPE_F32, 2, ym);
        m40_tensor_view(C, x, &xd, 0, &xv);
        m40_qweight qw = {*f, N, K, qd, qs};
        if (m40_quant_linear(C, xv, &qw, NULL, yr) != M40_OK) {
            fprintf(stderr, "reference: %s\n", m40_errmsg(C));
            exit(1);
        }
        const float *ref = m40_tensor_get_data(yr);
        m40k_qlinear_args a = {.M = M, .N = (int)N, .K = (int)K, .x = gx, .wtype = (int)f->wtype,
                               .w = gd, .scale = gs, .scale_f16 = f->scale_dtype == M40_DTYPE_F16,
                               .group = f->wtype == M40_DTYPE_F16 ? 0 : f->group, .y = gy};
        size_t wsb = m40k_quant_gemv_workspace(&a);
        cudaFree(gws);
        gws = NULL;
        if (wsb) cudaMalloc((void **)&gws, wsb);
        a.ws = gws;
        a.ws_bytes = wsb;
        const double atol = 4e-7 * 0.008 * (double)K + 1e-6;
        for (int vi = -1; vi < M40B_QGEMV_NVERSIONS; vi++) {
            const int ver = vi < 0 ? 0 : m40b_qgemv_versions[vi];
            for (int R = 1; R <= 4; R *= 2) {
                if ((ver == 0 || ver == 1 || ver >= 7) && R > 1) continue; /* R not used */
                cudaMemset(gy, 0xFF, (size_t)(M * N) * 4); /* NaN: unwritten outputs show */
                int e = m40b_quant_gemv_version(NULL, &a, sms, ver, ver >= 7 ? 0 : R, 0);
                if (!e) e = (int)cudaDeviceSynchronize();
                if (!e) e = (int)cudaMemcpy(got, gy, (size_t)(M * N) * 4, cudaMemcpyDeviceToHost);
                double worst = 0;
                long bad = 0;
                for (int64_t i = 0; i < M * N; i++) {
                    double d = fabs((double)got[i] - ref[i]), tol = atol + 1e-4 * fabs(ref[i]);
                    if (!(d <= tol)) bad++;
                    if (d / tol > worst || d != d) worst = d != d ? INFINITY : d / tol;
                }
                checks++;
                if (e || bad) {
                    failed++;
                    printf("FAIL %s [%lld,%lld] M=%d version %d R=%d: %s%ld bad, worst %.3g x tol\n",
                           m40_quant_format_name(f), (long long)N, (long long)K, M, ver, R,
                           e ? "CUDA error, " : "", bad, worst);
                }
            }
        }
        m40_tensor_destroy(xv);
        m40_tensor_destroy(yr);
    }
    cudaFree(gws);
    cudaFree(gy);
    cudaFree(gx);
    cudaFree(gd);
    if (gs) cudaFree(gs);
    free(got);
    m40_tensor_destroy(w); m40_tensor_destroy(x); m40_tensor_destroy(qd); m40_tensor_destroy(qs);
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int ndev = 0, sms = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("m40-quant-versions: no GPU, skipped\n");
        return 77;
    }
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    for (int i = 0; i < M40B_QGEMV_NVERSIONS; i++)
        printf("version %d: %s\n", m40b_qgemv_versions[i], m40b_qgemv_notes[i]);
    const m40_quant_format fmts[] = {{M40_DTYPE_Q4, 0, M40_DTYPE_F16}, {M40_DTYPE_Q8, 0, M40_DTYPE_F16},
                                     {M40_DTYPE_Q4, 32, M40_DTYPE_F32}, {M40_DTYPE_Q8, 128, M40_DTYPE_F16},
                                     {M40_DTYPE_F16, 0, M40_DTYPE_F16}};
    /* K = 4096: x for all of K fits at batch 1-2; 13696: it does not (segments, split-K) */
    static const int64_t shapes[][2] = {{300, 4096}, {129, 13696}, {77, 1024}};
    for (int f = 0; f < 5; f++)
        for (int s = 0; s < 3; s++) check_shape(&fmts[f], shapes[s][0], shapes[s][1], quick, sms);
    printf("m40-quant-versions: %ld checks, %ld failed\n", checks, failed);
    m40_ctx_destroy(C);
    return failed ? 1 : 0;
}
