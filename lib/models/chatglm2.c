/* The ChatGLM2 builder (include/m40/models.h): one declaration of the graph
** that m40-plan plans and the chat program runs. With a weights file every
** tensor is checked against the declared shapes, converted (f16 <-> f32,
** the bias to f32) or quantized (int8/int4, per row, f16 scales: the
** official recipe) and handed to m40_graph_set_data; without one the same
** tensors are declared with no data. */
#include "build.h"
#include "../half.h"
#include "m40/comm.h"
#include "m40/quant.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char FN[] = "m40_chatglm2_graph";

unsigned m40__chatglm2_fuse = M40__FUSE_ROPE | M40__FUSE_NORM | M40__FUSE_GLU;

#define MAX_BATCH (1 << 20)
#define MAX_CTX ((int64_t)1 << 22)
#define MAX_DIM (1 << 20) /* hidden, ffn, vocab; heads and head_dim less */
#define MAX_LAYERS 1024

void m40_chatglm2_config_6b(m40_chatglm2_config *c) {
    if (!c) return;
    *c = (m40_chatglm2_config){.layers = 28, .hidden = 4096, .ffn = 13696, .heads = 32,
                               .kv_heads = 2, .head_dim = 128, .vocab = 65024, .eps = 1e-5f,
                               .rope_theta = 10000.0f};
}

void m40_chatglm2_desc_init(m40_chatglm2_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->weights = M40_WFMT_FP16;
    d->batch = 1;
    d->ctx = 8192;
    d->chunk = 512;
    d->phase = M40_PHASE_PREFILL;
    m40_chatglm2_config_6b(&d->config);
}

/* The builder's state: the graph, the file and what was taken from it. */
typedef struct gb {
    m40__mb b;
    m40_chatglm2_config c;
    m40_st_file *const *files; /* the checkpoint: one file or its shards; NULL: none */
    int nfiles;
    m40_st_file *w;          /* files[0], or NULL (what "with a file" tests) */
    int l0, l1;              /* the blocks declared: [l0, l1) (a pipeline stage) */
    m40_graph *from;         /* weights_from: bind its weights, NULL: none */
    m40_ctx *cpu;            /* for m40_quantize (host tensors), made on need */
    char **used;             /* [file][tensor]: taken by the model */
    const m40_chatglm2_desc *d; /* for the progress callback */
    uint64_t read_bytes, total_bytes; /* checkpoint bytes taken so far, in all */
    void **bufs;             /* converted host data, alive until m40_graph_alloc */
    int nbufs, capbufs;
    const struct tp_part *part; /* tensor parallelism: the part of the weight being loaded */
} gb;

/* Tensor parallelism: the part of a checkpoint weight [R, K] (or bias [R])
** that this rank holds: up to 3 row ranges, concatenated (query_key_value:
** the rank's query heads, then its key and value groups; dense_h_to_4h:
** its gate rows, then its up rows), or one column range (dense,
** dense_4h_to_h: the rank's input features; their outputs are summed over
** the ranks by an ALLREDUCE node). */
typedef struct tp_part {
    int64_t R, K;            /* the whole tensor */
    int nr;                  /* row ranges; 0: every row */
    int64_t r0[3], rn[3];
    int64_t c0, cn;          /* the column range; cn 0: every column */
} tp_part;

/* The checkpoint row of local row i. */
static int64_t part_row(const tp_part *p, int64_t i) {
    for (int k = 0; k < p->nr; k++) {
        if (i < p->rn[k]) return p->r0[k] + i;
        i -= p->rn[k];
    }
    return i;
}


static int tensor(m40__mb *b, m40_tensor_role role, const char *name, m40_dtype dt, int ndim,
                  int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    const int64_t shape[4] = {d0, d1, d2, d3};
    return m40__mb_tensor(b, role, name, dt, ndim, shape);
}

