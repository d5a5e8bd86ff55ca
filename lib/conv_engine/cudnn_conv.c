/* The cuDNN conv path (issue 5): FP32 NCHW or NHWC with our fused epilogue
**   y = act(scale[k]·conv(x, w) + bias[k] + residual)
** - ReLU: one cudnnConvolutionBiasActivationForward (z = residual with
**   alpha2 = 1, or z = y with alpha2 = 0: not read, as beta = 0 elsewhere);
** - no ReLU: cudnnConvolutionForward (beta = 1 over a copy of the residual),
**   then cudnnAddTensor for the bias (cuDNN's fused call takes IDENTITY with
**   one algorithm only);
** - scale (eager calls only; graphs fold it into the weights): w·scale[k]
**   is written to the workspace first.
** FMA math only (CUDNN_FMA_MATH: no TF32 on Ampere and later). Algorithms
** come from cudnnFindConvolutionForwardAlgorithmEx (graphs: measured) or
** cudnnGetConvolutionForwardAlgorithm_v7 (eager: heuristics); if cuDNN
** refuses the fused call with an algorithm, the next one is tried, then the
** unfused sequence. Scratch comes from the context's workspace. Compiled
** only when CMake found cuDNN (M40_HAVE_CUDNN). */
#include "conv_engine.h"
#include "../../kernels/elementwise.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX 64
#define ALIGN 256

typedef struct cudnn_state {
    cudnnHandle_t h;
    m40__cudnn_conv *cache[CACHE_MAX]; /* eager plans, oldest replaced first */
    int ncache, next;
} cudnn_state;

struct m40__cudnn_conv {
    /* what the plan is for (the eager cache's key) */
    m40__conv_dims dm;
    int sh, sw, ph, pw, dh, dw, relu, nhwc, has_scale, has_bias, has_res;
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    cudnnConvolutionFwdAlgo_t algo;
    int fused;
    size_t algo_ws;   /* the algorithm's scratch, at the workspace's start */
    size_t w_off;     /* scaled weights (has_scale) */
    size_t zero_off;  /* K zeros: the fused call's bias when there is none */
    size_t ws_bytes;  /* all of it */
};

static size_t align_up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static int is_not_supported(cudnnStatus_t s) {
#ifdef CUDNN_STATUS_CATEGORY /* cuDNN 9: sub-codes in thousands */
    return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED;
#else
    return s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_ARCH_MISMATCH;
#endif
}

static int is_alloc_failure(cudnnStatus_t s) {
#ifdef CUDNN_STATUS_CATEGORY
    return s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
           s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
#else
    return s == CUDNN_STATUS_ALLOC_FAILED;
#endif
}

/* cuDNN status -> m40 status and message. */
static m40_status cudnn_err(m40_ctx *ctx, cudnnStatus_t s, const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, what);
    m40_status st = is_not_supported(s) ? M40_ERR_UNSUPPORTED
                    : is_alloc_failure(s) ? M40_ERR_OOM_DEVICE
                                          : M40_ERR_CUDA;
    return m40__err(ctx, st, "cuDNN: %s: %s (status %d)", what, cudnnGetErrorString(s), (int)s);
}

#define CU(call, what)                                                          \
    do {                                                                        \
        cudnnStatus_t s_ = (call);                                              \
        if (s_ != CUDNN_STATUS_SUCCESS) return cudnn_err(ctx, s_, what);        \
    } while (0)

/* "9.10.2" from cudnnGetVersion()'s encoding (8.x: M*1000 + m*100 + p). */
static void version_str(size_t v, char *buf, size_t n) {
    if (v >= 90000) snprintf(buf, n, "%zu.%zu.%zu", v / 10000, v % 10000 / 100, v % 100);
    else snprintf(buf, n, "%zu.%zu.%zu", v / 1000, v % 1000 / 100, v % 100);
}

int m40_cudnn_version(void) { return (int)cudnnGetVersion(); }

