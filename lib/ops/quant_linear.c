/* Weight-only quantized linear (LINEAR_Q, m40_quant_linear):
** y[...,N] = x[...,K] · Wᵀ + bias, W int8 / int4 with f16 or f32 scales per
** row or per K-group, or f16 (include/m40/quant.h). Three optional fusions
** of a transformer layer (graph nodes only): norm_w [K] (x is first
** rmsnorm(x)·norm_w, eps the node's), residual [...,N] (y += residual) and
** glu (y [...,N/2] = swiglu of the N outputs, as SWIGLU; not with a
** residual).
** CPU: lib/ref/quant.c; GPU: kernels/quant.h (GEMV for M <= 8, with split-K
** partial sums in the context's workspace; 9..64 rows as 8-row GEMV slices;
** above, the SGEMM converting W as it loads, or the quantized GEMM:
** kernels/quant_dispatch.cu). */
#include "op.h"
#include "../ref/ref.h"
#include "../quant/quant_internal.h"
#include "../../kernels/quant_plan.h"
#ifdef M40_HAVE_CUDA
#include "../../kernels/quant.h"
#include <cuda_runtime_api.h>
#endif

#include <limits.h>
#include <math.h>
#include <stdlib.h>

enum { IX = 0, IW = 1, ISCALE = 2, IBIAS = 3, INORM = 4, IRES = 5 }; /* input slots */

static m40_dtype wtype_of(int bits) {
    return bits == 8 ? M40_DTYPE_Q8 : bits == 4 ? M40_DTYPE_Q4 : M40_DTYPE_F16;
}

/* The format of a node: bits and group from its parameters, the scale
** dtype from the scale tensor. */
static m40_quant_format format_of(const m40_node_desc *nd, const m40_tensor_desc *scale) {
    m40_quant_format f = {.wtype = wtype_of(nd->bits), .group = nd->bits == 16 ? 0 : nd->group,
                          .scale_dtype = scale ? scale->dtype : M40_DTYPE_F16};
    return f;
}

static int64_t rows(const m40_tensor_desc *x) { return m40__dims_product(x, 0, x->ndim - 1); }

/* x f32 [...,K]; bits 8: wq i8 [N,K]; bits 4: wq i8 [N,(K+1)/2] (two per
** byte); bits 16: w f16 [N,K]; scale f16/f32 [N] (group 0) or
** [N,ceil(K/group)] (absent for bits 16); bias [N]? -> f32 [...,N] */
static m40_status qlinear_rule(const m40__op_call *c, m40_tensor_desc *out) {
    const m40_node_desc *nd = c->nd;
    const int n = nd->ninputs, bits = nd->bits;
    m40_status st;
    if (bits != 8 && bits != 4 && bits != 16)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "bits %d: must be 8, 4 or 16", bits);
    const int group = bits == 16 ? 0 : nd->group;
    if (group != 0 && group != 32 && group != 64 && group != 128)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "group %d: must be 0 (per row), 32, 64 "
                              "or 128", group);
    m40_dtype wdt = bits == 16 ? M40_DTYPE_F16 : M40_DTYPE_I8;
    if ((st = m40__rule_dtype(c, IX, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, IX, 1, M40_MAX_DIMS)) || (st = m40__rule_dtype(c, IW, wdt, wdt)) ||
        (st = m40__rule_ndim(c, IW, 2, 2)))
        return st;
    const m40_tensor_desc *x = c->in[IX], *w = c->in[IW];
    const m40_tensor_desc *scale = n > ISCALE ? c->in[ISCALE] : NULL;
    const m40_tensor_desc *bias = n > IBIAS ? c->in[IBIAS] : NULL;
    if (bits == 16 && scale)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "f16 weights (bits 16) take no scale");
    if (bits != 16) {
        if (!scale)
            return m40__rule_fail(c, M40_ERR_INVALID_ARG, "input %d (scale) is required for "
                                  "bits %d", ISCALE, bits);
        if ((st = m40__rule_dtype(c, ISCALE, M40_DTYPE_F16, M40_DTYPE_F32)) ||
            (st = m40__rule_ndim(c, ISCALE, group ? 2 : 1, group ? 2 : 1)))
            return st;
    }
    if (bias && ((st = m40__rule_dtype(c, IBIAS, M40_DTYPE_F32, M40_DTYPE_F16)) ||
                 (st = m40__rule_ndim(c, IBIAS, 1, 1))))
        return st;
    const m40_tensor_desc *nw = n > INORM ? c->in[INORM] : NULL, *res = n > IRES ? c->in[IRES] : NULL;
    if (nw) {
        if ((st = m40__rule_dtype(c, INORM, M40_DTYPE_F32, M40_DTYPE_F16)) ||
            (st = m40__rule_ndim(c, INORM, 1, 1)))
            return st;
        if (nw->shape[0] != x->shape[x->ndim - 1])
            return m40__rule_shape(c, "the norm weight must have x's last dim");
        if (!(nd->eps > 0.0f) || isinf(nd->eps))
            return m40__rule_fail(c, M40_ERR_INVALID_ARG, "eps must be finite and > 0 (the norm "
                                  "of x)");
    }
    if (nd->glu != 0 && nd->glu != 1)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "glu %d: must be 0 or 1", nd->glu);
    const int64_t K = x->shape[x->ndim - 1], N = w->shape[0];
    if (nd->glu && (N % 2 != 0 || res))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "glu: needs an even N (gate rows, then up "
                              "rows; N = %lld) and no residual", (long long)N);
    bool ok = w->shape[1] == (bits == 4 ? K / 2 + K % 2 : K) && (!bias || bias->shape[0] == N);
    if (scale) ok = ok && scale->shape[0] == N && (!group || scale->shape[1] == K / group + (K % group != 0));
    if (!ok)
        return m40__rule_shape(c, "need x [...,K], wq [N,K] (8 bit), [N,(K+1)/2] (4 bit) or "
                               "f16 [N,K], scale [N] or [N,ceil(K/group)], bias [N]");
    if ((st = m40__rule_linear_out(c, nd->glu ? N / 2 : N, out))) return st;
    if (res) {
        if ((st = m40__rule_dtype(c, IRES, M40_DTYPE_F32, M40_DTYPE_F32))) return st;
        if (!m40__same_shape(res, out)) return m40__rule_shape(c, "the residual must have y's shape");
    }
    return M40_OK;
}

