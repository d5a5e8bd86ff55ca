/* The CUDA side of the context: device setup, memory, copies, error
** mapping and cuBLAS. Plain C against the CUDA runtime API; compiled only
** with M40_HAVE_CUDA. This layer knows no op's engine: upper layers that
** keep per-context CUDA state (the conv engine's cuDNN handle) free it
** through a teardown hook (m40__ctx_on_fini) that runs before the stream
** is destroyed. */
#include "../internal.h"
#include "../../kernels/elementwise.h"
#include "../../kernels/guard.h"

#ifdef M40_HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Errors after which the CUDA context cannot be used again (the runtime
** returns them from every later call in the process). */
static bool is_sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
        return true;
    default:
        return false;
    }
}

m40_status m40__cuda_check(m40_ctx *ctx, int err, const char *what) {
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess) return M40_OK;
    if (is_sticky(e)) {
        ctx->lost = true;
        return m40__err(ctx, M40_ERR_DEVICE_LOST,
                        "%s: %s (%s); the CUDA context is now unusable: destroy this "
                        "context and restart the process",
                        what, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (e == cudaErrorMemoryAllocation)
        return m40__err(ctx, M40_ERR_OOM_DEVICE, "%s: out of device memory", what);
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
        return m40__err(ctx, M40_ERR_CUDA,
                        "%s: %s; this libm40 (%s) has no code for the device (cc "
                        "%d.%d): rebuild with CMAKE_CUDA_ARCHITECTURES including it",
                        what, cudaGetErrorString(e), m40_build_info(), ctx->cc_major,
                        ctx->cc_minor);
    return m40__err(ctx, M40_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e),
                    cudaGetErrorName(e));
}

#define CK(call, what)                                                           \
    do {                                                                         \
        cudaError_t e_ = (call);                                                 \
        if (e_ != cudaSuccess) return m40__cuda_check(ctx, (int)e_, what);       \
    } while (0)

m40_status m40__cuda_ctx_init(m40_ctx *ctx) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        /* Clear the non-sticky error so later calls in the process start clean. */
        (void)cudaGetLastError();
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "no CUDA device: %s (%s)",
                        e == cudaSuccess ? "the driver reports 0 devices"
                                         : cudaGetErrorString(e),
                        e == cudaSuccess ? "0 devices" : cudaGetErrorName(e));
    }
    int dev = ctx->desc.device;
    if (dev >= n)
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "device ordinal %d is out of range: %d CUDA device%s present",
                        dev, n, n == 1 ? "" : "s");
    CK(cudaSetDevice(dev), "cudaSetDevice");
    struct cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    snprintf(ctx->device_name, sizeof ctx->device_name, "%s", p.name);
    ctx->cc_major = p.major;
    ctx->cc_minor = p.minor;
    ctx->sm_count = p.multiProcessorCount;
    ctx->smem_per_sm = (int)p.sharedMemPerMultiprocessor;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    ctx->stream = s;
    void *g = NULL; /* the index guard, then the sync words (kernels/guard.h) */
    const size_t words = M40K_GUARD_WORDS + M40K_SYNC_WORDS;
    CK(cudaMalloc(&g, words * sizeof(unsigned)), "cudaMalloc (index guard)");
    ctx->guard = g;
    CK(cudaMemset(g, 0, words * sizeof(unsigned)), "cudaMemset (index guard)");
    ctx->sync = ctx->guard + M40K_GUARD_WORDS;
    return M40_OK;
}

m40_status m40__cuda_memset(m40_ctx *ctx, void *p, int value, size_t bytes) {
    CK(cudaMemsetAsync(p, value, bytes, (cudaStream_t)ctx->stream), "cudaMemsetAsync");
    return M40_OK;
}

