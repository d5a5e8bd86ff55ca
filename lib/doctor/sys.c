/* The doctor's system layer on the real machine: NVML through dlopen, the
** CUDA runtime (CUDA builds), cuBLAS's and cuDNN's versions, and the quick
** functional check run through the public API. */
#define _POSIX_C_SOURCE 200809L
#include "doctor_internal.h"
#include "../measure/measure.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef M40_HAVE_CUDA
#ifdef M40_HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#include <cuda_runtime_api.h>
#include <library_types.h>

/* lib/doctor/probe.cu */
int m40__doc_kernel_probe(int dev, int *binary_version, int *ptx_version);

static int real_versions(void *u, int *drv, int *rt) {
    (void)u;
    *drv = *rt = 0;
    /* the static runtime answers 0 when no driver loads: use the built-in one */
    if (cudaRuntimeGetVersion(rt) != cudaSuccess || *rt == 0) *rt = CUDART_VERSION;
    (void)cudaGetLastError();
    cudaError_t e = cudaDriverGetVersion(drv);
    return (int)e;
}

static int real_count(void *u, int *n) {
    (void)u;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        *n = 0;
    }
    return (int)e;
}

static int real_props(void *u, int dev, m40__doc_cuda_dev *p) {
    (void)u;
    struct cudaDeviceProp q;
    cudaError_t e = cudaGetDeviceProperties(&q, dev);
    if (e != cudaSuccess) return (int)e;
    snprintf(p->name, sizeof p->name, "%s", q.name);
    p->cc_major = q.major;
    p->cc_minor = q.minor;
    p->sm_count = q.multiProcessorCount;
    p->total_bytes = q.totalGlobalMem;
    memcpy(p->uuid, q.uuid.bytes, 16);
    p->has_uuid = 1;
    size_t fr = 0, tot = 0;
    if (cudaSetDevice(dev) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
        p->free_bytes = fr;
    else
        (void)cudaGetLastError();
    return 0;
}

static int real_probe(void *u, int dev, int *bin, int *ptx) {
    (void)u;
    return m40__doc_kernel_probe(dev, bin, ptx);
}

static const char *real_errstr(void *u, int e) {
    (void)u;
    return cudaGetErrorString((cudaError_t)e);
}

static int real_cublas(void *u, int *M, int *m, int *p) {
    (void)u;
#ifdef M40_HAVE_CUBLAS
    return cublasGetProperty(MAJOR_VERSION, M) != CUBLAS_STATUS_SUCCESS ||
           cublasGetProperty(MINOR_VERSION, m) != CUBLAS_STATUS_SUCCESS ||
           cublasGetProperty(PATCH_LEVEL, p) != CUBLAS_STATUS_SUCCESS;
#else
    (void)M; (void)m; (void)p;
    return 1; /* built without cuBLAS (M40_CUBLAS=OFF) */
#endif
}

/* ---- the functional check ---------------------------------------------- */

#define FTRY(ctx_, call)                                                          \
    do {                                                                          \
        if ((call) != M40_OK) {                                                   \
            if (!f->err[0])                                                       \
                snprintf(f->err, sizeof f->err, "%s: %s", #call, m40_errmsg(ctx_)); \
            goto done;                                                            \
        }                                                                         \
    } while (0)

static int median_ms(m40_ctx *g, int reps, int what, m40_tensor *a, m40_tensor *b,
                     m40_tensor *c, double *out, m40__doc_func *f) {
    double t[16];
    m40__evtimer tm;
    int ok = 0;
    if (m40__evtimer_create(g, &tm) != M40_OK) {
        snprintf(f->err, sizeof f->err, "timer: %s", m40_errmsg(g));
        return 0;
    }
    for (int r = -2; r < reps; r++) { /* two warm-ups */
        FTRY(g, m40__evtimer_start(&tm));
        FTRY(g, what == 0 ? m40_tensor_copy(g, b, a) : m40_matmul(g, a, b, NULL, c));
        FTRY(g, m40__evtimer_stop(&tm));
        double ms = 0;
        FTRY(g, m40__evtimer_ms(&tm, &ms));
        if (r >= 0) t[r] = ms;
    }
    m40__stats st;
    if (m40__stats_compute(t, reps, &st) == M40_OK) {
        *out = st.median;
        ok = 1;
    }
done:
    m40__evtimer_destroy(&tm);
    return ok;
}

static int real_functional(void *u, int dev, m40__doc_func *f) {
    (void)u;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = dev;
    m40_ctx *g = NULL, *c = NULL;
    m40_tensor *t[12] = {0};
    float *h[3] = {0};
    if (m40_ctx_create(&d, &g) != M40_OK) {
        snprintf(f->err, sizeof f->err, "m40_ctx_create: %s", m40_errmsg(g));
        m40_ctx_destroy(g);
        return 1;
    }
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &c) != M40_OK) goto done;

    /* 1. a small kernel: uniform fills are bit-identical on both sides */
    int64_t n1[1] = {(1 << 20) + 3};
    size_t nb1 = (size_t)n1[0] * sizeof(float);
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 1, n1, &t[0]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 1, n1, &t[1]));
    FTRY(c, m40_tensor_new(c, M40_DTYPE_F32, 1, n1, &t[2]));
    FTRY(c, m40_tensor_new(c, M40_DTYPE_F32, 1, n1, &t[3]));
    FTRY(g, m40_fill_random(g, 11, M40_RANDOM_UNIFORM, -1, 1, t[0]));
    FTRY(g, m40_fill_random(g, 12, M40_RANDOM_UNIFORM, -1, 1, t[1]));
    FTRY(g, m40_add(g, t[0], t[1], t[0]));
    FTRY(c, m40_fill_random(c, 11, M40_RANDOM_UNIFORM, -1, 1, t[2]));
    FTRY(c, m40_fill_random(c, 12, M40_RANDOM_UNIFORM, -1, 1, t[3]));
    FTRY(c, m40_add(c, t[2], t[3], t[2]));
    h[0] = malloc(nb1);
    if (!h[0]) goto done;
    FTRY(g, m40_tensor_download(g, t[0], h[0], nb1));
    const float *ref = m40_tensor_get_data(t[2]);
    double md = 0;
    for (int64_t i = 0; i < n1[0]; i++) {
        double dd = fabs((double)h[0][i] - ref[i]);
        if (!(dd <= md)) md = dd; /* NaN counts as a difference */
    }
    f->kernel_n = n1[0];
    f->kernel_max_diff = md;
    f->kernel_ok = md == 0;
    for (int i = 0; i < 4; i++) {
        m40_tensor_destroy(t[i]);
        t[i] = NULL;
    }

    /* 2. device copy bandwidth: 256 MiB (64 MiB on a nearly full card) */
    m40_device_info info;
    FTRY(g, m40_ctx_get_info(g, &info));
    int64_t mib = info.free_bytes > (2ull << 30) ? 256 : 64;
    int64_t n2[1] = {mib * 262144};
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 1, n2, &t[4]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 1, n2, &t[5]));
    FTRY(g, m40_fill_random(g, 13, M40_RANDOM_UNIFORM, -1, 1, t[4]));
    double ms = 0;
    if (!median_ms(g, 10, 0, t[4], t[5], NULL, &ms, f)) goto done;
    f->copy_mib = (double)mib;
    f->copy_ms = ms;
    f->copy_gbs = ms > 0 ? 2.0 * (double)mib * 1048576.0 / (ms * 1e-3) / 1e9 : 0;
    m40_tensor_destroy(t[4]);
    m40_tensor_destroy(t[5]);
    t[4] = t[5] = NULL;

    /* 3. SGEMM: correctness on odd shapes, then speed on 2048^3 */
    int64_t xs[2] = {127, 131}, ws[2] = {129, 131}, ys[2] = {127, 129};
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, xs, &t[0]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, ws, &t[1]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, ys, &t[2]));
    FTRY(c, m40_tensor_new(c, M40_DTYPE_F32, 2, xs, &t[6]));
    FTRY(c, m40_tensor_new(c, M40_DTYPE_F32, 2, ws, &t[7]));
    FTRY(c, m40_tensor_new(c, M40_DTYPE_F32, 2, ys, &t[8]));
    FTRY(g, m40_fill_random(g, 21, M40_RANDOM_UNIFORM, -1, 1, t[0]));
    FTRY(g, m40_fill_random(g, 22, M40_RANDOM_UNIFORM, -1, 1, t[1]));
    FTRY(g, m40_matmul(g, t[0], t[1], NULL, t[2]));
    FTRY(c, m40_fill_random(c, 21, M40_RANDOM_UNIFORM, -1, 1, t[6]));
    FTRY(c, m40_fill_random(c, 22, M40_RANDOM_UNIFORM, -1, 1, t[7]));
    FTRY(c, m40_matmul(c, t[6], t[7], NULL, t[8]));
    h[1] = malloc(127 * 129 * sizeof(float));
    if (!h[1]) goto done;
    FTRY(g, m40_tensor_download(g, t[2], h[1], 127 * 129 * sizeof(float)));
    const float *yr = m40_tensor_get_data(t[8]);
    double dmax = 0, rmax = 0;
    for (int i = 0; i < 127 * 129; i++) {
        double dd = fabs((double)h[1][i] - yr[i]);
        if (!(dd <= dmax)) dmax = dd;
        if (fabs(yr[i]) > rmax) rmax = fabs(yr[i]);
    }
    f->sgemm_max_rel = rmax > 0 ? dmax / rmax : dmax;
    f->sgemm_ok = f->sgemm_max_rel <= 1e-5; /* K = 131 FP32 sums: ~1e-7 typical */
    for (int i = 0; i < 3; i++) {
        m40_tensor_destroy(t[i]);
        t[i] = NULL;
    }
    int n = 2048;
    int64_t sq[2] = {n, n};
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, sq, &t[9]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, sq, &t[10]));
    FTRY(g, m40_tensor_new(g, M40_DTYPE_F32, 2, sq, &t[11]));
    FTRY(g, m40_fill_random(g, 31, M40_RANDOM_UNIFORM, -1, 1, t[9]));
    FTRY(g, m40_fill_random(g, 32, M40_RANDOM_UNIFORM, -1, 1, t[10]));
    if (!median_ms(g, 5, 1, t[9], t[10], t[11], &ms, f)) goto done;
    f->sgemm_n = n;
    f->sgemm_ms = ms;
    f->sgemm_gflops = ms > 0 ? 2.0 * n * n * (double)n / (ms * 1e-3) / 1e9 : 0;