m40_status m40__cudnn_ready(m40_ctx *ctx) {
    if (ctx->cudnn) return M40_OK;
    size_t v = cudnnGetVersion();
    char vs[32];
    version_str(v, vs, sizeof vs);
    if (v / (v >= 90000 ? 10000 : 1000) != CUDNN_MAJOR)
        return m40__err(ctx, M40_ERR_UNSUPPORTED,
                        "cuDNN: this libm40 was built against cuDNN %d.%d but cuDNN %s is "
                        "loaded", CUDNN_MAJOR, CUDNN_MINOR, vs);
    if (ctx->cc_major == 5 && v >= 91100)
        return m40__err(ctx, M40_ERR_UNSUPPORTED,
                        "cuDNN: cuDNN %s has no Maxwell (sm_5x) code for this %s; cuDNN 8.x "
                        "or 9.0-9.10 run on an M40", vs, ctx->device_name);
    cudnn_state *cs = calloc(1, sizeof *cs);
    if (!cs) return m40__err(ctx, M40_ERR_OOM_HOST, "cuDNN: out of host memory");
    cudnnStatus_t s = cudnnCreate(&cs->h);
    if (s != CUDNN_STATUS_SUCCESS) {
        free(cs);
        m40_status st = cudnn_err(ctx, s, "cudnnCreate");
        if (st == M40_ERR_CUDA && !ctx->lost) st = M40_ERR_UNSUPPORTED;
        return st;
    }
    s = cudnnSetStream(cs->h, (cudaStream_t)ctx->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        cudnnDestroy(cs->h);
        free(cs);
        return cudnn_err(ctx, s, "cudnnSetStream");
    }
    ctx->cudnn = cs;
    m40__ctx_on_fini(ctx, m40__cudnn_ctx_fini); /* the CUDA layer knows no cuDNN */
    m40__log(ctx, M40_LOG_DEBUG, "created cuDNN %s handle (FMA math, no TF32)", vs);
    return M40_OK;
}

void m40__cudnn_plan_free(m40__cudnn_conv *p) {
    if (!p) return;
    if (p->xd) cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd) cudnnDestroyTensorDescriptor(p->yd);
    if (p->bd) cudnnDestroyTensorDescriptor(p->bd);
    if (p->wd) cudnnDestroyFilterDescriptor(p->wd);
    if (p->cd) cudnnDestroyConvolutionDescriptor(p->cd);
    if (p->ad) cudnnDestroyActivationDescriptor(p->ad);
    free(p);
}

void m40__cudnn_ctx_fini(m40_ctx *ctx) {
    cudnn_state *cs = ctx->cudnn;
    if (!cs) return;
    for (int i = 0; i < cs->ncache; i++) m40__cudnn_plan_free(cs->cache[i]);
    cudnnDestroy(cs->h);
    free(cs);
    ctx->cudnn = NULL;
}

void m40__cudnn_plan_info(const m40__cudnn_conv *p, int *algo, size_t *ws, int *fused) {
    *algo = (int)p->algo;
    *ws = p->ws_bytes;
    *fused = p->fused;
}

const char *m40__cudnn_algo_name(int algo) {
    switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
    }
}

static void plan_key(m40__cudnn_conv *p, const m40__conv_dims *dm, const m40_conv2d_desc *d,
                     const float *scale, const float *bias, const float *res) {
    p->dm = *dm;
    p->sh = d->stride_h, p->sw = d->stride_w, p->ph = d->pad_h, p->pw = d->pad_w;
    p->dh = d->dilation_h, p->dw = d->dilation_w;
    p->relu = d->relu != 0, p->nhwc = d->layout == M40_LAYOUT_NHWC;
    p->has_scale = scale != NULL, p->has_bias = bias != NULL, p->has_res = res != NULL;
}

static int same_key(const m40__cudnn_conv *a, const m40__cudnn_conv *b) {
    return !memcmp(&a->dm, &b->dm, sizeof a->dm) && a->sh == b->sh && a->sw == b->sw &&
           a->ph == b->ph && a->pw == b->pw && a->dh == b->dh && a->dw == b->dw &&
           a->relu == b->relu && a->nhwc == b->nhwc && a->has_scale == b->has_scale &&
           a->has_bias == b->has_bias && a->has_res == b->has_res;
}

