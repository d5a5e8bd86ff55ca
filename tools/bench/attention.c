/* m40-bench attention: causal grouped-query attention at ChatGLM2's shapes
** (32 heads over 2 KV groups, head_dim 128, fp16 KV cache, one sequence).
**   decode  T = 1 at each context N of --sizes (default 1024,8192,32768):
**           K+V bytes read per step / time, against a same-run device copy
**           of the two caches (its GB/s counts read + write, as `copy` and
**           `gemv`); target >= 0.70x at 8K and 32K
**   prefill T = 512, 2048, 8192 (--cpu: 128), causal (L = T): 4·T²/2·D·H FLOPs / time,
**           against m40_matmul on the GEMM of the same FLOPs (M = N = T,
**           K = H·D); target >= 0.50x
** Every output is checked against a double reference on the host (decode:
** all of it; prefill: a sample of query rows). Beside each line, the Tesla
** M40 projection, labelled as one: bytes at 288.4 GB/s, FLOPs at the sm_52
** FFMA issue rate with the softmax's exps on the SFUs. PyTorch's
** scaled_dot_product_attention at the same shapes: bench/bench_torch.py
** attention. The versions that led here: m40-attn-versions. M40_ATTN_AB=1:
** the prefill lines of both prefill kernels too, and of 1..4 key shares
** (prefill_ab). M40_BENCH_ATTN_PREFILL: "0" no prefill, "128,1024" those T. */
#include "bench/harness.h"
#include "half.h"
#include "internal.h" /* m40__attn_decode_variant: M40_ATTN_AB=1 */

#include <m40/transformer.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kernels/attention.h's combine knob (weak: absent from a CPU-only build) */
extern int m40k_attn_fuse_combine __attribute__((weak));
extern int m40k_attn_warp_pv __attribute__((weak));
extern int m40k_attn_rows8 __attribute__((weak));

/* An A/B row's kernel knob (kernels/attention.h; NULL: none, or absent from
** a CPU-only build): set to 1 for the row, its value before returned. */
static int knob_on(int *knob) {
    if (!knob) return 0;
    const int saved = *knob;
    *knob = 1;
    return saved;
}
static void knob_restore(int *knob, int saved) {
    if (knob) *knob = saved;
}


#define ATT_H 32
#define ATT_G 2
#define ATT_D 128
#define ATT_LAYERS 28              /* ChatGLM2-6B, for the per-token projection */
#define ATT_MAX_CONTEXT (1 << 22)  /* 4M positions: 4 GiB of fp16 K+V */
#define M40_SFU_GOPS (24.0 * 32 * 1.114) /* exps/ns: 24 SMs x 32 SFUs at boost */

typedef struct att_arg {
    m40_attention_desc d;
    m40_tensor *q, *k, *v, *pos, *y;
    m40_tensor *copy_dst;   /* [2, L, G, D] F16: the copy baseline's target */
    m40_tensor *gx, *gw, *gy; /* the GEMM baseline */
    int mode;               /* 0 m40_attention, 1 device copy, 2 m40_matmul */
} att_arg;

static m40_status att_op(bench_env *e, void *arg) {
    att_arg *a = arg;
    if (a->mode == 1) {
        size_t n = m40_tensor_get_nbytes(a->k);
        char *dst = m40_tensor_get_data(a->copy_dst);
        m40_status st = m40__bench_memcpy_d2d(e->ctx, dst, m40_tensor_get_data(a->k), n);
        return st ? st : m40__bench_memcpy_d2d(e->ctx, dst + n, m40_tensor_get_data(a->v), n);
    }
    if (a->mode == 2) return m40_matmul(e->ctx, a->gx, a->gw, NULL, a->gy);
    return m40_attention(e->ctx, &a->d, a->q, a->k, a->v, a->pos, NULL, a->y);
}

static void att_free(att_arg *a) {
    m40_tensor *t[] = {a->q, a->k, a->v, a->pos, a->y, a->copy_dst, a->gx, a->gw, a->gy};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) m40_tensor_destroy(t[i]);
    memset(a, 0, sizeof *a);
}

