/* m40-bench chatglm2 (issue 17): a ChatGLM2-6B-shaped model with random
** weights (m40_chatglm2_graph, random_weights), per weight format:
**   prefill  P tokens in one graph run (P = 128, 512, 2048): tokens/s, and
**            GFLOP/s counting 2·(params - embedding)·P + the causal
**            attention's 2·P²·H·D per layer
**   decode   one token at context N (--sizes, default 128,1024,8192), the
**            decode graph captured and replayed: tokens/s, and the bytes it
**            must read (every weight but the embedding table, plus the KV
**            cache up to N) per second against a same-run device copy: the
**            decode step's fraction of its bandwidth bound
** plus the graph's nodes per token and its planned device memory, and on a
** GPU the decode step's read chain: the same bytes read by one plain
** streaming kernel per kernel of the step that must read them (each
** linear's weight, each layer's K and V up to N, the output layer), in the
** step's order, captured in a CUDA graph: the fastest this GPU reads those
** bytes through a chain of dependent kernels. The M40
** projection is bytes at 288 GB/s (labelled). --cpu: a 2-layer model of
** ChatGLM2's head geometry on the CPU reference (a smoke test of the
** harness, not a measurement).
** Environment: M40_BENCH_GLM_FORMATS (e.g. "int4,fp16": only those),
** M40_BENCH_GLM_NO_CHAIN=1 (no read chain), M40_BENCH_GLM_FLOOR=1 (also the
** "floor chain": the read chain with each weight's least sm_52 GEMV arithmetic,
** kernels/bench_read.h's m40k_bench_floor; measured even with NO_CHAIN), M40_BENCH_GLM_PREFILL=0 (no prefill) or a list of prompt lengths (e.g.
** "512"), M40_BENCH_GLM_PROFILE=1 (one more
** replay of each decode graph inside cudaProfilerStart/Stop, for
** `ncu --profile-from-start off`: the step's kernels, one by one),
** M40_ATTN_DECODE_VARIANT=N (the decode attention kernel, kernels/attention.h's
** decode_variant, for an A/B of the whole step), M40_BENCH_GLM_FUSE=MASK (the
** graphs' fusions, lib/internal.h's M40__FUSE_* bits; 0: none, the unfused
** graph, for an A/B), M40_BENCH_GLM_SMALLV2=0 (int4's small GEMVs on v3,
** kernels/quant.h's m40k_quant_gemv_small_v2, for an A/B), M40_BENCH_GLM_SKIP=0/1/2
** (decode attention's empty splits: 0 all run and the combine reads them
** all, 1 the default, 2 v5 and v6 skip too, the rule until session 28;
** kernels/attention.h's m40k_attn_skip_empty, for an A/B), M40_BENCH_GLM_FUSE_ROPE=0
** (the attention node's RoPE + append as their own launch, m40k_attn_fuse_rope),
** M40_BENCH_GLM_FUSE_COMBINE=1 (the decode splits' combine inside the tile
** kernel, m40k_attn_fuse_combine; off by default: slower, session 14),
** M40_BENCH_GLM_WARP_PV=1 (decode attention's P·V split over the warps,
** m40k_attn_warp_pv), M40_BENCH_GLM_ROWS8=1 (decode attention in blocks of 8
** query rows, m40k_attn_rows8), M40_BENCH_GLM_SPLITS=N (decode attention in at
** most N splits, 0 the rule; lib/ops/attention.c's m40__attn_decode_max_splits),
** M40_BENCH_GLM_V5WAYS=N (decode v5's ways, 1..8, folded in the block: no
** attn_combine; 0 none, -1 the rule; m40k_attn_shape::v5_ways),
** M40_BENCH_GLM_V5WAYS_KEYS=N (the ways under key bounds <= N, also past v5's
** edge where v6 runs; 0 the rule: 512, or 128 on a cc 5.x card),
** M40_BENCH_GLM_V5WSPLITS=N (the ways' splits of the keys, partials folded by
** attn_combine; -1 the rule, 0 none; m40k_attn_shape::v5_wsplits),
** M40_BENCH_GLM_SHORT_KEYS=N (decode v5 under key bounds <= N, v6 past it; 0
** the device's: 128 on a cc 5.x card, else 512),
** M40_BENCH_GLM_V2WHOLE=-1/0/1 / M40_BENCH_GLM_SMALLV2_Q8=0 (kernels/quant.h's v2
** knobs: int4's small GEMVs with x staged whole (-1: when EZ); int8's back on v3),
** M40_BENCH_GLM_V2EZ=0/1/2 (batch-1 v2 GEMVs with the exponent-zero decode, 2 chunked too,
** m40k_quant_gemv_v2_ez), M40_BENCH_GLM_Q4SPLIT=1 (int4's large-K GEMV on v3
** split-K, m40k_quant_gemv_q4_split), M40_BENCH_GLM_V2DEEP=2 (two chunks in flight, ez whole), M40_BENCH_GLM_V2R1=1 (ez whole at R 1 in
** 16-warp blocks, m40k_quant_gemv_v2_r1),
** M40_BENCH_GLM_V2DEEP=0/1 (batch-1 v2 GEMVs with a ring of four chunks of
** weights in flight, m40k_quant_gemv_v2_deep), M40_BENCH_GLM_V2KS=1/2/4 (a
** row's K over that many warps in the batch-1 v2-whole GEMVs, int4's small
** shapes then staged whole; m40k_quant_gemv_v2_ks), M40_BENCH_GLM_V2PASS=0/1/2/3
** (dense_4h_to_h: 0 back on the chunked staging / int8's split-K, 1 v2 with
** x staged in 4096-column passes, 2 the same with int4's exponent-zero decode
** (the default), 3 int8's too; m40k_quant_gemv_v2_pass), M40_BENCH_GLM_PASSDEPTH=0/1/4
** (int4's passes GEMV: 0 the rule, a ring of four chunks of weights with row scales; 1 one
** chunk ahead; 4 the ring; m40k_quant_gemv_v2_pass_depth), M40_BENCH_GLM_PASSDB=0/1/2 (that
** GEMV's x double-buffered: 0 the rule, int4's ring and int8; 1 never; 2 int4 one chunk ahead
** too; m40k_quant_gemv_v2_pass_db). */
#include "bench/harness.h"
#include "internal.h" /* m40__attn_decode_variant, m40__chatglm2_fuse */