static void *keep(gb *g, size_t bytes) {
    if (g->nbufs == g->capbufs) {
        int nc = g->capbufs ? 2 * g->capbufs : 64;
        void **nb = realloc(g->bufs, (size_t)nc * sizeof *nb);
        if (!nb) {
            m40__mb_fail(&g->b, M40_ERR_OOM_HOST, "out of host memory");
            return NULL;
        }
        g->bufs = nb;
        g->capbufs = nc;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (p) g->bufs[g->nbufs++] = p;
    else m40__mb_fail(&g->b, M40_ERR_OOM_HOST, "out of host memory (%zu bytes)", bytes);
    return p;
}

/* With weights_from: weight `id` uses the same-named tensor of that graph. */
static void bind_shared(gb *g, int id, const char *name) {
    int fid;
    m40_tensor *t;
    m40_status st;
    if (!g->from || id < 0 || g->b.st != M40_OK) return;
    if (m40_graph_find(g->from, name, &fid) != M40_OK) {
        m40__mb_fail(&g->b, M40_ERR_INVALID_ARG, "weights_from has no tensor '%s' (another "
                     "config or format?)", name);
        return;
    }
    if ((st = m40_graph_get_tensor(g->from, fid, &t)) != M40_OK ||
        (st = m40_graph_bind(g->b.g, id, t)) != M40_OK)
        m40__mb_fail(&g->b, st, "weights_from '%s': %s", name, m40_errmsg(g->b.ctx));
}

/* A tensor of the checkpoint and the file that holds it. */
typedef struct wt {
    m40_st_file *f;
    const m40_st_tensor *t;
} wt;

static wt lookup(gb *g, const char *name) {
    for (int i = 0; i < g->nfiles; i++) {
        const m40_st_tensor *t = m40_st_find(g->files[i], name);
        if (t) return (wt){g->files[i], t};
    }
    return (wt){NULL, NULL};
}

static void mark_used(gb *g, wt x) {
    for (int i = 0; i < g->nfiles; i++)
        if (g->files[i] == x.f) g->used[i][x.t - m40_st_get(x.f, 0)] = 1;
    g->read_bytes += x.t->nbytes;
    if (g->d && g->d->progress)
        g->d->progress(g->d->progress_user, "read", g->read_bytes, g->total_bytes);
}

static const char *metadata(gb *g, const char *key) {
    for (int i = 0; i < g->nfiles; i++) {
        const char *v = m40_st_get_metadata(g->files[i], key);
        if (v) return v;
    }
    return NULL;
}

/* Float tensors of a checkpoint: F32, F16 or BF16 (Hugging Face's). */
static int is_bf16(const m40_st_tensor *t) { return strcmp(t->dtype_name, "BF16") == 0; }
static int is_float(const m40_st_tensor *t) {
    return t->dtype == M40_DTYPE_F32 || t->dtype == M40_DTYPE_F16 || is_bf16(t);
}

/* Element i of a float tensor's (possibly unaligned) bytes. */
static float load_f32(const m40_st_tensor *t, const unsigned char *src, size_t i) {
    if (t->dtype == M40_DTYPE_F32) {
        float f;
        memcpy(&f, src + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, src + 2 * i, 2);
    return is_bf16(t) ? m40__bits_f32((uint32_t)h << 16) : m40__f16_to_f32(h);
}

/* The checkpoint's tensor `name`, F16, BF16 or F32, of exactly this shape;
** marked used. */
static wt file_tensor(gb *g, const char *name, int ndim, const int64_t *shape) {
    if (g->b.st != M40_OK) return (wt){NULL, NULL};
    wt x = lookup(g, name);
    const m40_st_tensor *t = x.t;
    if (!t) {
        m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: '%s' is missing", name);
        return x;
    }
    bool fp = is_float(t);
    bool ok = fp && t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (!ok && t->dtype == M40_DTYPE_I8) {
        m40__mb_fail(&g->b, M40_ERR_DTYPE, "weights: '%s' is quantized (I8, with scales): load "
                     "this checkpoint as int8, int4 or int4g128, the format it was saved in", name);
        return (wt){NULL, NULL};
    }
    if (!ok) {
        char got[96], want[96];
        m40__mb_fail(&g->b, fp ? M40_ERR_SHAPE : M40_ERR_DTYPE,
                     "weights: '%s' is %s %s, expected F16, BF16 or F32 %s", name, t->dtype_name,
                     m40__dims_str(t->ndim, t->shape, got, sizeof got), m40__dims_str(ndim, shape, want, sizeof want));
        return (wt){NULL, NULL};
    }
    mark_used(g, x);
    return x;
}

/* The file tensor's n values as dt (F16 or F32): the file's bytes when the
** dtype matches (set_data copies them), else a converted copy. */
static const void *as_dtype(gb *g, wt x, m40_dtype dt, size_t n) {
    const unsigned char *src = m40_st_get_data(x.f, x.t);
    if (x.t->dtype == dt) return src;
    void *dst = keep(g, n * m40_dtype_size(dt));
    if (!dst) return NULL;
    for (size_t i = 0; i < n; i++) {
        float v = load_f32(x.t, src, i);
        if (dt == M40_DTYPE_F32) ((float *)dst)[i] = v;
        else ((uint16_t *)dst)[i] = m40__f32_to_f16(v);
    }
    return dst;
}

/* A weight: declared; with a file its data set, with weights_from bound. */
static int weight(gb *g, const char *name, m40_dtype dt, int ndim, int64_t d0, int64_t d1) {
    const int64_t shape[2] = {d0, d1};
    int id = m40__mb_weight(&g->b, name, dt, ndim, shape, 0);
    bind_shared(g, id, name);
    if (!g->w || id < 0) return id;
    const tp_part *p = g->part;
    const int64_t whole[2] = {p ? p->R : d0, p ? p->K : d1};
    wt x = file_tensor(g, name, ndim, whole);
    size_t n = (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1);
    const void *data = x.t && !p ? as_dtype(g, x, dt, n) : NULL;
    if (x.t && p && (data = keep(g, n * m40_dtype_size(dt)))) { /* this rank's rows / columns */
        const unsigned char *src = m40_st_get_data(x.f, x.t);
        const int64_t K = ndim > 1 ? p->K : 1, c0 = p->cn ? p->c0 : 0, cols = ndim > 1 ? d1 : 1;
        for (int64_t i = 0, o = 0; i < d0; i++)
            for (int64_t j = 0; j < cols; j++, o++) {
                float v = load_f32(x.t, src, (size_t)(part_row(p, i) * K + c0 + j));
                if (dt == M40_DTYPE_F32) ((float *)data)[o] = v;
                else ((uint16_t *)data)[o] = m40__f32_to_f16(v);
            }
    }
    m40_status st;
    if (data && (st = m40_graph_set_data(g->b.g, id, data, n * m40_dtype_size(dt))) != M40_OK)
        m40__mb_fail(&g->b, st, "%s", m40_errmsg(g->b.ctx));
    return id;
}

/* An int8/int4 weight [N,K] and its f16 scales [N]: the file's own (an
** official quantized checkpoint: `.weight_scale` present) or quantized
** here from its F16/F32 weight. With a tensor-parallel part, the rows are
** taken (or quantized) whole, then the columns cut: the same codes and
** scales as the whole model's. */
static void quantized(gb *g, const char *wn, const char *sn, int bits, int group, int64_t N,
                      int64_t K, int wid, int sid) {
    const tp_part *p = g->part;
    const int64_t RK = p ? p->K : K;                 /* the whole row */
    const int64_t kq = bits == 8 ? RK : (RK + 1) / 2; /* stored bytes per whole row */
    const int64_t ng = group ? (RK + group - 1) / group : 1; /* scales per whole row */
    const int64_t R = p ? p->R : N;                  /* the file's rows */
    wt xs = lookup(g, sn);
    const m40_st_tensor *scale = xs.t;
    m40_status st = M40_OK;
    const unsigned char *qsrc = NULL, *ssrc = NULL;  /* [R, kq] codes, [R, ng] scales */
    int64_t qrows = R;                               /* rows in qsrc (all, or quantized ones) */
    if (scale) {
        wt xq = lookup(g, wn);
        const m40_st_tensor *q = xq.t;
        if (!q) {
            m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: '%s' is missing", wn);
            return;
        }
        bool ok = q->dtype == M40_DTYPE_I8 && q->ndim == 2 && q->shape[0] == R &&
                  q->shape[1] == kq && scale->dtype == M40_DTYPE_F16 && scale->shape[0] == R &&
                  (group ? scale->ndim == 2 && scale->shape[1] == ng : scale->ndim == 1);
        if (!ok) {
            m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: '%s' and '%s' are not an int%d weight "
                         "[%lld, %lld] I8 with F16 scales [%lld%s%lld] (%s)", wn, sn, bits,
                         (long long)R, (long long)kq, (long long)R, group ? ", " : "",
                         group ? (long long)ng : 0LL,
                         group ? "per 128 columns" : "the official quantized layout");
            return;
        }
        mark_used(g, xq);
        mark_used(g, xs);
        qsrc = m40_st_get_data(xq.f, q);
        ssrc = m40_st_get_data(xs.f, scale);
    } else {
        const int64_t shape[2] = {R, RK};
        wt x = file_tensor(g, wn, 2, shape);
        if (!x.t) return;
        if (!g->cpu) {
            m40_ctx_desc cd;
            m40_ctx_desc_init(&cd);
            cd.device = M40_DEVICE_CPU;
            if ((st = m40_ctx_create(&cd, &g->cpu)) != M40_OK) {
                m40__mb_fail(&g->b, st, "a CPU context for quantizing: %s", m40_errmsg(g->cpu));
                return;
            }
        }
        /* this rank's rows, whole: the quantizer reads aligned F32 host tensors */
        qrows = N;
        void *wf = keep(g, (size_t)(N * RK) * 4);
        void *qd = keep(g, (size_t)(N * kq)), *sd = keep(g, (size_t)(N * ng) * 2);
        if (!wf || !qd || !sd) return;
        const unsigned char *src = m40_st_get_data(x.f, x.t);
        for (int64_t i = 0; i < N; i++) {
            int64_t row = p ? part_row(p, i) : i;
            for (int64_t j = 0; j < RK; j++)
                ((float *)wf)[i * RK + j] = load_f32(x.t, src, (size_t)(row * RK + j));
        }
        m40_tensor_desc dw, dq, ds;
        const int64_t ws[2] = {N, RK}, qs[2] = {N, kq}, ss[2] = {N, ng};
        m40_tensor_desc_make(&dw, M40_DTYPE_F32, 2, ws);
        m40_tensor_desc_make(&dq, M40_DTYPE_I8, 2, qs);
        m40_tensor_desc_make(&ds, M40_DTYPE_F16, group ? 2 : 1, ss);
        m40_tensor *tw = NULL, *tq = NULL, *ts = NULL;
        m40_quant_format f = {.wtype = bits == 8 ? M40_DTYPE_Q8 : M40_DTYPE_Q4, .group = group,
                              .scale_dtype = M40_DTYPE_F16};
        if ((st = m40_tensor_wrap(g->cpu, &dw, M40_LOC_HOST, wf, &tw)) ||
            (st = m40_tensor_wrap(g->cpu, &dq, M40_LOC_HOST, qd, &tq)) ||
            (st = m40_tensor_wrap(g->cpu, &ds, M40_LOC_HOST, sd, &ts)) ||
            (st = m40_quantize(g->cpu, &f, tw, tq, ts)))
            m40__mb_fail(&g->b, st, "quantizing '%s': %s", wn, m40_errmsg(g->cpu));
        m40_tensor_destroy(tw);
        m40_tensor_destroy(tq);
        m40_tensor_destroy(ts);
        if (g->b.st != M40_OK) return;
        qsrc = qd;
        ssrc = sd;
    }
    /* the local [N, K] codes and scales: rows (when qsrc holds every row),
    ** then the column range (whole bytes of int4 pairs, whole 128-groups:
    ** checked by the caller). Without a part qsrc/ssrc are already that. */
    const int64_t c0 = p && p->cn ? p->c0 : 0;
    const int64_t lq = bits == 8 ? K : (K + 1) / 2, lg = group ? (K + group - 1) / group : 1;
    const int64_t q0 = bits == 8 ? c0 : c0 / 2, g0 = group ? c0 / group : 0;
    const void *qo = qsrc, *so = ssrc;
    if (qrows != N || lq != kq || lg != ng) {
        unsigned char *qc = keep(g, (size_t)(N * lq));
        uint16_t *sc = keep(g, (size_t)(N * lg) * 2);
        if (!qc || !sc) return;
        for (int64_t i = 0; i < N; i++) {
            int64_t row = qrows == N ? i : part_row(p, i);
            memcpy(qc + i * lq, qsrc + row * kq + q0, (size_t)lq);
            memcpy(sc + i * lg, ssrc + 2 * (row * ng + g0), (size_t)lg * 2);
        }
        qo = qc;
        so = sc;
    }
    if ((st = m40_graph_set_data(g->b.g, wid, qo, (size_t)(N * lq))) ||
        (st = m40_graph_set_data(g->b.g, sid, so, (size_t)(N * lg) * 2)))
        m40__mb_fail(&g->b, st, "%s", m40_errmsg(g->b.ctx));
}

/* y = x·Wᵀ (+ bias) in the model's weight format: f32 weights run as LINEAR,
** f16 as LINEAR_Q bits 16 (store f16, compute f32), int8/int4 as LINEAR_Q
** with per-row f16 scales. The bias is f32. LINEAR_Q's fusions: nw >= 0, x
** is first rmsnorm(x)·nw (the config's eps); res >= 0, y += res. */
static int linear_fused(gb *g, const char *prefix, int x, int64_t N, int64_t K, m40_wformat f,
                        int has_bias, const tp_part *part, int nw, int res, int glu) {
    char wn[160], sn[160], bn[160];
    snprintf(wn, sizeof wn, "%s.weight", prefix);
    snprintf(sn, sizeof sn, "%s.weight_scale", prefix);
    snprintf(bn, sizeof bn, "%s.bias", prefix);
    m40__mb *b = &g->b;
    m40_node_desc nd;
    int n = 0;
    if (has_bias && part && part->cn) { /* a bias must be added once, not once per rank */
        m40__mb_fail(b, M40_ERR_UNSUPPORTED, "%s: a column-split layer with a bias", prefix);
        return -1;
    }
    g->part = part;
    if (f == M40_WFMT_INT8 || f == M40_WFMT_INT4 || f == M40_WFMT_INT4G128) {
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.bits = f == M40_WFMT_INT8 ? 8 : 4;
        nd.group = f == M40_WFMT_INT4G128 ? 128 : 0;
        const int64_t ws[2] = {N, nd.bits == 8 ? K : (K + 1) / 2}; /* int4: two per byte */
        nd.inputs[n++] = x;
        int wid = nd.inputs[n++] = m40__mb_weight(b, wn, M40_DTYPE_I8, 2, ws, (uint64_t)(N * K));
        int sid = nd.inputs[n++] = nd.group
            ? tensor(b, M40_ROLE_WEIGHT, sn, M40_DTYPE_F16, 2, N, (K + 127) / 128, 0, 0)
            : tensor(b, M40_ROLE_WEIGHT, sn, M40_DTYPE_F16, 1, N, 0, 0, 0);
        bind_shared(g, wid, wn);
        bind_shared(g, sid, sn);
        if (g->w && wid >= 0 && sid >= 0) quantized(g, wn, sn, nd.bits, nd.group, N, K, wid, sid);
    } else if (f == M40_WFMT_FP16) {
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.bits = 16;
        nd.inputs[n++] = x;
        nd.inputs[n++] = weight(g, wn, M40_DTYPE_F16, 2, N, K);
        if (has_bias) nd.inputs[n++] = M40_NO_TENSOR; /* no scale: the bias is input 3 */
    } else {
        m40_node_desc_init(&nd, M40_OP_LINEAR);
        nd.inputs[n++] = x;
        nd.inputs[n++] = weight(g, wn, M40_DTYPE_F32, 2, N, K);
    }
    if (has_bias) nd.inputs[n++] = weight(g, bn, M40_DTYPE_F32, 1, N, 0);
    if (nw >= 0 || res >= 0) { /* LINEAR_Q only (the caller's rule) */
        while (n < 4) nd.inputs[n++] = M40_NO_TENSOR;
        nd.inputs[n++] = nw >= 0 ? nw : M40_NO_TENSOR;
        if (res >= 0) nd.inputs[n++] = res;
        nd.eps = g->c.eps;
    }
    nd.glu = glu; /* LINEAR_Q only (the caller's rule) */
    g->part = NULL;
    nd.ninputs = n;
    nd.name = prefix;
    return m40__mb_node(b, &nd);
}

static int linear(gb *g, const char *prefix, int x, int64_t N, int64_t K, m40_wformat f,
                  int has_bias, const tp_part *part) {
    return linear_fused(g, prefix, x, N, K, f, has_bias, part, -1, -1, 0);
}

/* x summed over the tensor-parallel ranks, in place (no node when there is
** no communicator: a graph declared for planning, where it costs nothing). */
static int allreduce(gb *g, const char *prefix, int x, const m40_chatglm2_desc *d) {
    if (d->tp_size <= 1 || !d->comm) return x;
    char n[160];
    snprintf(n, sizeof n, "%s.allreduce", prefix);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ALLREDUCE);
    nd.name = n;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    nd.comm = d->comm;
    nd.rank = d->tp_rank;
    return m40__mb_node(&g->b, &nd);
}