static m40_status make_descs(m40_ctx *ctx, m40__cudnn_conv *p) {
    const m40__conv_dims *m = &p->dm;
    cudnnTensorFormat_t f = p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    CU(cudnnCreateTensorDescriptor(&p->xd), "cudnnCreateTensorDescriptor");
    CU(cudnnCreateTensorDescriptor(&p->yd), "cudnnCreateTensorDescriptor");
    CU(cudnnCreateTensorDescriptor(&p->bd), "cudnnCreateTensorDescriptor");
    CU(cudnnCreateFilterDescriptor(&p->wd), "cudnnCreateFilterDescriptor");
    CU(cudnnCreateConvolutionDescriptor(&p->cd), "cudnnCreateConvolutionDescriptor");
    CU(cudnnCreateActivationDescriptor(&p->ad), "cudnnCreateActivationDescriptor");
    CU(cudnnSetTensor4dDescriptor(p->xd, f, CUDNN_DATA_FLOAT, m->N, m->C, m->H, m->W),
       "x descriptor");
    CU(cudnnSetTensor4dDescriptor(p->yd, f, CUDNN_DATA_FLOAT, m->N, m->K, m->P, m->Q),
       "y descriptor");
    CU(cudnnSetTensor4dDescriptor(p->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, m->K, 1, 1),
       "bias descriptor");
    /* dims as K, C, R, S whatever the format; NHWC = our [K,R,S,C] */
    CU(cudnnSetFilter4dDescriptor(p->wd, CUDNN_DATA_FLOAT, f, m->K, m->C, m->R, m->S),
       "w descriptor");
    CU(cudnnSetConvolution2dDescriptor(p->cd, p->ph, p->pw, p->sh, p->sw, p->dh, p->dw,
                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
       "conv descriptor");
#if CUDNN_MAJOR >= 8
    CU(cudnnSetConvolutionMathType(p->cd, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType(FMA)");
#else
    CU(cudnnSetConvolutionMathType(p->cd, CUDNN_DEFAULT_MATH), "cudnnSetConvolutionMathType");
#endif
    CU(cudnnSetActivationDescriptor(p->ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
       "activation descriptor");
    int n, c, h, w;
    CU(cudnnGetConvolution2dForwardOutputDim(p->cd, p->xd, p->wd, &n, &c, &h, &w),
       "cudnnGetConvolution2dForwardOutputDim");
    if (n != m->N || c != m->K || h != m->P || w != m->Q)
        return m40__err(ctx, M40_ERR_SHAPE, "cuDNN: output [%d,%d,%d,%d], libm40 expects "
                        "[%d,%d,%d,%d]", n, c, h, w, m->N, m->K, m->P, m->Q);
    return M40_OK;
}

/* One run with the plan as it stands. Returns the first failing cuDNN
** status in *cs_out (SUCCESS otherwise); CUDA errors as an m40 status. */
static m40_status run(m40_ctx *ctx, cudnn_state *cs, const m40__cudnn_conv *p, const float *x,
                      const float *w, const float *scale, const float *bias, const float *res,
                      float *y, cudnnStatus_t *cs_out) {
    static const float one = 1.0f, zero = 0.0f;
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    const m40__conv_dims *m = &p->dm;
    *cs_out = CUDNN_STATUS_SUCCESS;
    void *ws = NULL;
    if (p->ws_bytes) {
        m40_status st = m40__cuda_workspace(ctx, p->ws_bytes, &ws);
        if (st != M40_OK) return st;
    }
    const float *wk = w;
    if (p->has_scale) { /* w'[k,:] = w[k,:]·scale[k] */
        int64_t crs = (int64_t)m->C * m->R * m->S;
        m40_tensor_desc dw = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {m->K, crs},
                              .stride = {crs, 1}};
        m40_tensor_desc ds = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {m->K, crs},
                              .stride = {1, 0}};
        float *wt = (float *)((char *)ws + p->w_off);
        int e = m40k_binary(ctx->stream, M40K_MUL, dw, w, ds, scale, dw, wt);
        if (e) return m40__cuda_check(ctx, e, "cuDNN conv: scale into the weights");
        wk = wt;
    }
    size_t bytes = (size_t)m->N * m->K * m->P * m->Q * sizeof(float);
    cudnnStatus_t s;
    if (p->fused) {
        const float *b = bias;
        if (!b) {
            b = (const float *)((char *)ws + p->zero_off);
            cudaError_t e = cudaMemsetAsync((void *)b, 0, (size_t)m->K * sizeof(float), stream);
            if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "cuDNN conv: zero bias");
        }
        float a2 = res ? 1.0f : 0.0f;
        s = cudnnConvolutionBiasActivationForward(cs->h, &one, p->xd, x, p->wd, wk, p->cd,
                                                  p->algo, ws, p->algo_ws, &a2, p->yd,
                                                  res ? (const void *)res : (const void *)y,
                                                  p->bd, b, p->ad, p->yd, y);
        *cs_out = s;
        return M40_OK;
    }
    float beta = 0.0f;
    if (res) {
        if (res != y) {
            cudaError_t e = cudaMemcpyAsync(y, res, bytes, cudaMemcpyDeviceToDevice, stream);
            if (e != cudaSuccess) return m40__cuda_check(ctx, (int)e, "cuDNN conv: residual copy");
        }
        beta = 1.0f;
    }
    s = cudnnConvolutionForward(cs->h, &one, p->xd, x, p->wd, wk, p->cd, p->algo, ws, p->algo_ws,
                                &beta, p->yd, y);
    if (s == CUDNN_STATUS_SUCCESS && bias)
        s = cudnnAddTensor(cs->h, &one, p->bd, bias, &one, p->yd, y);
    if (s == CUDNN_STATUS_SUCCESS && p->relu)
        s = cudnnActivationForward(cs->h, p->ad, &one, p->yd, y, &zero, p->yd, y);
    *cs_out = s;
    return M40_OK;
}

/* The fused call without a residual passes z = y with alpha2 = 0, which
** cuDNN should not read (as beta = 0 elsewhere). Checked once per plan: two
** runs over different contents of y (NaN bits, then zeros) must give the
** same bytes; if not, the plan takes the unfused sequence. *ignored = 1
** when they agree. (Nondeterministic algorithms would fail this too, which
** only costs the fusion.) */
static m40_status probe_z(m40_ctx *ctx, cudnn_state *cs, const m40__cudnn_conv *p,
                          const float *x, const float *w, const float *scale, const float *bias,
                          float *y, int *ignored) {
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    size_t bytes = (size_t)p->dm.N * p->dm.K * p->dm.P * p->dm.Q * sizeof(float);
    unsigned char *h[2] = {malloc(bytes), malloc(bytes)};
    m40_status st = M40_OK;
    *ignored = 0;
    if (!h[0] || !h[1]) st = m40__err(ctx, M40_ERR_OOM_HOST, "cuDNN: out of host memory");
    for (int i = 0; i < 2 && st == M40_OK; i++) {
        cudnnStatus_t s;
        cudaError_t e = cudaMemsetAsync(y, i ? 0 : 0xFF, bytes, stream);
        if (e != cudaSuccess) { st = m40__cuda_check(ctx, (int)e, "cuDNN probe"); break; }
        if ((st = run(ctx, cs, p, x, w, scale, bias, NULL, y, &s)) != M40_OK) break;
        if (s != CUDNN_STATUS_SUCCESS) { st = cudnn_err(ctx, s, "cuDNN probe"); break; }
        e = cudaMemcpyAsync(h[i], y, bytes, cudaMemcpyDeviceToHost, stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
        if (e != cudaSuccess) st = m40__cuda_check(ctx, (int)e, "cuDNN probe");
    }
    if (st == M40_OK) *ignored = memcmp(h[0], h[1], bytes) == 0;
    free(h[0]);
    free(h[1]);
    return st;
}

/* Sets algorithm `algo` and the workspace layout on p. */
static m40_status set_algo(m40_ctx *ctx, cudnn_state *cs, m40__cudnn_conv *p,
                           cudnnConvolutionFwdAlgo_t algo) {
    size_t aw = 0;
    CU(cudnnGetConvolutionForwardWorkspaceSize(cs->h, p->xd, p->wd, p->cd, p->yd, algo, &aw),
       "cudnnGetConvolutionForwardWorkspaceSize");
    p->algo = algo;
    p->algo_ws = aw;
    size_t off = align_up(aw);
    p->w_off = off;
    if (p->has_scale) off += align_up((size_t)p->dm.K * p->dm.C * p->dm.R * p->dm.S * sizeof(float));
    p->zero_off = off;
    if (p->fused && !p->has_bias) off += align_up((size_t)p->dm.K * sizeof(float));
    p->ws_bytes = off;
    return M40_OK;
}

m40_status m40__cudnn_plan(m40_ctx *ctx, const m40__conv_dims *dm, const m40_conv2d_desc *d,
                           const float *x, const float *w, const float *scale,
                           const float *bias, const float *res, float *y, size_t ws_limit,
                           int find, m40__cudnn_conv **out) {
    *out = NULL;
    m40_status st = m40__cudnn_ready(ctx);
    if (st != M40_OK) return st;
    cudnn_state *cs = ctx->cudnn;
    m40__cudnn_conv *p = calloc(1, sizeof *p);
    if (!p) return m40__err(ctx, M40_ERR_OOM_HOST, "cuDNN: out of host memory");
    plan_key(p, dm, d, scale, bias, res);
    if ((st = make_descs(ctx, p)) != M40_OK) {
        m40__cudnn_plan_free(p);
        return st;
    }
    /* candidate algorithms, best first */
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int nperf = 0;
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    if (find) {
        void *ws = NULL;
        if (m40__cuda_workspace(ctx, ws_limit, &ws) == M40_OK) {
            /* measures every algorithm, writing y (scale and residual play no part) */
            s = cudnnFindConvolutionForwardAlgorithmEx(cs->h, p->xd, x, p->wd, w, p->cd, p->yd, y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nperf,
                                                       perf, ws, ws_limit);
        } else if (ctx->lost) {
            m40__cudnn_plan_free(p);
            return M40_ERR_DEVICE_LOST;
        }
        if (s != CUDNN_STATUS_SUCCESS) (void)cudaGetLastError(); /* fall back to heuristics */
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        s = cudnnGetConvolutionForwardAlgorithm_v7(cs->h, p->xd, p->wd, p->cd, p->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nperf, perf);
        if (s != CUDNN_STATUS_SUCCESS) {
            m40__cudnn_plan_free(p);
            return cudnn_err(ctx, s, "cudnnGetConvolutionForwardAlgorithm_v7");
        }
    }
    /* the fused call when there is a ReLU, else (or if cuDNN refuses it for
    ** every algorithm) the unfused sequence */
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int fused = p->relu; fused >= 0; fused--) {
        p->fused = fused;
        for (int i = 0; i < nperf; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
#if CUDNN_MAJOR >= 8
            if (perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH)
                continue; /* tensor-core (TF32) variants are not FP32 */
#endif
            if ((st = set_algo(ctx, cs, p, perf[i].algo)) != M40_OK) {
                m40__cudnn_plan_free(p);
                return st;
            }
            if (p->algo_ws > ws_limit) continue;
            st = run(ctx, cs, p, x, w, scale, bias, res, y, &s);
            if (st != M40_OK) {
                m40__cudnn_plan_free(p);
                return st;
            }
            if (s == CUDNN_STATUS_SUCCESS && fused && !res) {
                int ignored;
                if ((st = probe_z(ctx, cs, p, x, w, scale, bias, y, &ignored)) != M40_OK) {
                    m40__cudnn_plan_free(p);
                    return st;
                }
                if (!ignored) {
                    m40__log(ctx, M40_LOG_WARN, "cuDNN read z with alpha2 = 0: unfused instead");
                    break; /* to the unfused sequence */
                }
            }
            if (s == CUDNN_STATUS_SUCCESS) {
                *out = p;
                m40__log(ctx, M40_LOG_DEBUG, "cuDNN conv N%d C%d %dx%d K%d %dx%d: %s%s, %zu B",
                         dm->N, dm->C, dm->H, dm->W, dm->K, dm->R, dm->S,
                         m40__cudnn_algo_name((int)p->algo), p->fused ? " fused" : "",
                         p->ws_bytes);
                return M40_OK;
            }
            last = s;
            /* a fused call cuDNN refuses, for whatever reason, falls back to the
            ** unfused sequence; the unfused one must work unless unsupported */
            if (fused) {
                (void)cudaGetLastError();
                if (ctx->lost) break;
                continue;
            }
            if (!is_not_supported(s)) {
                m40__cudnn_plan_free(p);
                return cudnn_err(ctx, s, fused ? "cudnnConvolutionBiasActivationForward"
                                               : "cudnnConvolutionForward");
            }
        }
    }
    m40__cudnn_plan_free(p);
    return cudnn_err(ctx, last, "no algorithm runs this conv in the workspace limit");
}

m40_status m40__cudnn_conv2d(m40_ctx *ctx, const m40__conv_dims *dm, const m40_conv2d_desc *d,
                             const float *x, const float *w, const float *scale,
                             const float *bias, const float *res, float *y,
                             m40__cudnn_conv *plan) {
    cudnnStatus_t s;
    m40_status st;
    if (!plan) {
        if ((st = m40__cudnn_ready(ctx)) != M40_OK) return st;
        cudnn_state *cs = ctx->cudnn;
        m40__cudnn_conv key;
        plan_key(&key, dm, d, scale, bias, res);
        for (int i = 0; i < cs->ncache && !plan; i++)
            if (same_key(cs->cache[i], &key)) plan = cs->cache[i];
        if (!plan) { /* first use: heuristics; the plan's trial run is this call's result */
            size_t limit = ctx->ws_bytes > ((size_t)64 << 20) ? ctx->ws_bytes : (size_t)64 << 20;
            if ((st = m40__cudnn_plan(ctx, dm, d, x, w, scale, bias, res, y, limit, 0, &plan)))
                return st;
            if (cs->ncache < CACHE_MAX) {
                cs->cache[cs->ncache++] = plan;
            } else {
                /* descriptors are read at the call, not kept by queued work */
                m40__cudnn_plan_free(cs->cache[cs->next]);
                cs->cache[cs->next] = plan;
                cs->next = (cs->next + 1) % CACHE_MAX;
            }
            return M40_OK;
        }
    }
    if ((st = run(ctx, ctx->cudnn, plan, x, w, scale, bias, res, y, &s)) != M40_OK) return st;
    return s == CUDNN_STATUS_SUCCESS ? M40_OK : cudnn_err(ctx, s, "m40_conv2d (cuDNN)");
}