/* q [1,T,H·D] F32, caches [1,L,G,D] F16 (fresh random), pos 0..T-1 + (L-T) */
static m40_status att_make(bench_env *e, att_arg *a, int T, int L, uint64_t seed) {
    const int64_t qs[3] = {1, T, ATT_H * ATT_D}, cs[4] = {1, L, ATT_G, ATT_D}, ps[2] = {1, T};
    m40_status st;
    memset(a, 0, sizeof *a);
    a->d = (m40_attention_desc){.struct_size = sizeof a->d, .heads = ATT_H, .kv_heads = ATT_G,
                                .head_dim = ATT_D, .scale = 0};
    if ((st = m40_tensor_new(e->ctx, M40_DTYPE_F32, 3, qs, &a->q)) ||
        (st = m40_tensor_new(e->ctx, M40_DTYPE_F16, 4, cs, &a->k)) ||
        (st = m40_tensor_new(e->ctx, M40_DTYPE_F16, 4, cs, &a->v)) ||
        (st = m40_tensor_new(e->ctx, M40_DTYPE_F32, 3, qs, &a->y)) ||
        (st = m40_tensor_new(e->ctx, M40_DTYPE_I32, 2, ps, &a->pos)) ||
        (st = m40_fill_random(e->ctx, seed, M40_RANDOM_UNIFORM, -2, 2, a->q)) ||
        (st = m40_fill_random(e->ctx, seed + 1, M40_RANDOM_UNIFORM, -1, 1, a->k)) ||
        (st = m40_fill_random(e->ctx, seed + 2, M40_RANDOM_UNIFORM, -1, 1, a->v)))
        return st;
    int32_t *p = malloc((size_t)T * sizeof *p);
    if (!p) return M40_ERR_OOM_HOST;
    for (int t = 0; t < T; t++) p[t] = L - T + t;
    st = m40_tensor_upload(e->ctx, a->pos, p, (size_t)T * sizeof *p);
    free(p);
    return st;
}

/* max |y - ref| / max |ref| over query rows `rows` (all heads), the
** reference in double from the inputs as stored (fp16 cache values). */
static double att_check(bench_env *e, att_arg *a, int T, int L, const int *rows, int nrows) {
    const size_t nq = (size_t)T * ATT_H * ATT_D, nc = (size_t)L * ATT_G * ATT_D;
    float *q = malloc(nq * 4), *y = malloc(nq * 4);
    uint16_t *k = malloc(nc * 2), *v = malloc(nc * 2);
    double *s = malloc((size_t)L * sizeof *s), *o = malloc(ATT_D * sizeof *o), err = 0, mx = 0;
    const double scale = 1.0 / sqrt((double)ATT_D);
    if (!q || !y || !k || !v || !s || !o || m40_tensor_download(e->ctx, a->q, q, nq * 4) ||
        m40_tensor_download(e->ctx, a->y, y, nq * 4) || m40_tensor_download(e->ctx, a->k, k, nc * 2) ||
        m40_tensor_download(e->ctx, a->v, v, nc * 2)) {
        err = -1;
        goto done;
    }
    for (int ri = 0; ri < nrows; ri++) {
        const int t = rows[ri], last = L - T + t;
        for (int h = 0; h < ATT_H; h++) {
            const int g = h / (ATT_H / ATT_G);
            const float *qv = q + ((size_t)t * ATT_H + h) * ATT_D;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j <= last; j++) {
                const uint16_t *kj = k + ((size_t)j * ATT_G + g) * ATT_D;
                double acc = 0;
                for (int d = 0; d < ATT_D; d++) acc += (double)qv[d] * m40__f16_to_f32(kj[d]);
                s[j] = acc * scale;
                if (s[j] > m) m = s[j];
            }
            for (int d = 0; d < ATT_D; d++) o[d] = 0;
            for (int j = 0; j <= last; j++) sum += s[j] = exp(s[j] - m);
            for (int j = 0; j <= last; j++) {
                const uint16_t *vj = v + ((size_t)j * ATT_G + g) * ATT_D;
                for (int d = 0; d < ATT_D; d++) o[d] += s[j] / sum * m40__f16_to_f32(vj[d]);
            }
            const float *yo = y + ((size_t)t * ATT_H + h) * ATT_D;
            for (int d = 0; d < ATT_D; d++) {
                double df = fabs(yo[d] - o[d]);
                if (!(df <= err)) err = df; /* NaN sticks */
                if (fabs(o[d]) > mx) mx = fabs(o[d]);
            }
        }
    }
    err = mx > 0 ? err / mx : err;