/* y = rmsnorm(h) · w after the residual step on the stream h (a STATE
** tensor): h = r (first = 1: the embedding starts the stream) or h += r. */
static int rmsnorm(gb *g, const char *name, const char *wname, int h, int r, int first,
                   m40_dtype small) {
    int w = weight(g, wname, small, 1, g->c.hidden, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    nd.name = name;
    nd.eps = g->c.eps;
    nd.alpha = first ? 0.0f : 1.0f;
    nd.ninputs = 3;
    nd.inputs[0] = h;
    nd.inputs[1] = w;
    nd.inputs[2] = r;
    return m40__mb_node(&g->b, &nd);
}

static void declare(gb *g, const m40_chatglm2_desc *d, m40_chatglm2_info *info) {
    m40__mb *b = &g->b;
    const m40_chatglm2_config *c = &g->c;
    const int64_t B = d->batch, L = d->ctx, C = c->hidden, D = c->head_dim;
    /* tensor parallelism: this rank's query heads [h0, h0 + H), KV groups
    ** [g0, g0 + G) and FFN features [f0, f0 + F) (checked to divide) */
    const int64_t N = d->tp_size > 1 ? d->tp_size : 1, rk = d->tp_size > 1 ? d->tp_rank : 0;
    const int64_t HF = c->heads, GF = c->kv_heads, FF = c->ffn; /* the whole model's */
    const int64_t H = HF / N, h0 = rk * H, F = FF / N, f0 = rk * F;
    const int64_t G = GF >= N ? GF / N : 1, g0 = GF >= N ? rk * G : h0 / (HF / GF);
    const tp_part qkv_part = {.R = (HF + 2 * GF) * D, .K = C, .nr = 3,
                              .r0 = {h0 * D, (HF + g0) * D, (HF + GF + g0) * D},
                              .rn = {H * D, G * D, G * D}};
    const tp_part dense_part = {.R = C, .K = HF * D, .c0 = h0 * D, .cn = H * D};
    const tp_part up_part = {.R = 2 * FF, .K = C, .nr = 2, .r0 = {f0, FF + f0}, .rn = {F, F}};
    const tp_part down_part = {.R = C, .K = FF, .c0 = f0, .cn = F};
    const int tp = N > 1;
    const int64_t T = d->phase == M40_PHASE_DECODE ? 1 : (d->chunk < L ? d->chunk : L);
    const m40_wformat f = d->weights;
    /* fp16 checkpoint tensors (norms, embedding, output layer) stay fp16
    ** unless the whole model is fp32 */
    const m40_dtype small = f == M40_WFMT_FP32 ? M40_DTYPE_F32 : M40_DTYPE_F16;
    info->input_ids = info->hidden_in = info->hidden_out = info->logits = -1;
    if (g->l0 == 0)
        info->input_ids = tensor(b, M40_ROLE_INPUT, "input_ids", M40_DTYPE_I32, 2, B, T, 0, 0);
    info->position = tensor(b, M40_ROLE_INPUT, "position", M40_DTYPE_I32, 2, B, T, 0, 0);
    /* the caches' sequences: the graph's own rows, or `slots` chosen per run */
    const int64_t S = d->slots > 0 ? d->slots : B;
    info->slot = d->slots > 0 ? tensor(b, M40_ROLE_INPUT, "slot", M40_DTYPE_I32, 1, B, 0, 0, 0) : -1;
    /* The residual stream. Fused (the default for f16/int8/int4 weights on
    ** one GPU): the stream is each block's output, an activation; the
    ** linears that end a block (dense, dense_4h_to_h) add it in their
    ** epilogue, the linears that start one (query_key_value,
    ** dense_h_to_4h, the output layer) take the RMSNorm in their staging of
    ** x. Unfused (f32 weights, tensor parallelism, or M40__FUSE_NORM
    ** cleared): the STATE tensor "hidden", updated in place by each
    ** RMSNORM's residual step. */
    const int fuse = (m40__chatglm2_fuse & M40__FUSE_NORM) && f != M40_WFMT_FP32 && !tp;
    /* SwiGLU in dense_h_to_4h's GEMV store (LINEAR_Q glu; M40__FUSE_GLU):
    ** decode graphs only, where the GEMV runs (a prefill's M rows would
    ** take the SGEMM, then the SWIGLU kernel from M·2F floats of scratch) */
    const int glu = fuse && (m40__chatglm2_fuse & M40__FUSE_GLU) && d->phase == M40_PHASE_DECODE;
    int h = fuse ? -1 : tensor(b, M40_ROLE_STATE, "hidden", M40_DTYPE_F32, 3, B, T, C, 0);
    int r; /* unfused: what the next RMSNORM adds into h (alpha 0 at the stage's first block);
           ** fused: the stream */
    if (g->l0 == 0) {
        int emb = weight(g, "transformer.embedding.word_embeddings.weight", small, 2, c->vocab, C);
        r = m40__mb_op(b, M40_OP_EMBEDDING, "embedding", info->input_ids, emb);
    } else { /* a later pipeline stage: the stream handed over from the one before */
        r = info->hidden_in = tensor(b, M40_ROLE_INPUT, "hidden_in", M40_DTYPE_F32, 3, B, T, C, 0);
    }
    for (int l = g->l0; l < g->l1; l++) {
        char p[64], n[128], w[128];
        snprintf(p, sizeof p, "transformer.encoder.layers.%d", l);
        snprintf(n, sizeof n, "%s.input_layernorm", p);
        snprintf(w, sizeof w, "%s.input_layernorm.weight", p);
        int qkv;
        if (fuse) {
            int nw = weight(g, w, small, 1, C, 0);
            snprintf(n, sizeof n, "%s.self_attention.query_key_value", p);
            qkv = linear_fused(g, n, r, (H + 2 * G) * D, C, f, 1, NULL, nw, -1, 0);
        } else {
            int a = rmsnorm(g, n, w, h, r, l == g->l0, small);
            snprintf(n, sizeof n, "%s.self_attention.query_key_value", p);
            qkv = linear(g, n, a, (H + 2 * G) * D, C, f, 1, tp ? &qkv_part : NULL);
        }
        m40_node_desc nd;
        /* RoPE on the query and key heads of each qkv row (the first half
        ** of each head's dims, adjacent pairs); the value heads pass. By
        ** default the attention node turns them as it appends K and V (one
        ** launch, not two: M40__FUSE_ROPE); else a ROPE node first. */
        const int rope_fused = (m40__chatglm2_fuse & M40__FUSE_ROPE) != 0;
        if (!rope_fused) {
            m40_node_desc_init(&nd, M40_OP_ROPE);
            snprintf(n, sizeof n, "%s.self_attention.rope", p);
            nd.name = n;
            nd.heads = (int)(H + G);
            nd.head_dim = (int)D;
            nd.rope_dims = (int)D / 2;
            nd.rope_pairs = M40_ROPE_ADJACENT;
            nd.rope_theta = c->rope_theta;
            nd.ninputs = 2;
            nd.inputs[0] = qkv;
            nd.inputs[1] = info->position;
            qkv = m40__mb_node(b, &nd);
        }
        snprintf(n, sizeof n, "%s.k_cache", p);
        int kc = tensor(b, M40_ROLE_STATE, n, M40_DTYPE_F16, 4, S, L, G, D);
        snprintf(w, sizeof w, "%s.v_cache", p);
        int vc = tensor(b, M40_ROLE_STATE, w, M40_DTYPE_F16, 4, S, L, G, D);
        if (d->kv_cache && kc >= 0 && vc >= 0 && b->st == M40_OK) {
            m40_status st;
            if ((st = m40_graph_bind(b->g, kc, d->kv_cache[2 * (l - g->l0)])) != M40_OK ||
                (st = m40_graph_bind(b->g, vc, d->kv_cache[2 * (l - g->l0) + 1])) != M40_OK)
                m40__mb_fail(b, st, "kv_cache of layer %d: %s", l, m40_errmsg(b->ctx));
        } else if (g->from) { /* the cache of the graph whose weights this one uses */
            bind_shared(g, kc, n);
            bind_shared(g, vc, w);
        }
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        snprintf(n, sizeof n, "%s.self_attention.core", p);
        nd.name = n;
        nd.heads = (int)H;
        nd.kv_heads = (int)G;
        nd.head_dim = (int)D;
        if (rope_fused) {
            nd.rope_dims = (int)D / 2;
            nd.rope_pairs = M40_ROPE_ADJACENT;
            nd.rope_theta = c->rope_theta;
        }
        nd.ninputs = 4;
        nd.inputs[0] = qkv;
        nd.inputs[1] = kc;
        nd.inputs[2] = vc;
        nd.inputs[3] = info->position;
        if (info->slot >= 0) {
            nd.ninputs = 5;
            nd.inputs[4] = info->slot;
        }
        int o = m40__mb_node(b, &nd);
        snprintf(n, sizeof n, "%s.self_attention.dense", p);
        int u;
        if (fuse) {
            r = linear_fused(g, n, o, C, H * D, f, 0, NULL, -1, r, 0); /* + the stream */
            snprintf(w, sizeof w, "%s.post_attention_layernorm.weight", p);
            int nw = weight(g, w, small, 1, C, 0);
            snprintf(n, sizeof n, "%s.mlp.dense_h_to_4h", p);
            u = linear_fused(g, n, r, 2 * F, C, f, 0, NULL, nw, -1, glu);
        } else {
            int dense = allreduce(g, n, linear(g, n, o, C, H * D, f, 0, tp ? &dense_part : NULL), d);
            snprintf(n, sizeof n, "%s.post_attention_layernorm", p);
            snprintf(w, sizeof w, "%s.post_attention_layernorm.weight", p);
            int m = rmsnorm(g, n, w, h, dense, 0, small);
            snprintf(n, sizeof n, "%s.mlp.dense_h_to_4h", p);
            u = linear(g, n, m, 2 * F, C, f, 0, tp ? &up_part : NULL);
        }
        snprintf(n, sizeof n, "%s.mlp.swiglu", p);
        int sw = glu ? u : m40__mb_op(b, M40_OP_SWIGLU, n, u, -1);
        snprintf(n, sizeof n, "%s.mlp.dense_4h_to_h", p);
        if (fuse) r = linear_fused(g, n, sw, C, F, f, 0, NULL, -1, r, 0); /* + the stream */
        else r = allreduce(g, n, linear(g, n, sw, C, F, f, 0, tp ? &down_part : NULL), d);
    }
    if (fuse) { /* r is the stream */
        if (g->l1 < c->layers) {
            info->hidden_out = r;
            m40__mb_output(b, r);
            return;
        }
        int x = r;
        if (d->phase == M40_PHASE_PREFILL && !d->all_logits)
            x = m40__mb_op(b, M40_OP_TAKE_LAST, "last_position", x, -1);
        int nw = weight(g, "transformer.encoder.final_layernorm.weight", small, 1, C, 0);
        info->logits = linear_fused(g, "transformer.output_layer", x, c->vocab, C, M40_WFMT_FP16,
                                    0, NULL, nw, -1, 0);
        m40__mb_output(b, info->logits);
        return;
    }
    if (g->l1 < c->layers) {
        /* h lacks the last block's MLP output until the next RMSNORM adds
        ** it: hand on the complete stream, h + r (in place of r) */
        info->hidden_out = m40__mb_op(b, M40_OP_ADD, "hidden_out", r, h);
        m40__mb_output(b, info->hidden_out);
        return;
    }
    int x = rmsnorm(g, "transformer.encoder.final_layernorm",
                    "transformer.encoder.final_layernorm.weight", h, r, 0, small);
    if (d->phase == M40_PHASE_PREFILL && !d->all_logits)
        x = m40__mb_op(b, M40_OP_TAKE_LAST, "last_position", x, -1);
    /* the output layer stays fp16 in the quantized models */
    info->logits = linear(g, "transformer.output_layer", x, c->vocab, C,
                          f == M40_WFMT_FP32 ? M40_WFMT_FP32 : M40_WFMT_FP16, 0, NULL);
    m40__mb_output(b, info->logits);
}

static int cfg_ok(const m40_chatglm2_config *c) {
    return c->layers >= 1 && c->layers <= MAX_LAYERS && c->hidden >= 1 && c->hidden <= MAX_DIM &&
           c->ffn >= 1 && c->ffn <= MAX_DIM && c->vocab >= 1 && c->vocab <= MAX_DIM &&
           c->heads >= 1 && c->heads <= 4096 && c->kv_heads >= 1 && c->heads % c->kv_heads == 0 &&
           c->head_dim >= 4 && c->head_dim <= 256 && c->head_dim % 4 == 0 &&
           (int64_t)c->heads * c->head_dim <= MAX_DIM && c->eps > 0.0f && c->eps < 1.0f &&
           c->rope_theta > 1.0f && c->rope_theta < 1e30f;
}

/* A metadata value as a number in [lo, hi] (absent: *v is kept). */
static int meta_num(gb *g, const char *key, double lo, double hi, double *v) {
    const char *s = metadata(g, key);
    if (!s) return 1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !(x >= lo && x <= hi)) {
        m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: metadata %s = '%.40s' is not a number in "
                     "[%g, %g]", key, s, lo, hi);
        return 0;
    }
    *v = x;
    return 1;
}