m40_status m40__cuda_guard_check(m40_ctx *ctx, const char *fn) {
    if (!ctx->guard_armed || !ctx->guard) return M40_OK;
    unsigned g[M40K_GUARD_WORDS];
    CK(cudaMemcpy(g, ctx->guard, sizeof g, cudaMemcpyDeviceToHost), "index guard: cudaMemcpy");
    ctx->guard_armed = false;
    if (g[0] == M40K_GUARD_NONE) return M40_OK;
    CK(cudaMemset(ctx->guard, 0, sizeof g), "index guard: cudaMemset");
    static const char *what[] = {"?", "embedding id", "rope position", "kv_append position",
                                 "kv_append slot", "attention position", "attention slot",
                                 "sample history id"};
    const char *w = g[0] < sizeof what / sizeof what[0] ? what[g[0]] : "index";
    int lo = g[0] == M40K_GUARD_KV_POS || g[0] == M40K_GUARD_ATTN_POS ||
             g[0] == M40K_GUARD_SAMPLE_HISTORY ? -1 : 0;
    if (g[0] == M40K_GUARD_ROPE_POS)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: a kernel met %s %d, negative (%u time%s); "
                        "it left those rows as they were", fn, w, (int)g[1], g[3],
                        g[3] == 1 ? "" : "s");
    return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: a kernel met %s %d out of range [%d, %u) (%u "
                    "time%s); it skipped what that index addressed (zeros where it had to write)",
                    fn, w, (int)g[1], lo, g[2], g[3], g[3] == 1 ? "" : "s");
}

void m40__cuda_ctx_fini(m40_ctx *ctx) {
    if (ctx->stream) {
        cudaSetDevice(ctx->desc.device);
        cudaStreamSynchronize((cudaStream_t)ctx->stream);
        cudaStreamDestroy((cudaStream_t)ctx->stream);
    }
#ifdef M40_HAVE_CUBLAS
    if (ctx->cublas) cublasDestroy((cublasHandle_t)ctx->cublas);
#endif
    if (ctx->ws) cudaFree(ctx->ws);
    if (ctx->guard) cudaFree(ctx->guard);
    ctx->guard = NULL;
    ctx->sync = NULL;
    ctx->stream = NULL;
    ctx->cublas = NULL;
    ctx->ws = NULL;
    ctx->ws_bytes = 0;
}

m40_status m40__cuda_info(m40_ctx *ctx, m40_device_info *info) {
    info->is_gpu = 1;
    info->cc_major = ctx->cc_major;
    info->cc_minor = ctx->cc_minor;
    info->sm_count = ctx->sm_count;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
    info->free_bytes = fr;
    info->total_bytes = tot;
    return M40_OK;
}

m40_status m40__cuda_sync(m40_ctx *ctx) {
    CK(cudaStreamSynchronize((cudaStream_t)ctx->stream), "cudaStreamSynchronize");
    return m40__cuda_guard_check(ctx, "m40_ctx_sync");
}

/* Called at the entry of every call on a GPU context (m40__ctx_check):
** the current device is per host thread, so a thread that used another
** context, or the caller's own CUDA code, may have changed it.
** cudaGetDevice reads a thread-local value; only a change costs more. */
m40_status m40__cuda_enter(m40_ctx *ctx) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == ctx->desc.device) return M40_OK;
    CK(cudaSetDevice(ctx->desc.device), "cudaSetDevice");
    return M40_OK;
}

m40_status m40__cuda_malloc(m40_ctx *ctx, size_t bytes, void **p) {
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        return m40__err(ctx, M40_ERR_OOM_DEVICE,
                        "out of device memory: asked for %zu bytes, %zu of %zu free",
                        bytes, fr, tot);
    }
    CK(e, "cudaMalloc");
    return M40_OK;
}

void m40__cuda_free(m40_ctx *ctx, void *p) {
    m40__ctx_enter(ctx); /* a free may come from a thread that ran another device */
    cudaFree(p);
}

m40_status m40__cuda_memcpy(m40_ctx *ctx, void *dst, const void *src, size_t bytes,
                            int kind) {
    static const enum cudaMemcpyKind kinds[] = {
        cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice};
    cudaStream_t s = (cudaStream_t)ctx->stream;
    CK(cudaMemcpyAsync(dst, src, bytes, kinds[kind], s), "cudaMemcpyAsync");
    /* Host memory is pageable and the caller may reuse it at once. */
    if (kind != 2) CK(cudaStreamSynchronize(s), "cudaStreamSynchronize after copy");
    return M40_OK;
}