done:
    free(q), free(y), free(k), free(v), free(s), free(o);
    return err;
}

/* Measures `r` against `base` (may be NULL), checks the output, prints. */
static void att_measure(bench_env *e, att_arg *a, m40__bench_result *r, m40__bench_result *base,
                        double base_value, int T, int L, const int *rows, int nrows) {
    if (!r) return;
    if (base) {
        snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
        r->baseline_value = base_value;
    }
    a->mode = 0;
    if (measure(e, att_op, a, r) != 0) {
        e->failed = 1;
        return;
    }
    r->max_rel_err = att_check(e, a, T, L, rows, nrows);
    /* FP32 math over fp16 inputs against double: sums of up to 32K terms */
    if (!(r->max_rel_err >= 0 && r->max_rel_err < 1e-4)) {
        fprintf(stderr, "m40-bench attention %s: output differs from the double reference "
                        "(max rel err %.3g)\n", r->label, r->max_rel_err);
        e->failed = 1;
    }
    if (e->text) print_result(r);
}

static void target_line(bench_env *e, const m40__bench_result *r, double want, int applies) {
    if (!e->text || !r || r->baseline_value <= 0) return;
    double x = r->value / r->baseline_value;
    printf("      target >= %.2fx %s: %.2fx%s\n", want, r->baseline, x,
           !applies ? " (no target at this size)" : x >= want ? " met" : " NOT MET");
}

/* M40_ATTN_AB_ONLY="a|b|...": only the A/B rows whose name holds one of
** these (a device call's time is short; the default row always runs) */
static int ab_pick(const char *impl) {
    const char *only = getenv("M40_ATTN_AB_ONLY");
    if (!only || !*only) return 1;
    for (const char *t = only; *t;) {
        size_t n = strcspn(t, "|");
        char want[128];
        snprintf(want, sizeof want, "%.*s", (int)(n < sizeof want ? n : sizeof want - 1), t);
        if (n > 0 && strstr(impl, want)) return 1;
        t += n + (t[n] == '|');
    }
    return 0;
}