/* The config of the file: shapes give C, V, F and the layers; heads, eps
** and the RoPE base come from the metadata (ChatGLM2-6B's where absent). */
static void config_from_file(gb *g, const m40_chatglm2_config *want) {
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    const m40_st_tensor *e = lookup(g, "transformer.embedding.word_embeddings.weight").t;
    const m40_st_tensor *dn = lookup(g, "transformer.encoder.layers.0.mlp.dense_4h_to_h.weight").t;
    if (!e || e->ndim != 2 || !dn || dn->ndim != 2) {
        m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: not a ChatGLM2 checkpoint (no 2-D "
                     "transformer.embedding.word_embeddings.weight or layer 0's "
                     "mlp.dense_4h_to_h.weight)");
        return;
    }
    c.vocab = e->shape[0] <= MAX_DIM ? (int)e->shape[0] : -1;
    c.hidden = e->shape[1] <= MAX_DIM ? (int)e->shape[1] : -1;
    /* an int4 checkpoint packs two per byte: the unpacked width is 2x */
    int64_t f = dn->shape[1];
    if (dn->dtype == M40_DTYPE_I8 && f <= MAX_DIM / 2 && /* f: any extent of an empty tensor */
        lookup(g, "transformer.encoder.layers.0.mlp.dense_4h_to_h.weight_scale").t) {
        const m40_st_tensor *up = lookup(g, "transformer.encoder.layers.0.mlp.dense_h_to_4h.weight").t;
        if (up && up->ndim == 2 && up->shape[0] == 4 * f) f *= 2; /* [2F, C/2] */
    }
    c.ffn = f <= MAX_DIM ? (int)f : -1;
    for (c.layers = 0; c.layers <= MAX_LAYERS; c.layers++) {
        char n[96];
        snprintf(n, sizeof n, "transformer.encoder.layers.%d.input_layernorm.weight", c.layers);
        if (!lookup(g, n).t) break;
    }
    double v[5] = {c.heads, c.kv_heads, c.head_dim, c.eps, 1.0};
    if (!meta_num(g, "num_attention_heads", 1, 4096, &v[0]) ||
        !meta_num(g, "multi_query_group_num", 1, 4096, &v[1]) ||
        !meta_num(g, "kv_channels", 2, 256, &v[2]) ||
        !meta_num(g, "layernorm_epsilon", 1e-12, 0.5, &v[3]) ||
        !meta_num(g, "rope_ratio", 1e-3, 1e6, &v[4]))
        return;
    c.heads = (int)v[0];
    c.kv_heads = (int)v[1];
    c.head_dim = (int)v[2];
    c.eps = (float)v[3];
    c.rope_theta = (float)(10000.0 * v[4]);
    if (want) { /* config.json's word beats the metadata; the shapes must agree */
        const struct { const char *name; int file, cfg; } fl[] = {
            {"num_layers", c.layers, want->layers}, {"hidden_size", c.hidden, want->hidden},
            {"ffn_hidden_size", c.ffn, want->ffn}, {"padded_vocab_size", c.vocab, want->vocab}};
        for (int i = 0; i < 4; i++)
            if (fl[i].file != fl[i].cfg) {
                m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: the config says %s %d, the "
                             "tensors %d", fl[i].name, fl[i].cfg, fl[i].file);
                return;
            }
        c.heads = want->heads;
        c.kv_heads = want->kv_heads;
        c.head_dim = want->head_dim;
        c.eps = want->eps;
        c.rope_theta = want->rope_theta;
        const m40_st_tensor *qkv =
            lookup(g, "transformer.encoder.layers.0.self_attention.query_key_value.bias").t;
        /* in range first: the caller's heads, groups and head_dim may be anything */
        if (qkv && qkv->ndim == 1 && cfg_ok(&c) &&
            qkv->shape[0] != ((int64_t)c.heads + 2 * (int64_t)c.kv_heads) * c.head_dim) {
            m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: the config's %d heads, %d KV groups "
                         "of %d (query_key_value %lld wide) disagree with the tensors (%lld)",
                         c.heads, c.kv_heads, c.head_dim,
                         ((long long)c.heads + 2LL * c.kv_heads) * c.head_dim,
                         (long long)qkv->shape[0]);
            return;
        }
    }
    if (!cfg_ok(&c)) {
        m40__mb_fail(&g->b, M40_ERR_FORMAT, "weights: the shapes and %s give %d layers, "
                     "hidden %d, ffn %d, vocab %d, %d heads of %d over %d KV groups: not a "
                     "ChatGLM2 shape (need heads %% kv_heads = 0, "
                     "head_dim a multiple of 4 up to 256)", want ? "config" : "metadata",
                     c.layers, c.hidden, c.ffn, c.vocab,
                     c.heads, c.head_dim, c.kv_heads);
        return;
    }
    g->c = c;
}