/* kernels/quant.h's knob (weak: absent from a CPU-only build) */
extern int m40k_quant_gemv_small_v2 __attribute__((weak));
extern int m40k_attn_skip_empty __attribute__((weak));
extern int m40k_attn_fuse_rope __attribute__((weak));
extern int m40k_attn_fuse_combine __attribute__((weak));
extern int m40k_attn_warp_pv __attribute__((weak));
extern int m40k_attn_rows8 __attribute__((weak));
extern int m40k_quant_gemv_v2_whole __attribute__((weak));
extern int m40k_quant_gemv_small_v2_q8 __attribute__((weak));
extern int m40k_quant_gemv_v2_deep __attribute__((weak));
extern int m40k_quant_gemv_v2_ks __attribute__((weak));
extern int m40k_quant_gemv_v2_ez __attribute__((weak));
extern int m40k_quant_gemv_v2_pass __attribute__((weak));
extern int m40k_quant_gemv_v2_pass_depth __attribute__((weak));
extern int m40k_quant_gemv_v2_pass_db __attribute__((weak));
extern int m40k_quant_gemv_q4_split __attribute__((weak));
extern int m40k_quant_gemv_v2_r1 __attribute__((weak));

#include <m40/models.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

typedef struct glm_arg {
    m40_graph *g;
} glm_arg;

static m40_status run_graph(bench_env *e, void *arg) {
    (void)e;
    return m40_graph_run(((glm_arg *)arg)->g);
}

/* Sets a graph's ids (all 1) and positions (p0, p0+1, ...). */
static m40_status set_inputs(m40_ctx *c, m40_graph *g, const m40_chatglm2_info *inf, int T,
                             int p0) {
    int32_t *buf = malloc((size_t)T * 2 * sizeof *buf);
    if (!buf) return M40_ERR_OOM_HOST;
    for (int i = 0; i < T; i++) buf[i] = 1 + i % 1000, buf[T + i] = p0 + i;
    m40_tensor *ti, *tp;
    m40_status st;
    if ((st = m40_graph_get_tensor(g, inf->input_ids, &ti)) == M40_OK &&
        (st = m40_graph_get_tensor(g, inf->position, &tp)) == M40_OK &&
        (st = m40_tensor_upload(c, ti, buf, (size_t)T * 4)) == M40_OK)
        st = m40_tensor_upload(c, tp, buf + T, (size_t)T * 4);
    free(buf);
    return st;
}