m40_status m40__cuda_copy_strided(m40_ctx *ctx, m40_tensor *dst, const m40_tensor *src) {
    int e = m40k_copy_strided(ctx->stream, dst->desc, dst->data, src->desc, src->data);
    return e ? m40__cuda_check(ctx, e, "m40_tensor_copy (strided kernel)") : M40_OK;
}

#ifdef M40_HAVE_CUBLAS
const char *m40__cublas_status_str(int status) {
    switch ((cublasStatus_t)status) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
    }
}

m40_status m40__cuda_cublas(m40_ctx *ctx, void **handle) {
    if (!ctx->cublas) {
        cublasHandle_t h;
        cublasStatus_t s = cublasCreate(&h);
        if (s != CUBLAS_STATUS_SUCCESS)
            return m40__err(ctx, s == CUBLAS_STATUS_ALLOC_FAILED ? M40_ERR_OOM_DEVICE
                                                                  : M40_ERR_CUDA,
                            "cublasCreate: %s", m40__cublas_status_str((int)s));
        cublasSetStream(h, (cudaStream_t)ctx->stream);
        /* The FP32 baseline must be real FP32: no TF32 on newer GPUs. */
        cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
        ctx->cublas = h;
        m40__log(ctx, M40_LOG_DEBUG, "created cuBLAS handle (pedantic FP32 math)");
    }
    *handle = ctx->cublas;
    return M40_OK;
}

#else
m40_status m40__cuda_cublas(m40_ctx *ctx, void **handle) {
    *handle = NULL;
    return m40__err(ctx, M40_ERR_UNSUPPORTED,
                    "this libm40 was built without cuBLAS (M40_CUBLAS=OFF): no cuBLAS baseline");
}

#endif

m40_status m40__cuda_workspace(m40_ctx *ctx, size_t bytes, void **p) {
    if (bytes > ctx->ws_bytes) {
        if (ctx->ws) {
            /* queued kernels may still read the old buffer */
            CK(cudaStreamSynchronize((cudaStream_t)ctx->stream), "workspace: synchronize");
            cudaFree(ctx->ws);
            ctx->ws = NULL;
            ctx->ws_bytes = 0;
        }
        cudaError_t e = cudaMalloc(&ctx->ws, bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError(); /* not sticky */
            ctx->ws = NULL;
            return m40__err(ctx, M40_ERR_OOM_DEVICE, "workspace: out of device memory for %zu bytes",
                            bytes);
        }
        CK(e, "workspace: cudaMalloc");
        ctx->ws_bytes = bytes;
        m40__log(ctx, M40_LOG_DEBUG, "workspace grown to %zu bytes", bytes);
    }
    *p = ctx->ws;
    return M40_OK;
}

m40_status m40__cuda_scratch(m40_ctx *ctx, size_t *bytes, void **p) {
    *p = NULL;
    if (!*bytes) return M40_OK;
    /* the fallback is no error: keep the context's error as it was */
    m40_status prev = ctx->last_status;
    char prev_msg[M40__ERRMSG_MAX];
    memcpy(prev_msg, ctx->errmsg, sizeof prev_msg);
    if (m40__cuda_workspace(ctx, *bytes, p) == M40_OK) return M40_OK;
    if (ctx->lost) return M40_ERR_DEVICE_LOST;
    ctx->workspace_fallbacks++;
    m40__log(ctx, M40_LOG_WARN,
             "%s; the op runs without %zu bytes of scratch (same result, maybe slower; "
             "fallback %llu on this context)",
             ctx->errmsg, *bytes, (unsigned long long)ctx->workspace_fallbacks);
    ctx->last_status = prev;
    memcpy(ctx->errmsg, prev_msg, sizeof prev_msg);
    *p = NULL;
    *bytes = 0;
    return M40_OK;
}