/* 1 if checkpoint tensor `name` is the model's but another pipeline
** stage's: a block outside [l0, l1), the embedding (l0 > 0), the final norm
** or the output layer (l1 < layers). That stage checks it. */
static int other_stage(const gb *g, const char *name) {
    static const char blk[] = "transformer.encoder.layers.";
    if (g->l0 == 0 && g->l1 == g->c.layers) return 0;
    if (strncmp(name, blk, sizeof blk - 1) == 0) {
        char *end;
        errno = 0;
        long l = strtol(name + sizeof blk - 1, &end, 10);
        return end != name + sizeof blk - 1 && *end == '.' && !errno && l >= 0 &&
               l < g->c.layers && (l < g->l0 || l >= g->l1);
    }
    if (g->l0 > 0 && strncmp(name, "transformer.embedding.", 22) == 0) return 1;
    return g->l1 < g->c.layers && (strncmp(name, "transformer.encoder.final_layernorm.", 36) == 0 ||
                                   strncmp(name, "transformer.output_layer.", 25) == 0);
}

/* random_weights: every WEIGHT of the allocated graph filled by seed. */
static m40_status fill_random(m40_graph *gr, m40_ctx *ctx, uint64_t seed) {
    m40_status st = M40_OK;
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (int id = 0; st == M40_OK && id < m40_graph_get_tensor_count(gr); id++) {
        m40_graph_tensor_info ti;
        m40_tensor *t;
        if ((st = m40_graph_get_tensor_info(gr, id, &ti)) != M40_OK) break;
        if (ti.role != M40_ROLE_WEIGHT || ti.bound) continue;
        if ((st = m40_graph_get_tensor(gr, id, &t)) != M40_OK) break;
        uint64_t s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)id + 1;
        if (ti.desc.dtype != M40_DTYPE_I8) {
            int scale = strstr(ti.name, "weight_scale") != NULL;
            st = m40_fill_random(ctx, s, scale ? M40_RANDOM_UNIFORM : M40_RANDOM_NORMAL,
                                 scale ? 0.001f : 0.0f, scale ? 0.002f : 0.02f, t);
            continue;
        }
        if (ti.bytes > cap) { /* int8 / packed int4 codes: any byte is valid */
            unsigned char *nb = realloc(buf, (size_t)ti.bytes);
            if (!nb) {
                st = m40__err(ctx, M40_ERR_OOM_HOST, "random weights: out of host memory");
                break;
            }
            buf = nb;
            cap = (size_t)ti.bytes;
        }
        for (uint64_t i = 0; i < ti.bytes; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            buf[i] = (unsigned char)(s >> 24);
        }
        st = m40_tensor_upload(ctx, t, buf, (size_t)ti.bytes);
    }
    free(buf);
    return st;
}