static m40_status qlinear_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st;
    if ((c->nd->ninputs > IBIAS && (st = m40__run_need_f32(c, IBIAS))) ||
        (st = m40__run_need_contiguous(c, out)))
        return st;
    if (!c->ctx->is_gpu) return M40_OK;
    const m40_tensor_desc *x = c->in[IX];
    int64_t M = rows(x);
    if (M > INT_MAX || c->in[IW]->shape[0] > INT_MAX || x->shape[x->ndim - 1] > INT_MAX)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "dims of 2^31 or more");
    if (M > 65535LL * 128)
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "M = %lld rows; at most %lld per call",
                              (long long)M, 65535LL * 128);
    const int64_t K = x->shape[x->ndim - 1];
    /* the GEMVs' column indices (a split's chunks past K, padded to whole
    ** chunks, in int: kernels/quant_gemv_v3.cuh) and m40k_rmsnorm's bound */
    if (K > ((int64_t)1 << 30))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "K = %lld columns: the GPU's quantized "
                              "linears (and their fused norm) take at most 2^30", (long long)K);
    return M40_OK;
}

/* The fusions on the CPU are the unfused ops' references in turn: RMSNORM
** (lib/ref/transformer.c) into a temporary, the linear, then + residual as
** the ADD the residual step was, or SWIGLU from a temporary: the same bits
** as the separate nodes. */
static m40_status qlinear_cpu(m40_ctx *ctx, const m40__op_run *r) {
    const int n = r->nd->ninputs;
    const m40_tensor *x = r->in[IX], *w = r->in[IW];
    const m40_tensor *scale = n > ISCALE ? r->in[ISCALE] : NULL, *bias = n > IBIAS ? r->in[IBIAS] : NULL;
    const m40_tensor *nw = n > INORM ? r->in[INORM] : NULL, *res = n > IRES ? r->in[IRES] : NULL;
    m40_quant_format f = format_of(r->nd, scale ? &scale->desc : NULL);
    int64_t K = x->desc.shape[x->desc.ndim - 1], M = rows(&x->desc), N = w->desc.shape[0];
    const float *xin = x->data;
    float *xn = NULL;
    if (nw) {
        xn = malloc((size_t)(M * K > 0 ? M * K : 1) * sizeof *xn);
        if (!xn) return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", r->fn);
        m40__ref_rmsnorm(M, K, r->nd->eps, 0, (float *)x->data, K, NULL, 0, nw->data,
                         nw->desc.dtype == M40_DTYPE_F16, xn, K);
        xin = xn;
    }
    float *yu = NULL; /* glu: the N outputs before SWIGLU */
    if (r->nd->glu && !(yu = malloc((size_t)(M * N > 0 ? M * N : 1) * sizeof *yu))) {
        free(xn);
        return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", r->fn);
    }
    int e = m40__ref_quant_linear(&f, M, N, K, xin, w->data, scale ? scale->data : NULL,
                                  bias ? bias->data : NULL, yu ? yu : r->out->data);
    free(xn);
    if (!e && yu) m40__ref_swiglu(M, N / 2, yu, N, r->out->data);
    free(yu);
    if (e) return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", r->fn);
    if (res) {
        float *y = r->out->data;
        const float *rp = res->data;
        for (int64_t i = 0; i < M * N; i++) y[i] += rp[i];
    }
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
/* The launcher's arguments (pointers NULL when only sizing). */
static m40k_qlinear_args qargs(const m40_node_desc *nd, const m40_tensor_desc *x,
                               const m40_tensor_desc *w, const m40_tensor_desc *scale) {
    m40_quant_format f = format_of(nd, scale);
    m40k_qlinear_args a = {.M = (int)rows(x), .N = (int)w->shape[0],
                           .K = (int)x->shape[x->ndim - 1], .wtype = (int)f.wtype,
                           .scale_f16 = f.scale_dtype == M40_DTYPE_F16, .group = f.group};
    return a;
}

static m40_status qlinear_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const int n = r->nd->ninputs;
    const m40_tensor *x = r->in[IX], *w = r->in[IW];
    const m40_tensor *scale = n > ISCALE ? r->in[ISCALE] : NULL, *bias = n > IBIAS ? r->in[IBIAS] : NULL;
    m40k_qlinear_args a = qargs(r->nd, &x->desc, &w->desc, scale ? &scale->desc : NULL);
    a.x = x->data;
    a.w = w->data;
    a.scale = scale ? scale->data : NULL;
    a.bias = bias ? bias->data : NULL;
    a.y = r->out->data;
    const m40_tensor *nw = n > INORM ? r->in[INORM] : NULL, *res = n > IRES ? r->in[IRES] : NULL;
    if (nw) {
        a.nw = nw->data;
        a.nw_f16 = nw->desc.dtype == M40_DTYPE_F16;
        a.eps = r->nd->eps;
    }
    a.res = res ? res->data : NULL;
    a.glu = r->nd->glu ? a.N / 2 : 0;
    a.pf = ctx->l2_hint; /* the next node's first operand (a graph run's hint) */
    a.pf_bytes = ctx->l2_hint_bytes > INT_MAX ? INT_MAX : (int)ctx->l2_hint_bytes;
    /* split-K partial sums (the GEMV's, or the SGEMM's for a prefill) go to
    ** the context's workspace, grown on first need (graphs reserve it at
    ** alloc); if it cannot grow, the launchers take kernels without split-K */
    const size_t need = m40k_quant_linear_workspace(&a, ctx->sm_count);
    size_t ws_bytes = need;
    void *ws;
    m40_status st = m40__cuda_scratch(ctx, &ws_bytes, &ws);
    if (st != M40_OK) return st;
    a.ws = ws;
    a.ws_bytes = ws_bytes;
    int e = m40k_quant_linear(ctx->stream, &a, ctx->sm_count);
    /* glu where the kernel cannot pair the rows goes through the scratch:
    ** without it there is no slower way, so say what is missing */
    if (e == (int)cudaErrorInvalidValue && a.glu && ws_bytes < need)
        return m40__err(ctx, M40_ERR_OOM_DEVICE, "%s: the SwiGLU's %d x %d outputs need %zu bytes "
                        "of device scratch, which could not be had", r->fn, a.M, a.N, need);
    return e ? m40__cuda_check(ctx, e, "m40_quant_linear") : M40_OK;
}
#endif

