/* m40-bench norm: the small transformer ops at ChatGLM2's widths, N rows
** (--sizes, default 1,64,512), each against a same-run device copy of the
** same bytes (read + written):
**   rmsnorm      x [N,4096] -> y, w f16 [4096]             8 B/elem
**   rmsnorm+res  x += r; y = norm(x)·w                      16 B/elem
**   rope         a qkv row [N,4608]: 34 heads of 128, 64 rotated, in place
**                (bytes: the rotated values read + written)
**   swiglu       x [N,27392] -> y [N,13696]                 12 B/output
**   embedding    ids [N] -> y [N,4096] from an f16 table [65024,4096]
** GB/s, the ratio to the copy, and the M40 projection: the same bytes at
** 288 GB/s (a projection, not a measurement, unless run on an M40). */
#include "bench/harness.h"

#include <m40/transformer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GLM_C = 4096, GLM_QKV = 4608, GLM_F = 13696, GLM_V = 65024 };
enum { K_RMS, K_RMS_RES, K_ROPE, K_SWIGLU, K_EMB, K_COUNT };
static const char *const kname[K_COUNT] = {"rmsnorm", "rmsnorm+res", "rope", "swiglu",
                                           "embedding f16"};

typedef struct norm_arg {
    int kind, copy;
    m40_tensor *x, *r, *w, *y, *pos, *ids, *table;
    m40_tensor *csrc, *cdst; /* the baseline's copy */
    size_t cbytes;
    m40_rope_desc rd;
} norm_arg;

static m40_status norm_op(bench_env *e, void *arg) {
    norm_arg *a = arg;
    if (a->copy)
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_get_data(a->cdst),
                                     m40_tensor_get_data(a->csrc), a->cbytes);
    switch (a->kind) {
    case K_RMS: return m40_rmsnorm(e->ctx, 1e-5f, a->x, a->w, NULL, a->y);
    case K_RMS_RES: return m40_rmsnorm(e->ctx, 1e-5f, a->x, a->w, a->r, a->y);
    case K_ROPE: return m40_rope(e->ctx, &a->rd, a->x, a->pos);
    case K_SWIGLU: return m40_swiglu(e->ctx, a->x, a->y);
    default: return m40_embedding(e->ctx, a->ids, a->table, a->y);
    }
}

static m40_tensor *new_t(bench_env *e, m40_dtype dt, int nd, int64_t a, int64_t b, bool *ok) {
    int64_t s[2] = {a, b};
    m40_tensor *t = NULL;
    if (*ok && m40_tensor_new(e->ctx, dt, nd, s, &t) != M40_OK) *ok = false;
    if (*ok && dt != M40_DTYPE_I32 &&
        m40_fill_random(e->ctx, 11, M40_RANDOM_UNIFORM, -1, 1, t) != M40_OK)
        *ok = false;
    return t;
}

/* The tensors of kind k at N rows; returns the bytes one call moves (0 on failure). */
static double setup(bench_env *e, norm_arg *a, int64_t N, bool *ok) {
    switch (a->kind) {
    case K_RMS:
    case K_RMS_RES:
        a->x = new_t(e, M40_DTYPE_F32, 2, N, GLM_C, ok);
        a->y = new_t(e, M40_DTYPE_F32, 2, N, GLM_C, ok);
        a->w = new_t(e, M40_DTYPE_F16, 1, GLM_C, 0, ok);
        if (a->kind == K_RMS) return (double)N * GLM_C * 8 + GLM_C * 2;
        a->r = new_t(e, M40_DTYPE_F32, 2, N, GLM_C, ok);
        return (double)N * GLM_C * 16 + GLM_C * 2;
    case K_ROPE: {
        a->x = new_t(e, M40_DTYPE_F32, 2, N, GLM_QKV, ok);
        a->pos = new_t(e, M40_DTYPE_I32, 1, N, 0, ok);
        m40_rope_desc_init(&a->rd);
        a->rd.heads = 34, a->rd.head_dim = 128, a->rd.rope_dims = 64;
        int32_t *p = malloc(sizeof(int32_t) * (size_t)N);
        if (!p) *ok = false;
        for (int64_t i = 0; *ok && i < N; i++) p[i] = (int32_t)((i * 2654435761u) % 4096);
        if (*ok && m40_tensor_upload(e->ctx, a->pos, p, sizeof(int32_t) * (size_t)N) != M40_OK)
            *ok = false;
        free(p);
        return (double)N * 34 * 64 * 4 * 2 + (double)N * 4;
    }
    case K_SWIGLU:
        a->x = new_t(e, M40_DTYPE_F32, 2, N, 2 * GLM_F, ok);
        a->y = new_t(e, M40_DTYPE_F32, 2, N, GLM_F, ok);
        return (double)N * GLM_F * 12;
    default: {
        a->table = new_t(e, M40_DTYPE_F16, 2, GLM_V, GLM_C, ok);
        a->ids = new_t(e, M40_DTYPE_I32, 1, N, 0, ok);
        a->y = new_t(e, M40_DTYPE_F32, 2, N, GLM_C, ok);
        int32_t *p = malloc(sizeof(int32_t) * (size_t)N);
        if (!p) *ok = false;
        for (int64_t i = 0; *ok && i < N; i++) p[i] = (int32_t)((i * 2654435761u) % GLM_V);
        if (*ok && m40_tensor_upload(e->ctx, a->ids, p, sizeof(int32_t) * (size_t)N) != M40_OK)
            *ok = false;
        free(p);
        return (double)N * GLM_C * 6 + (double)N * 4;
    }
    }
}