/* The weight bytes a token reads: the weights region less the embedding
** table (one row of it is read). */
static double weight_bytes_read(const m40_chatglm2_info *inf, m40_wformat f) {
    const m40_chatglm2_config *c = &inf->config;
    double emb = (double)c->vocab * c->hidden * (f == M40_WFMT_FP32 ? 4 : 2);
    return (double)inf->plan.region_bytes[M40_REGION_WEIGHTS] - emb;
}

/* The same-run device copy (measure_copy's 256 MiB), 0 on a CPU. */
static double copy_gbs(bench_env *e) {
    for (int i = e->nres - 1; i >= 0; i--)
        if (!strcmp(e->res[i].workload, "copy")) return e->res[i].value;
    return 0;
}

typedef struct copy_pair {
    m40_tensor *src, *dst;
} copy_pair;

static m40_status copy_op(bench_env *e, void *arg) {
    copy_pair *c = arg;
    return m40_tensor_copy(e->ctx, c->dst, c->src);
}

/* A 256 MiB m40_tensor_copy, timed like every result: the bandwidth the
** decode step is held against. */
static void measure_copy(bench_env *e) {
    if (!e->info.is_gpu) return;
    int64_t n[1] = {256 << 18};
    copy_pair c = {NULL, NULL};
    m40__bench_result *r = NULL;
    if (m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &c.src) == M40_OK &&
        m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &c.dst) == M40_OK &&
        m40_fill_random(e->ctx, 3, M40_RANDOM_UNIFORM, -1, 1, c.src) == M40_OK &&
        (r = new_result(e, "copy", "m40_tensor_copy", "256MiB", "GB/s"))) {
        r->work = 2.0 * (double)m40_tensor_get_nbytes(c.src);
        if (measure(e, copy_op, &c, r) == 0 && e->text) print_result(r);
    }
    m40_tensor_destroy(c.src);
    m40_tensor_destroy(c.dst);
}

/* The step's read chain at context N (see the top): 5 reads a layer and
** the output layer's, from the decode graph's own tensors. */
typedef struct chain_arg {
    m40__read_chain *c;
} chain_arg;

static m40_status run_chain(bench_env *e, void *arg) {
    return m40__bench_read_chain_run(e->ctx, ((chain_arg *)arg)->c);
}

/* wbits: NULL, or the floor chain's reading of the tensor: 16 for fp16;
** qbits (the run's format: 4 int4 and int4g128, 8 int8) for the I8 tensors
** that hold int8 codes or int4 pairs (the Q4 / Q8 dtypes name a quantized
** format, not a tensor's dtype). 0 if the floor cannot read it (any other
** dtype): the tensor is then refused, never read plainly in its place. */
static int chain_tensor(m40_graph *g, const char *name, const void **p, size_t *bytes, int *wbits,
                        int qbits) {
    int id;
    m40_tensor *t;
    if (m40_graph_find(g, name, &id) != M40_OK || m40_graph_get_tensor(g, id, &t) != M40_OK)
        return 0;
    *p = m40_tensor_get_data(t);
    *bytes = m40_tensor_get_nbytes(t);
    if (wbits) {
        const m40_dtype dt = m40_tensor_get_desc(t)->dtype;
        *wbits = dt == M40_DTYPE_F16 ? 16 : dt == M40_DTYPE_I8 ? qbits : 0;
        if (!*wbits) return 0;
    }
    return *p != NULL;
}

