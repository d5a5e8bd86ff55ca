/* m40-bench sample: m40_sample over V = 65024 logits (ChatGLM2's
** vocabulary), N rows per call (--sizes, default 1,8): greedy, top-k 40,
** top-p 0.8 at temperature 0.8, min-p 0.05, and top-p with a repetition
** penalty over 64 history ids. Reported as GB/s of logits read (one pass)
** beside a device copy of the same bytes, and as µs per call against the
** target of <= 50 µs (one block per row, so up to the SM count rows take
** about the time of one). */
#include "bench/harness.h"

#include <m40/transformer.h>
#include "../../kernels/sample.h" /* m40k_sample_variant */

#include <stdio.h>
#include <stdlib.h>

#define SAMPLE_V 65024
#define SAMPLE_W 64
#define SAMPLE_TARGET_US 50.0

typedef struct sample_arg {
    m40_tensor *logits, *history, *pos, *out, *copy_dst;
    m40_sampler_desc d;
    int with_history, copy;
} sample_arg;

static m40_status sample_op(bench_env *e, void *arg) {
    sample_arg *a = arg;
    if (a->copy)
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_get_data(a->copy_dst),
                                     m40_tensor_get_data(a->logits),
                                     m40_tensor_get_nbytes(a->logits));
    return m40_sample(e->ctx, &a->d, a->logits, a->with_history ? a->history : NULL, a->pos,
                      a->out);
}

static void sample_case(bench_env *e, sample_arg *a, const char *name, const char *label,
                        const char *base_impl, double base_value, int64_t N, int graph) {
    double bytes = (double)N * SAMPLE_V * 4;
    m40__bench_result *r = new_result(e, "sample", name, label, "GB/s");
    if (!r) return;
    r->batch = (double)N;
    r->work = bytes; /* the logits, read once */
    if (base_impl[0]) {
        snprintf(r->baseline, sizeof r->baseline, "%.39s", base_impl);
        r->baseline_value = base_value;
    }
    if ((graph ? measure_graph(e, sample_op, a, r) : measure(e, sample_op, a, r)) != 0) {
        e->failed = 1;
        return;
    }
    if (e->text) {
        print_result(r);
        double us = r->t_ms.median * 1e3;
        printf("      %.1f us per call%s, %.1f us per row; target <= %.0f us per call "
               "(one block per row): %s\n", us, graph ? " in a graph" : "", us / (double)N,
               SAMPLE_TARGET_US,
               !e->info.is_gpu ? "n/a on the CPU" : us <= SAMPLE_TARGET_US ? "met" : "MISSED");
    }
}

/* The copy baseline, timed per call (graph 0) or in a captured graph (1);
** its impl into impl (empty when not measured). */
static double copy_base(bench_env *e, sample_arg *a, const char *label, int64_t N, int graph,
                        char *impl, size_t n) {
    double v = 0;
    impl[0] = 0;
    a->copy = 1;
    m40__bench_result *base = new_result(e, "sample", "device copy", label, "GB/s");
    if (base) {
        base->batch = (double)N;
        base->work = 2.0 * (double)N * SAMPLE_V * 4;
        if ((graph ? measure_graph(e, sample_op, a, base) : measure(e, sample_op, a, base)) == 0) {
            v = base->value;
            snprintf(impl, n, "%.39s", base->impl);
            if (e->text) print_result(base);
        } else {
            e->failed = 1;
        }
    }
    a->copy = 0;
    return v;
}