static void release(norm_arg *a) {
    m40_tensor *all[] = {a->x, a->r, a->w, a->y, a->pos, a->ids, a->table, a->csrc, a->cdst};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
}

/* The op and the copy again, each as graph_calls calls captured in one CUDA
** graph: the device time a call costs inside a decode step (no host launch
** or events between calls; measure_graph). */
static void graph_pair(bench_env *e, norm_arg *a, const char *label, int64_t N, double bytes) {
    char base_impl[sizeof((m40__bench_result *)0)->impl] = "";
    double base_value = 0;
    a->copy = 1;
    m40__bench_result *base = new_result(e, "norm", "device copy", label, "GB/s");
    if (!base) return;
    base->batch = (double)N;
    base->work = 2.0 * (double)a->cbytes;
    if (measure_graph(e, norm_op, a, base) == 0) {
        base_value = base->value;
        snprintf(base_impl, sizeof base_impl, "%s", base->impl);
        if (e->text) print_result(base);
    } else {
        e->failed = 1;
    }
    a->copy = 0;
    m40__bench_result *r = new_result(e, "norm", kname[a->kind], label, "GB/s");
    if (!r) return;
    r->batch = (double)N;
    r->work = bytes;
    snprintf(r->baseline, sizeof r->baseline, "%s", base_impl);
    r->baseline_value = base_value;
    if (measure_graph(e, norm_op, a, r) != 0) e->failed = 1;
    else if (e->text) print_result(r);
}

int run_norm(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    for (int i = 0; i < ns; i++)
        if (sz[i][0] > (1 << 16)) ns = -1;
    if (ns <= 0) {
        fprintf(stderr, "m40-bench norm: --sizes takes row counts in 1..65536, e.g. 1,64,512\n");
        return 2;
    }
    for (int i = 0; i < ns; i++)
        for (int k = 0; k < K_COUNT; k++) {
            const int64_t N = sz[i][0];
            norm_arg a = {.kind = k};
            bool ok = true;
            double bytes = setup(e, &a, N, &ok);
            char label[64];
            snprintf(label, sizeof label, "%s N%lld", kname[k], (long long)N);
            /* the baseline copies the same bytes (half read, half written) */
            a.cbytes = ((size_t)(bytes / 2) + 255) / 256 * 256;
            if (ok && e->info.is_gpu) {
                int64_t n = (int64_t)(a.cbytes / 4);
                a.csrc = new_t(e, M40_DTYPE_F32, 1, n, 0, &ok);
                a.cdst = new_t(e, M40_DTYPE_F32, 1, n, 0, &ok);
            }
            if (!ok) {
                fprintf(stderr, "m40-bench norm %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                release(&a);
                continue;
            }
            m40__bench_result *base = NULL;
            double base_value = 0;
            if (e->info.is_gpu) {
                a.copy = 1;
                base = new_result(e, "norm", "device copy", label, "GB/s");
                if (base) {
                    base->batch = (double)N;
                    base->work = 2.0 * (double)a.cbytes;
                    if (measure(e, norm_op, &a, base) == 0) base_value = base->value;
                    else e->failed = 1;
                    if (e->text) print_result(base);
                }
            }
            a.copy = 0;
            m40__bench_result *r = new_result(e, "norm", kname[k], label, "GB/s");
            if (r) {
                r->batch = (double)N;
                r->work = bytes;
                if (base) {
                    snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
                    r->baseline_value = base_value;
                }
                if (measure(e, norm_op, &a, r) != 0) {
                    fprintf(stderr, "m40-bench norm %s: %s\n", label, m40_errmsg(e->ctx));
                    e->failed = 1;
                }
                if (e->text) {
                    print_result(r);
                    printf("      M40 projection (not a measurement): %.4g MB at 288 GB/s = "
                           "%.2f us\n", bytes / 1e6, bytes / 288e9 * 1e6);
                }
            }
            if (base && e->o->graph_calls > 0) graph_pair(e, &a, label, N, bytes);
            release(&a);
        }
    return 0;
}