static void decode_one(bench_env *e, int L) {
    att_arg a;
    char label[48];
    snprintf(label, sizeof label, "decode ctx %d", L);
    if (att_make(e, &a, 1, L, 0xA77E + (uint64_t)L) ||
        (e->info.is_gpu &&
         m40_tensor_new(e->ctx, M40_DTYPE_F16, 4, (int64_t[4]){2, L, ATT_G, ATT_D}, &a.copy_dst))) {
        fprintf(stderr, "m40-bench attention %s: %s\n", label, m40_errmsg(e->ctx));
        e->failed = 1;
        att_free(&a);
        return;
    }
    const double kv = 2.0 * (double)m40_tensor_get_nbytes(a.k);
    m40__bench_result *base = NULL;
    double base_value = 0;
    if (e->info.is_gpu) {
        a.mode = 1;
        base = new_result(e, "attention", "device copy", label, "GB/s");
        if (base) {
            base->batch = L;
            base->work = 2.0 * kv; /* read + write */
            if (measure(e, att_op, &a, base) == 0) base_value = base->value;
            else e->failed = 1;
            if (e->text) print_result(base);
        }
    }
    m40__bench_result *r = new_result(e, "attention", "m40_attention", label, "GB/s");
    if (r) {
        r->batch = L;
        r->work = kv; /* K and V read once; q and y are 16 KB each */
    }
    const int row0 = 0;
    att_measure(e, &a, r, base, base_value, 1, L, &row0, 1);
    target_line(e, r, 0.70, L >= 8192);
    if (getenv("M40_ATTN_AB") && e->info.is_gpu) {
        /* the other decode kernels (kernels/attention.h's decode_variant),
        ** same inputs, for the A/B: decode v3 with 4 and 8 rows a warp, the
        ** tile kernel with its loads a phase early, ...; a row with a knob
        ** runs with it on */
        static const struct { int v; const char *impl; int *knob; } alt[] = {
            {2, "m40_attention v3 4 rows/warp", NULL}, {3, "m40_attention v3 8 rows/warp", NULL},
            {4, "m40_attention tile, loads early", NULL}, {1, "m40_attention tile 64 keys", NULL},
            {6, "m40_attention tile 16 keys", NULL}, {7, "m40_attention tile 32, K first", NULL},
            {5, "m40_attention tile 32 keys", NULL}, {8, "m40_attention v4 4 rows, 4 keys", NULL},
            {9, "m40_attention v4 8 rows, 4 keys", NULL}, {10, "m40_attention v5 a warp a row", NULL},
            {11, "m40_attention v6 8 rows a lane", NULL}, {12, "m40_attention v6 4 rows a lane", NULL},
            {10, "m40_attention v5, combine in kernel", &m40k_attn_fuse_combine},
            {0, "m40_attention, combine in kernel", &m40k_attn_fuse_combine},
            {0, "m40_attention, warp P.V", &m40k_attn_warp_pv},
            {1, "m40_attention tile 64, warp P.V", &m40k_attn_warp_pv},
            {0, "m40_attention, 8 rows a block", &m40k_attn_rows8}};
        for (int i = 0; i < (int)(sizeof alt / sizeof alt[0]); i++) {
            if (!ab_pick(alt[i].impl)) continue;
            m40__bench_result *r1 = new_result(e, "attention", alt[i].impl, label, "GB/s");
            if (!r1) continue;
            r1->batch = L;
            r1->work = kv;
            m40__attn_decode_variant = alt[i].v;
            const int saved = knob_on(alt[i].knob);
            att_measure(e, &a, r1, base, base_value, 1, L, &row0, 1);
            knob_restore(alt[i].knob, saved);
            m40__attn_decode_variant = 0;
        }
    }
    if (e->info.is_gpu && e->o->graph_calls > 0) {
        /* again as graph_calls calls captured in one CUDA graph: the device
        ** time of a decode step's attention, no launch or events between */
        char base_impl[sizeof r->impl] = "";
        double bv = 0;
        a.mode = 1;
        m40__bench_result *gb = new_result(e, "attention", "device copy", label, "GB/s");
        if (gb) {
            gb->batch = L;
            gb->work = 2.0 * kv;
            if (measure_graph(e, att_op, &a, gb) == 0) {
                bv = gb->value;
                snprintf(base_impl, sizeof base_impl, "%s", gb->impl);
                if (e->text) print_result(gb);
            } else {
                e->failed = 1;
            }
        }
        a.mode = 0;
        /* the default; with M40_ATTN_AB=1 decode v4 (variants 8, 9) and the
        ** knob rows too */
        static const struct { int v; const char *impl; int *knob; } gv[] = {
            {0, "m40_attention", NULL}, {0, "m40_attention, combine in kernel", &m40k_attn_fuse_combine},
            {7, "m40_attention tile 32, K first", NULL},
            {8, "m40_attention v4 4 rows", NULL}, {9, "m40_attention v4 8 rows", NULL},
            {10, "m40_attention v5 a warp a row", NULL},
            {11, "m40_attention v6 8 rows a lane", NULL}, {12, "m40_attention v6 4 rows a lane", NULL},
            {10, "m40_attention v5, combine in kernel", &m40k_attn_fuse_combine},
            {0, "m40_attention, warp P.V", &m40k_attn_warp_pv},
            {1, "m40_attention tile 64, warp P.V", &m40k_attn_warp_pv},
            {0, "m40_attention, 8 rows a block", &m40k_attn_rows8}};
        const int ng = getenv("M40_ATTN_AB") ? (int)(sizeof gv / sizeof gv[0]) : 1;
        for (int i = 0; i < ng; i++) {
            if (i > 0 && !ab_pick(gv[i].impl)) continue;
            m40__bench_result *gr = new_result(e, "attention", gv[i].impl, label, "GB/s");
            if (!gr) break;
            gr->batch = L;
            gr->work = kv;
            snprintf(gr->baseline, sizeof gr->baseline, "%s", base_impl);
            gr->baseline_value = bv;
            m40__attn_decode_variant = gv[i].v;
            const int saved = knob_on(gv[i].knob);
            const int grc = measure_graph(e, att_op, &a, gr);
            knob_restore(gv[i].knob, saved);
            m40__attn_decode_variant = 0;
            if (grc != 0) {
                e->failed = 1;
                continue;
            }
            if (e->text) print_result(gr);
            target_line(e, gr, 0.70, L >= 8192);
        }
    }
    if (e->text) {
        double ms = kv / (M40__M40_GBS * 1e9) * 1e3;
        printf("      M40 projection (not a measurement): %.2f MB K+V / %.1f GB/s = %.4f ms a "
               "layer, x %d layers = %.3f ms a token at context %d\n",
               kv / 1e6, M40__M40_GBS, ms, ATT_LAYERS, ms * ATT_LAYERS, L);
    }
    att_free(&a);
}