/* floor: each linear's weight (and the output layer's) through
** m40k_bench_floor instead of the plain read: the "floor chain", the least
** an sm_52 GEMV can take in the step's order (K and V stay plain reads);
** not measured if any of them would be a plain read (session 34: the int4
** and int8 codes, I8 tensors, were read plainly until then) */
static void measure_chain(bench_env *e, m40_graph *dg, const m40_chatglm2_config *c, int N,
                          m40_wformat f, const m40__bench_result *step, int floor) {
    const char *fn = m40_wformat_name(f);
    const int qbits = f == M40_WFMT_INT8 ? 8 : f == M40_WFMT_INT4 || f == M40_WFMT_INT4G128 ? 4 : 0;
    const int n = 5 * c->layers + 1;
    m40__read_range *r = calloc((size_t)n, sizeof *r);
    m40_tensor *sink = NULL;
    int64_t one = 1;
    int ok = r && m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, &one, &sink) == M40_OK;
    const size_t kv = (size_t)N * c->kv_heads * c->head_dim * 2; /* fp16 K (or V) rows 0..N-1 */
    static const char *const lin[4] = {"self_attention.query_key_value", "self_attention.dense",
                                       "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"};
    double bytes = 0;
    for (int l = 0; ok && l < c->layers; l++) {
        char name[160];
        m40__read_range *q = r + 5 * l;
        for (int i = 0; ok && i < 4; i++) { /* qkv, [attention], dense, h_to_4h, 4h_to_h */
            m40__read_range *x = q + (i == 0 ? 0 : i + 1);
            snprintf(name, sizeof name, "transformer.encoder.layers.%d.%s.weight", l, lin[i]);
            ok = chain_tensor(dg, name, &x->p0, &x->bytes0, floor ? &x->wbits : NULL, qbits);
        }
        size_t kb, vb;
        snprintf(name, sizeof name, "transformer.encoder.layers.%d.k_cache", l);
        ok = ok && chain_tensor(dg, name, &q[1].p0, &kb, NULL, 0);
        snprintf(name, sizeof name, "transformer.encoder.layers.%d.v_cache", l);
        ok = ok && chain_tensor(dg, name, &q[1].p1, &vb, NULL, 0) && kb >= kv && vb >= kv;
        q[1].bytes0 = q[1].bytes1 = kv;
    }
    ok = ok && chain_tensor(dg, "transformer.output_layer.weight", &r[n - 1].p0, &r[n - 1].bytes0,
                            floor ? &r[n - 1].wbits : NULL, qbits);
    for (int i = 0; ok && i < n; i++) bytes += (double)r[i].bytes0 + (double)r[i].bytes1;
    m40__read_chain *ch = NULL;
    if (!ok || m40__bench_read_chain_new(e->ctx, r, n, m40_tensor_get_data(sink), &ch) != M40_OK) {
        fprintf(stderr, "m40-bench chatglm2 %s: %s chain not measured%s%s\n", fn, floor ? "floor" : "read",
                ok ? ": " : " (a tensor of the decode graph not found, or a weight the floor cannot read)",
                ok ? m40_errmsg(e->ctx) : "");
    } else {
        char label[64];
        snprintf(label, sizeof label, "%s %s chain ctx %d", fn, floor ? "floor" : "read", N);
        m40__bench_result *rr = new_result(e, "chatglm2", floor ? "floor chain" : "read chain", label, "GB/s");
        chain_arg a = {ch};
        if (rr) {
            rr->batch = N;
            rr->work = bytes;
            if (step->baseline_value > 0) {
                snprintf(rr->baseline, sizeof rr->baseline, "device copy");
                rr->baseline_value = step->baseline_value;
            }
            if (measure(e, run_chain, &a, rr) != 0) {
                e->failed = 1;
            } else if (e->text) {
                print_result(rr);
                printf("      %d dependent %s of %.3f GB (the step reads %.3f GB): %.3f ms; "
                       "the decode step takes %.3fx the chain (%.3f ms)\n", n,
                       floor ? "reads with a GEMV's least arithmetic a weight (x in registers, no staging, "
                               "no reduction)" : "reads", bytes / 1e9,
                       step->work / 1e9, rr->t_ms.median, step->t_ms.median / rr->t_ms.median,
                       step->t_ms.median);
            }
        }
    }
    m40__bench_read_chain_free(ch);
    m40_tensor_destroy(sink);
    free(r);
}

