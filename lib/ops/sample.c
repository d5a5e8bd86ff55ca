/* SAMPLE: one id per row of logits (m40/transformer.h: m40_sample).
** CPU: lib/ref/sample.c (it states the definition both sides follow);
** GPU: kernels/sample.h. */
#include "op.h"
#include "../ref/ref.h"
#include "m40/transformer.h"
#include "../../kernels/sample.h" /* plain C: the knob below is declared there */

#include <math.h>
#include <stdlib.h>

#define SAMPLE_V_MAX ((int64_t)1 << 24) /* ids travel as exact floats */

/* kernels/sample.h: which GPU kernel runs (2 auto, 3 grid passes + candidate
** sort, 1 candidate sort, 0 radix selects alone). Here, not in the .cu, so that tools and tests link without CUDA. */
int m40k_sample_variant = 2;

void m40_sampler_desc_init(m40_sampler_desc *d) {
    if (!d) return;
    *d = (m40_sampler_desc){.struct_size = sizeof *d, .temperature = 1.0f, .top_k = 0,
                            .top_p = 1.0f, .min_p = 0.0f, .repetition_penalty = 1.0f, .seed = 0};
}

static m40_status sampler_check(const m40__op_call *c, const m40_sampler_desc *s) {
    if (s->struct_size < sizeof *s)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "sampler struct_size is %zu, this libm40 "
                              "needs %zu (call m40_sampler_desc_init)", s->struct_size, sizeof *s);
    if (!isfinite(s->temperature))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "temperature %g is not finite",
                              (double)s->temperature);
    if (s->top_k < 0)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "top_k %d is negative (0: off)", s->top_k);
    if (!(s->top_p > 0.0f && s->top_p <= 1.0f))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "top_p %g is not in (0, 1] (1: off)",
                              (double)s->top_p);
    if (!(s->min_p >= 0.0f && s->min_p < 1.0f))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "min_p %g is not in [0, 1) (0: off)",
                              (double)s->min_p);
    if (!(s->repetition_penalty > 0.0f && isfinite(s->repetition_penalty)))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "repetition_penalty %g is not finite and "
                              "> 0 (1: off)", (double)s->repetition_penalty);
    return M40_OK;
}

/* The temperature the runs use: below M40_SAMPLER_GREEDY_BELOW, greedy (0).
** Logits / 1e-38 overflow a float, ties at FLT_MAX and sample among them:
** a request asking for "almost greedy" got almost uniform. That cold is
** greedy already. */
static float run_temperature(const m40_sampler_desc *s) {
    return s->temperature < M40_SAMPLER_GREEDY_BELOW ? 0.0f : s->temperature;
}

/* logits f32 [B,V], history i32 [B,W]?, pos i32 [B]? -> f32 [B,2] */
static m40_status sample_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = sampler_check(c, &c->nd->sampler)) ||
        (st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_dtype(c, 1, M40_DTYPE_I32, M40_DTYPE_I32)) ||
        (st = m40__rule_dtype(c, 2, M40_DTYPE_I32, M40_DTYPE_I32)) ||
        (st = m40__rule_ndim(c, 0, 2, 2)) || (st = m40__rule_ndim(c, 1, 2, 2)) ||
        (st = m40__rule_ndim(c, 2, 1, 1)))
        return st;
    const m40_tensor_desc *l = c->in[0], *h = c->in[1], *p = c->in[2];
    int64_t B = l->shape[0], V = l->shape[1];
    if (V < 1 || V > SAMPLE_V_MAX)
        return m40__rule_shape(c, "V (logits' last dim) must be in 1 .. 2^24");
    if (h && h->shape[0] != B) return m40__rule_shape(c, "history must be [B, W]");
    if (p && p->shape[0] != B) return m40__rule_shape(c, "pos must be [B]");
    int64_t s[2] = {B, 2};
    return m40__rule_out(c, out, M40_DTYPE_F32, 2, s);
}

static m40_status sample_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    m40_status st = m40__run_need_contiguous(c, out);
    if (st != M40_OK) return st;
    if (c->ctx->is_gpu && (c->in[0]->shape[0] >= INT32_MAX ||
                           (c->in[1] && c->in[1]->shape[1] >= INT32_MAX)))
        return m40__rule_fail(c, M40_ERR_UNSUPPORTED, "the kernel takes B and W below 2^31");
    return M40_OK;
}