void m40_chatglm2_desc_decode(m40_chatglm2_desc *out, const m40_chatglm2_desc *prefill,
                              m40_graph *g, const m40_chatglm2_info *info) {
    if (!out || !prefill) return;
    *out = *prefill;
    out->phase = M40_PHASE_DECODE;
    out->all_logits = 0;
    out->shards = NULL;
    out->nshards = 0;
    out->check_config = 0;
    out->random_weights = 0;
    out->weights_from = g;
    if (info) out->config = info->config;
}

m40_status m40_chatglm2_config_of(m40_ctx *ctx, m40_st_file *const *files, int nfiles,
                                  const m40_chatglm2_config *want, m40_chatglm2_config *out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!files || nfiles < 1 || nfiles > 4096 || !out)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_chatglm2_config_of: NULL or no files");
    for (int i = 0; i < nfiles; i++)
        if (!files[i]) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_chatglm2_config_of: file %d is NULL", i);
    gb g = {.b = {.ctx = ctx, .fn = "m40_chatglm2_config_of", .st = M40_OK}, .files = files,
            .nfiles = nfiles, .w = files[0]};
    if (want) g.c = *want;
    config_from_file(&g, want);
    if (g.b.st == M40_OK) *out = g.c;
    return g.b.st;
}

/* The split of d's tensor parallelism over config c: every part whole (see
** declare), and a communicator of tp_size ranks for a graph that runs. */
static m40_status tp_check(m40_ctx *ctx, const m40_chatglm2_desc *d, const m40_chatglm2_config *c,
                           int runs) {
    const int N = d->tp_size;
    if (N <= 1) return M40_OK;
    if (c->heads % N || (c->kv_heads % N && N % c->kv_heads) || c->ffn % N)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: %d tensor-parallel ranks: the %d heads, "
                        "the %d KV groups (or ranks per group) and the %d FFN features must "
                        "divide by it", FN, N, c->heads, c->kv_heads, c->ffn);
    const int64_t hd = (int64_t)c->heads / N * c->head_dim, f = c->ffn / N;
    if ((d->weights == M40_WFMT_INT4 || d->weights == M40_WFMT_INT4G128) && (hd % 2 || f % 2))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: int4 over %d ranks: a rank's %lld attention "
                        "and %lld FFN columns must be even (two codes per byte)", FN, N,
                        (long long)hd, (long long)f);
    if (d->weights == M40_WFMT_INT4G128 && (hd % 128 || f % 128))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: int4g128 over %d ranks: a rank's %lld "
                        "attention and %lld FFN columns must be whole groups of 128 (int4 or "
                        "int8 split anywhere)", FN, N, (long long)hd, (long long)f);
    if (runs && (!d->comm || m40_comm_size(d->comm) != N))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: %d tensor-parallel ranks need a comm of "
                        "%d ranks (m40_comm_create) for a graph that runs; it has %d", FN, N, N,
                        d->comm ? m40_comm_size(d->comm) : 0);
    return M40_OK;
}