static void one_format(bench_env *e, m40_wformat f, const m40_chatglm2_config *cfg,
                       const int64_t (*ctxs)[3], int nctx, const int *prefills, int npre) {
    int64_t L = 0;
    for (int i = 0; i < nctx; i++) L = ctxs[i][0] > L ? ctxs[i][0] : L;
    for (int i = 0; i < npre; i++) L = prefills[i] > L ? prefills[i] : L;
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.config = *cfg;
    d.weights = f;
    d.ctx = L;
    d.phase = M40_PHASE_DECODE;
    d.random_weights = 1;
    d.seed = 17;
    m40_chatglm2_info di;
    m40_graph *dg = NULL;
    const char *fn = m40_wformat_name(f);
    /* device memory the model takes, against its plan (issue 17: within 5%) */
    m40_device_info before = {0}, after = {0};
    if (e->info.is_gpu) (void)m40_ctx_sync(e->ctx), (void)m40_ctx_get_info(e->ctx, &before);
    if (m40_chatglm2_graph(e->ctx, &d, NULL, &dg, &di) != M40_OK) {
        fprintf(stderr, "m40-bench chatglm2 %s: %s\n", fn, m40_errmsg(e->ctx));
        e->failed = 1;
        return;
    }
    const double gbs = copy_gbs(e), wbytes = weight_bytes_read(&di, f);
    const m40_chatglm2_config *c = &di.config;
    const double kv_per_tok = 2.0 * c->layers * c->kv_heads * c->head_dim * 2;
    if (e->info.is_gpu) (void)m40_ctx_sync(e->ctx), (void)m40_ctx_get_info(e->ctx, &after);
    if (e->text) {
        printf("chatglm2 %s: %d layers, weights %.2f GB (%.2f GB read per token), kv %.1f KiB "
               "per token, %d graph nodes per decode step, planned %.2f GB\n", fn, c->layers,
               di.plan.region_bytes[M40_REGION_WEIGHTS] / 1e9, wbytes / 1e9, kv_per_tok / 1024,
               m40_graph_get_node_count(dg), di.plan.total_bytes / 1e9);
        if (e->info.is_gpu && before.free_bytes >= after.free_bytes)
            printf("      device memory taken by the model: %.3f GB = %.3fx the plan (cudaMemGetInfo "
                   "before and after building it)\n", (before.free_bytes - after.free_bytes) / 1e9,
                   (double)(before.free_bytes - after.free_bytes) / (double)di.plan.total_bytes);
    }
    /* decode at each context: positions N-1, the graph captured once */
    for (int i = 0; i < nctx; i++) {
        int N = (int)ctxs[i][0];
        char label[64];
        snprintf(label, sizeof label, "%s decode ctx %d", fn, N);
        glm_arg a = {dg};
        m40__bench_result *r = new_result(e, "chatglm2", "m40 decode", label, "GB/s");
        if (!r) continue;
        r->batch = N;
        r->work = wbytes + kv_per_tok * N;
        if (gbs > 0) {
            snprintf(r->baseline, sizeof r->baseline, "device copy");
            r->baseline_value = gbs;
        }
        /* the key bound a caller that knows its context gives (chatglm2's
        ** glm_step_batch); M40_BENCH_GLM_KEYS=0: none, for an A/B */
        const char *kenv = getenv("M40_BENCH_GLM_KEYS");
        if (m40_graph_set_attention_keys(dg, kenv && !strcmp(kenv, "0") ? 0 : N) != M40_OK ||
            set_inputs(e->ctx, dg, &di, 1, N - 1) != M40_OK || m40_graph_run(dg) != M40_OK ||
            (e->info.is_gpu && m40_graph_capture(dg, 1) != M40_OK) ||
            measure(e, run_graph, &a, r) != 0) {
            fprintf(stderr, "m40-bench chatglm2 %s: %s\n", label, m40_errmsg(e->ctx));
            e->failed = 1;
            continue;
        }
        if (env_on("M40_BENCH_GLM_PROFILE") && e->info.is_gpu &&
            (m40__bench_profiler(e->ctx, 1) != M40_OK || m40_graph_run(dg) != M40_OK ||
             m40__bench_profiler(e->ctx, 0) != M40_OK))
            fprintf(stderr, "m40-bench chatglm2 %s: profile: %s\n", label, m40_errmsg(e->ctx));
        if (e->text && i == 0 && e->info.is_gpu)
            printf("      launches per token: %d (the captured decode step's CUDA graph nodes; "
                   "%d graph nodes, %d layers)\n", m40_graph_get_launch_count(dg),
                   m40_graph_get_node_count(dg), c->layers);
        if (e->info.is_gpu) m40_graph_capture(dg, 0);
        if (e->text) {
            print_result(r);
            printf("      %.1f tokens/s (median %.3f ms per token)%s; M40 projection (bytes at "
                   "288 GB/s, not a measurement): %.1f tokens/s\n", 1e3 / r->t_ms.median,
                   r->t_ms.median, gbs > 0 ? "" : " (no copy baseline)",
                   288e9 / r->work);
        }
        if (e->info.is_gpu && !env_on("M40_BENCH_GLM_NO_CHAIN"))
            measure_chain(e, dg, c, N, f, r, 0);
        if (e->info.is_gpu && env_on("M40_BENCH_GLM_FLOOR"))
            measure_chain(e, dg, c, N, f, r, 1);
    }
    /* prefill of P tokens, one graph per P sharing the decode graph's weights */
    for (int i = 0; i < npre; i++) {
        int P = prefills[i];
        m40_chatglm2_desc pd = d;
        pd.phase = M40_PHASE_PREFILL;
        pd.chunk = P;
        pd.weights_from = dg;
        pd.random_weights = 0;
        m40_chatglm2_info pi;
        m40_graph *pg = NULL;
        char label[64];
        snprintf(label, sizeof label, "%s prefill %d", fn, P);
        if (m40_chatglm2_graph(e->ctx, &pd, NULL, &pg, &pi) != M40_OK ||
            set_inputs(e->ctx, pg, &pi, P, 0) != M40_OK) {
            fprintf(stderr, "m40-bench chatglm2 %s: %s\n", label, m40_errmsg(e->ctx));
            e->failed = 1;
            m40_graph_destroy(pg);
            continue;
        }
        m40__bench_result *r = new_result(e, "chatglm2", "m40 prefill", label, "GFLOP/s");
        glm_arg a = {pg};
        if (r) {
            /* multiply-adds per token: the block linears, and the output
            ** layer on the last row only */
            double p = (double)c->layers * ((double)(c->heads + 2 * c->kv_heads) * c->head_dim * c->hidden +
                                            (double)c->heads * c->head_dim * c->hidden +
                                            3.0 * c->ffn * c->hidden) +
                       (double)c->vocab * c->hidden / P; /* the output layer runs on one row */
            r->batch = P;
            r->work = 2.0 * p * P + 2.0 * (double)P * P * c->heads * c->head_dim * c->layers;
            if (measure(e, run_graph, &a, r) != 0) e->failed = 1;
            else if (e->text) {
                print_result(r);
                printf("      %.0f tokens/s\n", P / (r->t_ms.median * 1e-3));
            }
        }
        m40_graph_destroy(pg);
    }
    m40_graph_destroy(dg);
}