/* The launcher's scratch (m40k_quant_linear_workspace): the GEMV's split-K
** sums (M <= 8; up to 64 rows an 8-row slice's, reused by every slice),
** the same on every GPU; and for a larger M the SGEMM's split-K sums, which
** depend on the SM count: the planner (sm_count 0) plans none and they are
** reserved at m40_graph_alloc, as for LINEAR. Without CUDA the GEMV rule
** (kernels/quant_plan.h). */
static m40_status qlinear_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                    int sm_count, uint64_t *bytes) {
    (void)out;
    (void)sm_count;
    *bytes = 0;
    const m40_tensor_desc *x = c->in[IX], *w = c->in[IW];
    int64_t M = rows(x), N = w->shape[0], K = x->shape[x->ndim - 1];
    if (M < 1 || M > INT_MAX || N > INT_MAX || K > INT_MAX) return M40_OK;
    /* a fused norm that runs as its own kernel: its rows in front
    ** (kernels/quant_plan.h's m40k_qnorm_rows_bytes) */
    const int has_norm = c->nd->ninputs > INORM && c->in[INORM];
    int64_t nrow;
    if (has_norm && m40__mul_ok(M * 4, K, M40__OP_BYTES_MAX, &nrow))
        return m40__rule_fail(c, M40_ERR_SHAPE, "the normalized rows would take 2^62 bytes or more");
    if (c->nd->glu && m40__mul_ok(M * 4, N, M40__OP_BYTES_MAX, &nrow))
        return m40__rule_fail(c, M40_ERR_SHAPE, "the SwiGLU's N outputs would take 2^62 bytes or more");
#ifdef M40_HAVE_CUDA
    m40k_qlinear_args a = qargs(c->nd, x, w, c->nd->ninputs > ISCALE ? c->in[ISCALE] : NULL);
    if (has_norm) a.nw = &a; /* any non-NULL: sizing only */
    a.glu = c->nd->glu ? (int)(N / 2) : 0;
    *bytes = m40k_quant_linear_workspace(&a, sm_count);
#else
    *bytes = has_norm ? m40k_qnorm_rows_bytes(M, K) : 0;
    if (c->nd->glu) *bytes += m40k_qglu_rows_bytes(M, N);
    if (M > M40K_QSLICE_MAX) return M40_OK;
    if (M > 8) M = 8; /* 8-row slices */
    if (c->nd->bits != 16 && N > 0 && K > 0)
        *bytes += m40k_qgemv_split_bytes(c->nd->bits == 4, (int)M, (int)N, (int)K, c->nd->group != 0);
#endif
    return M40_OK;
}