m40_status m40_chatglm2_graph(m40_ctx *ctx, const m40_chatglm2_desc *d, m40_st_file *weights,
                              m40_graph **out, m40_chatglm2_info *info) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: NULL argument", FN);
    /* callers built before the layer range pass a shorter struct: the whole model */
    const size_t old_size = offsetof(m40_chatglm2_desc, layer_begin);
    if (d->struct_size < old_size)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s: desc->struct_size is %zu, expected %zu (call "
                        "m40_chatglm2_desc_init first)", FN, d->struct_size, sizeof *d);
    const int has_range = d->struct_size >= offsetof(m40_chatglm2_desc, layer_end) + sizeof(int);
    const int lb = has_range ? d->layer_begin : 0, le = has_range ? d->layer_end : 0;
    if (d->batch < 1 || d->batch > MAX_BATCH)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: batch %d is not in 1..%d", FN, d->batch,
                        MAX_BATCH);
    if (d->tp_size < 0 || d->tp_size > 64 ||
        (d->tp_size > 1 ? d->tp_rank < 0 || d->tp_rank >= d->tp_size : d->tp_rank != 0))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: tensor-parallel rank %d of %d (size 0..64, "
                        "rank 0..size-1)", FN, d->tp_rank, d->tp_size);
    if (d->slots < 0 || d->slots > MAX_BATCH)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: slots %d is not in 0..%d", FN, d->slots,
                        MAX_BATCH);
    if ((int)d->weights < 0 || d->weights >= M40_WFMT_COUNT)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown weight format %d", FN,
                        (int)d->weights);
    if (d->ctx < 1 || d->ctx > MAX_CTX || d->chunk < 1)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: ctx %lld must be in 1..%lld and chunk %d >= 1",
                        FN, (long long)d->ctx, (long long)MAX_CTX, d->chunk);
    if (d->phase != M40_PHASE_PREFILL && d->phase != M40_PHASE_DECODE)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown phase %d", FN, (int)d->phase);
    if (d->nshards < 0 || (d->nshards > 0 && !d->shards) || d->nshards > 4096)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: nshards %d (need 0..4096 and shards)", FN,
                        d->nshards);
    for (int i = 0; i < d->nshards; i++)
        if (!d->shards[i]) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: shard %d is NULL", FN, i);
    if ((weights ? 1 : 0) + (d->nshards > 0) + (d->weights_from != NULL) > 1)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: give one of a weights file, shards and "
                        "weights_from", FN);
    gb g = {.b = {.ctx = ctx, .fn = FN, .st = M40_OK}, .c = d->config, .from = d->weights_from,
            .d = d};
    if (weights) {
        g.files = &weights;
        g.nfiles = 1;
    } else if (d->nshards > 0) {
        g.files = d->shards;
        g.nfiles = d->nshards;
    }
    g.w = g.nfiles ? g.files[0] : NULL;
    if ((!g.w || d->check_config) && !cfg_ok(&g.c))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: config of %d layers, hidden %d, ffn %d, "
                        "vocab %d, %d heads of %d over %d KV groups is out of range", FN,
                        g.c.layers, g.c.hidden, g.c.ffn, g.c.vocab, g.c.heads, g.c.head_dim,
                        g.c.kv_heads);
    if (g.w) {
        config_from_file(&g, d->check_config ? &d->config : NULL);
        if (g.b.st != M40_OK) return g.b.st;
    }
    g.l0 = lb;
    g.l1 = lb == 0 && le == 0 ? g.c.layers : le;
    if (g.l0 < 0 || g.l0 >= g.l1 || g.l1 > g.c.layers)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: layer range %d..%d is not a stage of "
                        "a model of %d layers (need 0 <= layer_begin < layer_end <= %d, or 0/0 "
                        "for all)", FN, lb, le, g.c.layers, g.c.layers);
    if (g.w) {
        if (!(g.used = calloc((size_t)g.nfiles, sizeof *g.used)))
            return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", FN);
        for (int i = 0; i < g.nfiles; i++)
            for (size_t j = 0; j < m40_st_get_count(g.files[i]); j++)
                if (!other_stage(&g, m40_st_get(g.files[i], j)->name))
                    g.total_bytes += m40_st_get(g.files[i], j)->nbytes;
        for (int i = 0; i < g.nfiles; i++)
            if (!(g.used[i] = calloc(m40_st_get_count(g.files[i]) + 1, 1))) {
                for (int j = 0; j < i; j++) free(g.used[j]);
                free(g.used);
                return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", FN);
            }
    }
    if ((st = tp_check(ctx, d, &g.c, g.w || d->weights_from || d->random_weights)) != M40_OK ||
        (st = m40_graph_create(ctx, &g.b.g)) != M40_OK) {
        for (int i = 0; g.used && i < g.nfiles; i++) free(g.used[i]);
        free(g.used);
        return st;
    }
    m40_chatglm2_info inf;
    memset(&inf, 0, sizeof inf);
    inf.config = g.c;
    inf.layer_begin = g.l0;
    inf.layer_end = g.l1;
    declare(&g, d, &inf);
    /* every tensor in the checkpoint must belong to the model (but the
    ** official rotary cache and a saved model's "extra." data) */
    for (int f = 0; g.b.st == M40_OK && f < g.nfiles; f++)
        for (size_t i = 0; g.b.st == M40_OK && i < m40_st_get_count(g.files[f]); i++)
            if (!g.used[f][i] && !other_stage(&g, m40_st_get(g.files[f], i)->name) &&
                strcmp(m40_st_get(g.files[f], i)->name, "transformer.rotary_pos_emb.inv_freq") != 0 &&
                strncmp(m40_st_get(g.files[f], i)->name, "extra.", 6) != 0)
                m40__mb_fail(&g.b, M40_ERR_FORMAT, "weights: unknown tensor '%s'%s (not part of "
                             "a ChatGLM2 of %d layers)", m40_st_get(g.files[f], i)->name,
                             g.nfiles > 1 ? " in a shard" : "", g.c.layers);
    if (g.b.st == M40_OK && (g.w || d->weights_from || d->random_weights)) {
        uint64_t wb = 0;
        if ((st = m40_graph_plan(g.b.g, d->budget, &inf.plan)) == M40_OK) {
            wb = inf.plan.region_bytes[M40_REGION_WEIGHTS];
            if (d->progress && g.w) d->progress(d->progress_user, "upload", 0, wb);
            st = m40_graph_alloc(g.b.g);
        }
        if (st == M40_OK && d->random_weights && !g.w) st = fill_random(g.b.g, ctx, d->seed);
        if (st != M40_OK) m40__mb_fail(&g.b, st, "%s", m40_errmsg(ctx));
        else if (d->progress && g.w) d->progress(d->progress_user, "upload", wb, wb);
        inf.allocated = g.b.st == M40_OK;
    }
    for (int i = 0; i < g.nbufs; i++) free(g.bufs[i]);
    free(g.bufs);
    for (int i = 0; g.used && i < g.nfiles; i++) free(g.used[i]);
    free(g.used);
    m40_ctx_destroy(g.cpu);
    if (g.b.st != M40_OK) {
        m40_graph_destroy(g.b.g);
        return g.b.st;
    }
    inf.params = g.b.params;
    if (info) *info = inf;
    *out = g.b.g;
    return M40_OK;
}