static m40_status sample_cpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_tensor *l = r->in[0], *h = r->in[1], *p = r->in[2];
    int64_t B = l->desc.shape[0], V = l->desc.shape[1], W = h ? h->desc.shape[1] : 0;
    const int32_t *hist = h ? (const int32_t *)h->data : NULL;
    /* the kernel skips a bad id and reports it; here it is an error before anything runs */
    for (int64_t i = 0; i < B * W; i++)
        if (hist[i] < -1 || hist[i] >= V)
            return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: history id %d at [%lld, %lld] out of "
                            "range [-1, %lld)", r->fn, (int)hist[i], (long long)(i / W),
                            (long long)(i % W), (long long)V);
    m40_sampler_desc sd = r->nd->sampler;
    sd.temperature = run_temperature(&sd);
    if (m40__ref_sample(&sd, B, V, l->data, hist, W,
                        p ? (const int32_t *)p->data : NULL, r->out->data) != 0)
        return m40__err(ctx, M40_ERR_OOM_HOST, "%s: no memory for the sampler's row buffers "
                        "(%lld logits)", r->fn, (long long)V);
    return M40_OK;
}

#ifdef M40_HAVE_CUDA
static m40_status sample_workspace(const m40__op_call *c, const m40_tensor_desc *out,
                                   int sm_count, uint64_t *bytes) {
    (void)out, (void)sm_count;
    /* B·V < 2^62 / 4: the logits tensor exists */
    const m40_sampler_desc *s = &c->nd->sampler;
    *bytes = m40k_sample_scratch(c->in[0]->shape[0], c->in[0]->shape[1], run_temperature(s),
                                 c->in[1] != NULL, s->repetition_penalty);
    return M40_OK;
}

static m40_status sample_gpu(m40_ctx *ctx, const m40__op_run *r) {
    const m40_tensor *l = r->in[0], *h = r->in[1], *p = r->in[2];
    const m40_sampler_desc *s = &r->nd->sampler;
    m40k_sample_args a = {
        .logits = l->data, .history = h ? h->data : NULL, .pos = p ? p->data : NULL,
        .out = r->out->data, .guard = ctx->guard, .B = l->desc.shape[0],
        .W = h ? h->desc.shape[1] : 0, .V = (int)l->desc.shape[1], .top_k = s->top_k,
        .temperature = run_temperature(s), .top_p = s->top_p, .min_p = s->min_p,
        .penalty = s->repetition_penalty, .seed = s->seed};
    uint64_t ws = m40k_sample_scratch(a.B, a.V, a.temperature, h != NULL, s->repetition_penalty);
    if (ws) { /* the z rows (when sampling or penalizing), then the chunk summaries */
        const uint64_t rows = m40k_sample_rows(a.B, a.V, a.temperature, h != NULL,
                                               s->repetition_penalty);
        void *wsp = NULL;
        m40_status st = m40__cuda_workspace(ctx, (size_t)ws, &wsp);
        if (st != M40_OK) return st;
        a.scratch = rows ? wsp : NULL;
        a.chunks = (char *)wsp + rows;
    }
    if (h) ctx->guard_armed = true; /* the kernel checks each history id */
    return m40__launched(ctx, m40k_sample(ctx->stream, &a), r->fn);
}
#define SAMPLE_WORKSPACE .workspace = sample_workspace,
#else
#define SAMPLE_WORKSPACE
#endif

const m40__op_def m40__op_sample = {
    .op = M40_OP_SAMPLE, .name = "sample", .inplace = 0, .min_in = 1, .max_in = 3,
    .in_names = {"logits", "history", "pos"}, .out_name = "out", .rule = sample_rule,
    SAMPLE_WORKSPACE .run_check = sample_run_check, .run_cpu = sample_cpu,
    M40__GPU(sample_gpu)};

m40_status m40_sample(m40_ctx *ctx, const m40_sampler_desc *d, const m40_tensor *logits,
                      const m40_tensor *history, const m40_tensor *pos, m40_tensor *out) {
    if (!d) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_sample: d is NULL");
    if (d->struct_size < sizeof *d) /* before copying fields this libm40 would read */
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_sample: d->struct_size is %zu, this "
                        "libm40 needs %zu (call m40_sampler_desc_init)", d->struct_size, sizeof *d);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SAMPLE);
    nd.sampler = *d;
    nd.ninputs = 3;
    const m40_tensor *in[3] = {logits, history, pos};
    return m40__op_eager(ctx, "m40_sample", &nd, in, out, NULL);
}