int run_chatglm2(bench_env *e) {
    int64_t ctxs[M40B_MAX_SIZES][3];
    int nctx = parse_sizes(e->o->sizes, ctxs, M40B_MAX_SIZES);
    for (int i = 0; i < nctx; i++)
        if (ctxs[i][0] > (1 << 20)) nctx = -1;
    if (nctx <= 0) {
        fprintf(stderr, "m40-bench chatglm2: --sizes takes contexts in 1..2^20, e.g. 128,1024\n");
        return 2;
    }
    m40_chatglm2_config cfg;
    m40_chatglm2_config_6b(&cfg);
    static const int gpu_prefill[] = {128, 512, 2048}, cpu_prefill[] = {16};
    static const m40_wformat all[] = {M40_WFMT_FP16, M40_WFMT_INT8, M40_WFMT_INT4,
                                      M40_WFMT_INT4G128};
    int nf = 4, np = 3;
    const int *pre = gpu_prefill;
    if (!e->info.is_gpu) { /* the CPU reference: a tiny model, one format */
        cfg.layers = 2, cfg.hidden = 128, cfg.ffn = 200, cfg.heads = 4, cfg.vocab = 300;
        nf = 1, np = 1, pre = cpu_prefill;
    }
    const char *dv = getenv("M40_ATTN_DECODE_VARIANT");
    if (dv && *dv) {
        char *end;
        const long v = strtol(dv, &end, 10); /* digits only, no leading zero, 0..10 */
        if (dv[0] < '0' || dv[0] > '9' || *end || v > 10 || (dv[0] == '0' && dv[1])) {
            fprintf(stderr, "m40-bench chatglm2: M40_ATTN_DECODE_VARIANT is 0..10 "
                            "(kernels/attention.h's decode_variant), not '%s'\n", dv);
            return 2;
        }
        m40__attn_decode_variant = (int)v;
        if (e->text) printf("decode attention variant %d (M40_ATTN_DECODE_VARIANT)\n", m40__attn_decode_variant);
    }
    /* the kernels' A/B knobs (weak: NULL in a CPU-only build) */
    /* count: the knob takes the number as it is (else 0 or 1) */
    const struct { const char *env; int *knob; const char *what; int count; } knobs[] = {
        {"M40_BENCH_GLM_SMALLV2", &m40k_quant_gemv_small_v2, "int4 small-shape GEMV v2", 0},
        {"M40_BENCH_GLM_SKIP", &m40k_attn_skip_empty, "decode attention skips empty splits (0 none, 1 the tile kernels, 2 v5 and v6 too)", 1},
        {"M40_BENCH_GLM_FUSE_ROPE", &m40k_attn_fuse_rope, "decode RoPE + append fused into the attention kernel", 0},
        {"M40_BENCH_GLM_FUSE_COMBINE", &m40k_attn_fuse_combine, "decode splits combined inside the attention kernel", 0},
        {"M40_BENCH_GLM_WARP_PV", &m40k_attn_warp_pv, "decode attention's P.V split over the warps", 0},
        {"M40_BENCH_GLM_ROWS8", &m40k_attn_rows8, "decode attention in blocks of 8 query rows", 0},
        {"M40_BENCH_GLM_V6", &m40__attn_v6, "decode v6 where the tile kernel ran (past a 512-key bound, or no bound)", 0},
        {"M40_BENCH_GLM_SPLITS", &m40__attn_decode_max_splits, "decode attention's splits at most (0 the rule)", 1},
        {"M40_BENCH_GLM_V5WAYS", &m40__attn_v5_ways, "decode v5's ways, folded in the block (-1 the rule, 0 its splits, 1..8 kernels/attention.h)", 1},
        {"M40_BENCH_GLM_V5WAYS_KEYS", &m40__attn_v5_ways_keys, "decode v5's ways under key bounds <= N, also past v5's edge (0 the rule's: 512, 128 on cc 5.x)", 1},
        {"M40_BENCH_GLM_V5WSPLITS", &m40__attn_v5_wsplits, "decode v5's ways' splits of the keys, folded by attn_combine (-1 the rule, 0 none)", 1},
        {"M40_BENCH_GLM_SHORT_KEYS", &m40__attn_short_keys, "decode v5 under key bounds <= N, v6 past it (0 the device's: 128 on cc 5.x, else 512)", 1},
        {"M40_BENCH_GLM_SHARES", &m40__attn_prefill_splits, "prefill attention's key shares (0 the rule, 1 none, 2..4)", 1},
        {"M40_BENCH_GLM_V2WHOLE", &m40k_quant_gemv_v2_whole, "int4 small GEMVs, x staged whole (-1 auto)", 1},
        {"M40_BENCH_GLM_V2EZ", &m40k_quant_gemv_v2_ez, "batch-1 v2 GEMVs, exponent-zero decode", 1},
        {"M40_BENCH_GLM_Q4SPLIT", &m40k_quant_gemv_q4_split, "int4 batch-1 GEMVs with large K on v3 split-K", 0},
        {"M40_BENCH_GLM_V2R1", &m40k_quant_gemv_v2_r1, "batch-1 v2 ez-whole GEMVs at R 1 in 16-warp blocks", 0},
        {"M40_BENCH_GLM_SMALLV2_Q8", &m40k_quant_gemv_small_v2_q8, "int8 small GEMVs on v2", 0},
        {"M40_BENCH_GLM_V2DEEP", &m40k_quant_gemv_v2_deep, "batch-1 v2 GEMVs with four chunks of weights in flight", 1},
        {"M40_BENCH_GLM_V2KS", &m40k_quant_gemv_v2_ks, "batch-1 v2-whole GEMVs, warps a row's K is split over (1, 2, 4)", 1},
        {"M40_BENCH_GLM_L2HINT", &m40__l2_hint, "the graph's L2 hints (0 none, 1 the norms' weights)", 1},
        {"M40_BENCH_GLM_V2PASS", &m40k_quant_gemv_v2_pass, "batch-1 large-K GEMVs on v2, x staged in passes (2: int4 EZ, 3: int8 too)", 1},
        {"M40_BENCH_GLM_PASSDB", &m40k_quant_gemv_v2_pass_db, "x double-buffered in passes (0 the rule: int4's ring and int8; 1 never; 2 int4 one chunk ahead too)", 1},
        {"M40_BENCH_GLM_PASSDEPTH", &m40k_quant_gemv_v2_pass_depth, "int4's passes GEMV: weights one chunk ahead (1), a ring of four (4), or the rule (0: the ring with row scales)", 1}};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const char *v = getenv(knobs[i].env);
        if (!v || !*v || !knobs[i].knob) continue;
        *knobs[i].knob = knobs[i].count ? atoi(v) : atoi(v) != 0;
        if (e->text) printf("%s: %d (%s)\n", knobs[i].what, *knobs[i].knob, knobs[i].env);
    }
    const char *fz = getenv("M40_BENCH_GLM_FUSE"); /* lib/internal.h's M40__FUSE_* bits */
    if (fz && *fz) {
        char *end;
        unsigned long f = strtoul(fz, &end, 0);
        if (*end || f > 255) {
            fprintf(stderr, "m40-bench chatglm2: M40_BENCH_GLM_FUSE is a bit mask 0..255 "
                            "(lib/internal.h's M40__FUSE_*), not '%s'\n", fz);
            return 2;
        }
        m40__chatglm2_fuse = (unsigned)f;
        if (e->text) printf("ChatGLM2 fusions 0x%x (M40_BENCH_GLM_FUSE)\n", m40__chatglm2_fuse);
    }
    const char *only = getenv("M40_BENCH_GLM_FORMATS");
    const char *pv = getenv("M40_BENCH_GLM_PREFILL");
    static int pre_env[8];
    if (pv && !strcmp(pv, "0")) {
        np = 0;
    } else if (pv && *pv) { /* prompt lengths, 1..8192, at most 8 */
        int n = 0, ok = 1;
        for (const char *q = pv; ok && *q;) {
            char *end;
            long v = strtol(q, &end, 10);
            ok = end != q && v >= 1 && v <= 8192 && n < 8 && (*end == ',' || !*end);
            if (ok) pre_env[n++] = (int)v;
            q = *end == ',' ? end + 1 : end;
        }
        if (!ok || n == 0) {
            fprintf(stderr, "m40-bench chatglm2: M40_BENCH_GLM_PREFILL is 0 or up to 8 prompt "
                            "lengths in 1..8192, e.g. 128,512; not '%s'\n", pv);
            return 2;
        }
        if (e->info.is_gpu) pre = pre_env, np = n; /* the CPU reference keeps its 16 */
    }
    int ran = 0;
    measure_copy(e);
    for (int i = 0; i < nf; i++) {
        if (only && *only) { /* a comma list of format names */
            const char *n = m40_wformat_name(all[i]), *p = only;
            size_t len = strlen(n);
            int hit = 0;
            while (p && !hit) {
                hit = !strncmp(p, n, len) && (p[len] == ',' || !p[len]);
                p = strchr(p, ',');
                if (p) p++;
            }
            if (!hit) continue;
        }
        one_format(e, all[i], &cfg, (const int64_t (*)[3])ctxs, nctx, pre, np);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "m40-bench chatglm2: M40_BENCH_GLM_FORMATS '%s' names none of fp16, int8, "
                        "int4, int4g128%s\n", only ? only : "", e->info.is_gpu ? "" : " (the CPU "
                        "reference runs fp16 only)");
        return 2;
    }
    return 0;
}