int run_sample(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    for (int i = 0; i < ns; i++)
        if (sz[i][0] > 4096) ns = -1;
    if (ns <= 0) {
        fprintf(stderr, "m40-bench sample: --sizes takes row counts in 1..4096, e.g. 1,8\n");
        return 2;
    }
    for (int i = 0; i < ns; i++) {
        int64_t N = sz[i][0], ls[2] = {N, SAMPLE_V}, hs[2] = {N, SAMPLE_W}, ps[1] = {N},
                os[2] = {N, 2};
        sample_arg a = {0};
        int32_t *h = malloc((size_t)(N * SAMPLE_W) * sizeof *h), *p = malloc((size_t)N * sizeof *p);
        bool ok = h && p && m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ls, &a.logits) == M40_OK &&
                  m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ls, &a.copy_dst) == M40_OK &&
                  m40_tensor_new(e->ctx, M40_DTYPE_I32, 2, hs, &a.history) == M40_OK &&
                  m40_tensor_new(e->ctx, M40_DTYPE_I32, 1, ps, &a.pos) == M40_OK &&
                  m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, os, &a.out) == M40_OK &&
                  /* logits of a trained model spread over about ±10 */
                  m40_fill_random(e->ctx, 11, M40_RANDOM_NORMAL, 0, 3, a.logits) == M40_OK;
        if (ok) {
            uint64_t s = 0x9E3779B97F4A7C15ull;
            for (int64_t k = 0; k < N * SAMPLE_W; k++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                h[k] = (int32_t)(s % SAMPLE_V);
            }
            for (int64_t b = 0; b < N; b++) p[b] = (int32_t)(100 + b);
            ok = m40_tensor_upload(e->ctx, a.history, h, (size_t)(N * SAMPLE_W) * 4) == M40_OK &&
                 m40_tensor_upload(e->ctx, a.pos, p, (size_t)N * 4) == M40_OK;
        }
        char label[32];
        snprintf(label, sizeof label, "%lldx%d", (long long)N, SAMPLE_V);
        if (!ok) {
            fprintf(stderr, "m40-bench sample %s: %s\n", label,
                    h && p ? m40_errmsg(e->ctx) : "out of memory");
            e->failed = 1;
            goto next;
        }
        char base_impl[2][40] = {"", ""};
        double base_value[2] = {0, 0};
        const int modes = e->info.is_gpu && e->o->graph_calls > 0 ? 2 : 1;
        if (e->info.is_gpu)
            for (int g = 0; g < modes; g++)
                base_value[g] = copy_base(e, &a, label, N, g, base_impl[g], sizeof base_impl[g]);
        for (int c = 0; c < 5; c++) {
            static const char *names[5] = {"greedy", "top-k 40", "top-p 0.8 T 0.8", "min-p 0.05",
                                           "top-p+penalty 64"};
            m40_sampler_desc_init(&a.d);
            a.d.seed = 1;
            a.with_history = 0;
            switch (c) {
            case 0: a.d.temperature = 0; break;
            case 1: a.d.top_k = 40; break;
            case 2: a.d.temperature = 0.8f, a.d.top_p = 0.8f; break;
            case 3: a.d.min_p = 0.05f; break;
            default:
                a.d.temperature = 0.8f, a.d.top_p = 0.8f, a.d.repetition_penalty = 1.1f;
                a.with_history = 1;
            }
            /* M40_SAMPLE_AB=1: each case with each kernel (4, 3, 1, 0;
            ** kernels/sample.h: m40k_sample_variant), for A/B in one run */
            static const char *vname[5] = {" [v0 radix]", " [v1 sort]", "", " [v3 grid]",
                                           " [v4 narrow]"};
            static const int vorder[4] = {4, 3, 1, 0};
            const int ab = e->info.is_gpu && getenv("M40_SAMPLE_AB") ? 4 : 1;
            const int v0 = m40k_sample_variant;
            for (int v = 0; v < ab; v++) {
                char name[64];
                m40k_sample_variant = ab == 1 ? v0 : vorder[v];
                snprintf(name, sizeof name, "%s%s", names[c], ab == 1 ? "" : vname[m40k_sample_variant]);
                for (int g = 0; g < modes; g++)
                    sample_case(e, &a, name, label, base_impl[g], base_value[g], N, g);
            }
            m40k_sample_variant = v0;
        }
    next:
        m40_tensor_destroy(a.logits);
        m40_tensor_destroy(a.copy_dst);
        m40_tensor_destroy(a.history);
        m40_tensor_destroy(a.pos);
        m40_tensor_destroy(a.out);
        free(h);
        free(p);
    }
    return 0;
}