/* kernels/attention.h's prefill knob (weak: absent from a CPU-only build).
** M40_ATTN_AB=1: each prefill T also runs with the knob at 0 (BM-32 tile
** kernel) and at 1 (BM-64 kernel), then both with m40k_attn_prefill_pair
** 0 (one query tile a block), one line each, checked as the default line
** (the defaults: 2, auto; paired where the grid is resident at once). */
extern int m40k_attn_prefill_variant __attribute__((weak));
extern int m40k_attn_prefill_pair __attribute__((weak));

static void prefill_ab(bench_env *e, att_arg *a, m40__bench_result *base, double base_value,
                       int T, const int *rows, int nrows) {
    const char *ab = getenv("M40_ATTN_AB");
    if (!ab || !*ab || strcmp(ab, "0") == 0 || !&m40k_attn_prefill_variant) return;
    const int keep = m40k_attn_prefill_variant, keep_pair = &m40k_attn_prefill_pair ? m40k_attn_prefill_pair : 1;
    for (int v = 0; v <= 3; v++) { /* variant 0, 1 (tiles paired where the launcher pairs), then unpaired */
        char label[64];
        if (v >= 2 && !&m40k_attn_prefill_pair) break;
        snprintf(label, sizeof label, "prefill T %d variant %d%s", T, v % 2, v >= 2 ? " unpaired" : "");
        if (v >= 2) m40k_attn_prefill_pair = 0;
        m40__bench_result *r = new_result(e, "attention", "m40_attention", label, "GFLOP/s");
        if (r) {
            r->batch = T;
            r->work = 2.0 * T * (double)T * ATT_D * ATT_H;
        }
        m40k_attn_prefill_variant = v % 2;
        att_measure(e, a, r, base, base_value, T, T, rows, nrows);
        target_line(e, r, 0.50, 1);
    }
    m40k_attn_prefill_variant = keep;
    if (&m40k_attn_prefill_pair) m40k_attn_prefill_pair = keep_pair;
    /* the key shares forced on the BM-64 kernel (kernels/attention.h's rule
    ** picks 1..4 by the grid; 1: none, its tiles paired where resident at once) */
    m40k_attn_prefill_variant = 1;
    for (int n = 1; n <= 4; n++) { /* kernels/attention.h: M40K_ATTN_PREFILL_MAX_SPLITS */
        char label[64];
        snprintf(label, sizeof label, "prefill T %d shares %d", T, n);
        m40__bench_result *r = new_result(e, "attention", "m40_attention", label, "GFLOP/s");
        if (r) {
            r->batch = T;
            r->work = 2.0 * T * (double)T * ATT_D * ATT_H;
        }
        m40__attn_prefill_splits = n;
        att_measure(e, a, r, base, base_value, T, T, rows, nrows);
        m40__attn_prefill_splits = 0;
        target_line(e, r, 0.50, 1);
    }
    m40k_attn_prefill_variant = keep;
}