/* The norm's weights: the staging of x waits on them before the first
** weights can be used, and they left L2 a step ago (a DRAM miss each;
** bench/NOTES.md, session 36) */
static const m40_tensor *qlinear_l2_hint(const m40_node_desc *nd, const m40_tensor *const *in) {
    return nd->ninputs > INORM ? in[INORM] : NULL;
}

const m40__op_def m40__op_linear_q = {
    .op = M40_OP_LINEAR_Q, .name = "linear_q", .inplace = 0, .min_in = 2, .max_in = 6,
    .in_names = {"x", "wq", "scale", "bias", "norm_w", "residual"}, .out_name = "y", .rule = qlinear_rule,
    .workspace = qlinear_workspace, .run_check = qlinear_run_check, .run_cpu = qlinear_cpu,
    .l2_hint = qlinear_l2_hint, M40__GPU(qlinear_gpu)};

m40_status m40_quant_linear(m40_ctx *ctx, const m40_tensor *x, const m40_qweight *w,
                            const m40_tensor *bias, m40_tensor *y) {
    static const char fn[] = "m40_quant_linear";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!w) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w is NULL", fn);
    if (!w->data) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w->data is NULL", fn);
    if (w->fmt.wtype != M40_DTYPE_F16 && !w->scale &&
        m40__quant_check_format(NULL, fn, &w->fmt) == M40_OK)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w->scale is NULL (needed for %s)", fn,
                        m40_quant_format_name(&w->fmt));
    if ((st = m40__quant_check_qweight(ctx, fn, w)) != M40_OK) return st;
    /* int4 rows of K and K + 1 columns take the same bytes: K is w->k */
    if (x && x->desc.ndim >= 1 && x->desc.shape[x->desc.ndim - 1] != w->k) {
        char s[96];
        return m40__err(ctx, M40_ERR_SHAPE, "%s: x %s, W [%lld, %lld] do not fit y = x·Wᵀ + "
                        "bias", fn, m40__shape_str(&x->desc, s, sizeof s), (long long)w->n,
                        (long long)w->k);
    }
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
    bool f16 = w->fmt.wtype == M40_DTYPE_F16;
    nd.bits = f16 ? 16 : w->fmt.wtype == M40_DTYPE_Q4 ? 4 : 8;
    nd.group = f16 ? 0 : w->fmt.group;
    nd.ninputs = 4;
    const m40_tensor *in[4] = {x, w->data, f16 ? NULL : w->scale, bias};
    return m40__op_eager(ctx, fn, &nd, in, y, NULL);
}