done:
    for (int i = 0; i < 12; i++) m40_tensor_destroy(t[i]);
    for (int i = 0; i < 3; i++) free(h[i]);
    m40_ctx_destroy(c);
    m40_ctx_destroy(g);
    return 0;
}
#endif /* M40_HAVE_CUDA */

typedef size_t (*cudnn_get_version_fn)(void);

static int real_cudnn(void *u, size_t *v, char *where, size_t n) {
    (void)u;
    static const char *const names[] = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"};
    char tried[160] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
            size_t l = strlen(tried);
            snprintf(tried + l, sizeof tried - l, "%s%s", l ? ", " : "", names[i]);
            continue;
        }
        cudnn_get_version_fn fn;
        *(void **)(&fn) = dlsym(dl, "cudnnGetVersion");
        if (!fn) {
            dlclose(dl);
            continue;
        }
        *v = fn();
        snprintf(where, n, "%s", names[i]);
        dlclose(dl);
        return 0;
    }
    snprintf(where, n, "none of %s could be loaded", tried);
    return 1;
}

void m40__doc_sys_real_open(m40__doc_sys *sys, m40__nvml *nvml, char *why, size_t n) {
    memset(sys, 0, sizeof *sys);
    sys->build_info = m40_build_info();
    why[0] = 0;
    if (m40__nvml_open(nvml, why, n) == 0) {
        sys->nvml = nvml;
    } else {
        sys->nvml_why = why;
    }
#ifdef M40_HAVE_CUDA
    sys->cuda_versions = real_versions;
    sys->cuda_count = real_count;
    sys->cuda_props = real_props;
    sys->cuda_probe = real_probe;
    sys->cuda_errstr = real_errstr;
    sys->cublas_version = real_cublas;
    sys->functional = real_functional;
#endif
    sys->cudnn_version = real_cudnn;
}

void m40__doc_sys_real_close(m40__doc_sys *sys, m40__nvml *nvml) {
    if (sys->nvml) m40__nvml_close(nvml);
    memset(sys, 0, sizeof *sys);
}