static void prefill_one(bench_env *e, int T) {
    att_arg a;
    char label[48];
    snprintf(label, sizeof label, "prefill T %d", T);
    const int64_t xs[2] = {T, ATT_H * ATT_D}, ys[2] = {T, T};
    if (att_make(e, &a, T, T, 0x9F11 + (uint64_t)T) ||
        m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, xs, &a.gx) ||
        m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, xs, &a.gw) ||
        m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ys, &a.gy) ||
        m40_fill_random(e->ctx, 5, M40_RANDOM_UNIFORM, -1, 1, a.gx) ||
        m40_fill_random(e->ctx, 6, M40_RANDOM_UNIFORM, -1, 1, a.gw)) {
        fprintf(stderr, "m40-bench attention %s: %s\n", label, m40_errmsg(e->ctx));
        e->failed = 1;
        att_free(&a);
        return;
    }
    /* 4·T²/2·D·H: QKᵀ and P·V, 2 FLOPs a multiply-add, half the T×T causal */
    const double flops = 2.0 * T * (double)T * ATT_D * ATT_H;
    m40__bench_result *base = new_result(e, "attention", "m40_matmul (same FLOPs)", label,
                                         "GFLOP/s");
    double base_value = 0;
    if (base) {
        char gl[48];
        snprintf(gl, sizeof gl, "%dx%dx%d GEMM", T, T, ATT_H * ATT_D);
        base->batch = T;
        base->m = T, base->n = T, base->k = ATT_H * ATT_D;
        base->work = flops; /* 2·T·T·(H·D) = 4·T²/2·D·H */
        a.mode = 2;
        if (measure(e, att_op, &a, base) == 0) base_value = base->value;
        else e->failed = 1;
        if (e->text) {
            print_result(base);
            printf("      (m40_matmul on the %s: the FLOPs of the causal attention)\n", gl);
        }
    }
    m40__bench_result *r = new_result(e, "attention", "m40_attention", label, "GFLOP/s");
    if (r) {
        r->batch = T;
        r->work = flops;
    }
    const int rows[6] = {0, 1, T / 3, T / 2, T - 2, T - 1};
    att_measure(e, &a, r, base, base_value, T, T, rows, 6);
    target_line(e, r, 0.50, 1);
    prefill_ab(e, &a, base, base_value, T, rows, 6);
    if (e->text) {
        double fma_ms = flops / (M40__M40_GFLOPS * 1e9) * 1e3;
        double exps = (double)T * (T + 1) / 2 * ATT_H, sfu_ms = exps / (M40_SFU_GOPS * 1e9) * 1e3;
        printf("      M40 projection (not a measurement): %.2f GFLOP as FFMA at %.0f GFLOP/s "
               "(3072 lanes x 2 x 1.114 GHz) = %.3f ms; %.3g exps on the SFUs at %.0f G/s = "
               "%.3f ms; floor %.3f ms (issue-bound, both on the same schedulers)\n",
               flops / 1e9, M40__M40_GFLOPS, fma_ms, exps, M40_SFU_GOPS, sfu_ms, fma_ms + sfu_ms);
    }
    att_free(&a);
}

int run_attention(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    for (int i = 0; i < ns; i++)
        if (sz[i][0] != sz[i][1] || sz[i][0] != sz[i][2] || sz[i][0] > ATT_MAX_CONTEXT) ns = -1;
    if (ns <= 0) {
        fprintf(stderr, "m40-bench attention: --sizes takes decode contexts in 1..%d, e.g. "
                        "1024,8192,32768\n", ATT_MAX_CONTEXT);
        return 2;
    }
    for (int i = 0; i < ns; i++) decode_one(e, (int)sz[i][0]);
    /* --cpu tests the harness: prefill at T = 128 only (the CPU reference at
    ** 2048 would be 34 GFLOP in double, per repeat) */
    static const int pre[] = {512, 2048, 8192}, pre_cpu[] = {128};
    /* M40_BENCH_ATTN_PREFILL: "0" decode only; "T1,T2,..." those prompt lengths (GPU) */
    const char *pe = getenv("M40_BENCH_ATTN_PREFILL");
    const int *pt = e->info.is_gpu ? pre : pre_cpu;
    int np = pe && !strcmp(pe, "0") ? 0 : e->info.is_gpu ? 3 : 1, own[8], n = 0;
    int64_t ps[8][3];
    const int pn = pe && strcmp(pe, "0") != 0 && e->info.is_gpu ? parse_sizes(pe, ps, 8) : 0;
    for (int i = 0; i < pn; i++) /* single lengths, prefill's T > 8 */
        if (ps[i][0] == ps[i][1] && ps[i][0] == ps[i][2] && ps[i][0] >= 9 && ps[i][0] <= 8192)
            own[n++] = (int)ps[i][0];
    if (n > 0) pt = own, np = n;
    if (!e->info.is_gpu && e->text) printf("prefill on the CPU (--cpu): T = 128 only\n");
    for (int i = 0; i < np; i++) prefill_one(e, pt[i]);
    return 0;
}
