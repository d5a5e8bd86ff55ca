/* m40-bench: timed workloads with honest numbers. Each result states the
** achieved figure, its ratio to a baseline measured in the same run, the
** percentage of the Tesla M40's limit with the formula, the spread of the
** repeats, and what the card was doing meanwhile (clocks, temperature,
** power, throttle reasons from an NVML sampler thread); a result measured
** while the card was slowed down (thermal/power) is marked THROTTLED.
**
**   m40-bench <command> [--warmup N] [--repeats N] [--sizes LIST] [--device N]
**                       [--json[=FILE]] [--csv[=FILE]] [--no-telemetry] [--cpu]
**
** Exit status: 0 measured, 1 a measurement or check failed, 2 usage or
** "not implemented yet", 77 no usable GPU (nothing measured: "skipped").
**
** To add a workload: write `static int run_<name>(bench_env *e)` that calls
** measure() per size and add a row to `commands` below. */
#define _POSIX_C_SOURCE 200809L
#include <m40/m40.h>

#include <m40/quant.h>

#include "bench/bench.h"
#include "bench/sampler.h"
#ifdef M40B_HAVE_RESNET
#include "resnet.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define M40B_SKIP 77
#define M40B_MAX_SIZES 32
#define M40B_MAX_REPEATS 10000

typedef struct bench_opts {
    int warmup, repeats, device, telemetry, cpu;
    int layouts; /* bit (1 << m40_layout): which layouts conv and resnet50 run */
    const char *sizes;
    const char *json, *csv; /* NULL: off; "-": stdout instead of text */
} bench_opts;

typedef struct bench_env {
    const bench_opts *o;
    const char *command;
    m40_ctx *ctx;
    m40_device_info info;
    bool is_m40;
    m40b_sampler *smp;
    m40__bench_result *res;
    int nres, cap;
    bool text; /* print result lines to stdout */
    int failed;
} bench_env;

static m40_location side_of(const bench_env *e) {
    return e->info.is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST;
}

/* ---- measuring ------------------------------------------------------------- */

typedef m40_status (*op_fn)(bench_env *e, void *arg);

/* Runs op warmup + repeats times, timing each repeat with CUDA events, and
** fills r's time statistics and telemetry. Returns 0 on success. */
static int measure(bench_env *e, op_fn op, void *arg, m40__bench_result *r) {
    int n = e->o->repeats;
    double *t = calloc((size_t)n, sizeof *t);
    m40__evtimer tm;
    int rc = 1;
    if (!t || m40__evtimer_create(e->ctx, &tm) != M40_OK) {
        fprintf(stderr, "m40-bench: timer: %s\n", m40_errmsg(e->ctx));
        free(t);
        return 1;
    }
    for (int i = 0; i < e->o->warmup; i++)
        if (op(e, arg) != M40_OK) goto fail;
    if (m40_ctx_sync(e->ctx) != M40_OK) goto fail;
    int mark = m40b_sampler_mark(e->smp);
    for (int i = 0; i < n; i++) {
        if (m40__evtimer_start(&tm) != M40_OK || op(e, arg) != M40_OK ||
            m40__evtimer_stop(&tm) != M40_OK || m40__evtimer_ms(&tm, &t[i]) != M40_OK)
            goto fail;
    }
    if (e->smp) {
        m40b_sampler_window(e->smp, mark, &r->tele);
        r->has_tele = true;
    }
    m40__stats_compute(t, n, &r->t_ms);
    r->is_m40 = e->is_m40;
    m40__bench_finish(r);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "m40-bench: %s %s %s: %s\n", r->workload, r->impl, r->label,
            m40_errmsg(e->ctx));
done:
    m40__evtimer_destroy(&tm);
    free(t);
    return rc;
}

static void print_result(const m40__bench_result *r) {
    char formula[160], reasons[160];
    m40__bench_m40_floor(r, formula, sizeof formula);
    printf("%-5s %-16s %-22s %10.1f %-7s median %8.4f ms (min %.4f max %.4f IQR %.4f, n=%d)",
           r->workload, r->label, r->impl, r->value, r->unit, r->t_ms.median, r->t_ms.min,
           r->t_ms.max, r->t_ms.iqr, r->t_ms.n);
    if (r->baseline[0] && r->baseline_value > 0)
        printf("  %.3fx %s", r->value / r->baseline_value, r->baseline);
    else
        printf("  (baseline)");
    if (r->max_rel_err >= 0) printf("  max_rel_err %.2g", r->max_rel_err);
    printf("\n");
    double lim = strcmp(r->unit, "GFLOP/s") == 0 ? M40__M40_GFLOPS : M40__M40_GBS;
    printf("      M40: %.1f%% of %.0f %s%s; M40 floor %s", 100.0 * r->value / lim, lim, r->unit,
           r->is_m40 ? "" : " (not measured on an M40)", formula);
    if (r->has_tele) {
        const m40__tele_summary *s = &r->tele;
        m40__throttle_names(s->reasons, reasons, sizeof reasons);
        printf("\n      card: SM %u-%u MHz, mem %u MHz, %u C max", s->sm_min, s->sm_max,
               s->mem_max, s->temp_max);
        if (s->power_max >= 0) printf(", %.0f W max", s->power_max);
        printf(", %d samples, reasons %s%s", s->n, reasons,
               s->throttled ? "  ** THROTTLED: figure below what the card can do **" : "");
    }
    printf("\n");
}

static m40__bench_result *new_result(bench_env *e, const char *workload, const char *impl,
                                     const char *label, const char *unit) {
    if (e->nres == e->cap) {
        int cap = e->cap ? 2 * e->cap : 16;
        m40__bench_result *p = realloc(e->res, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        e->res = p;
        e->cap = cap;
    }
    m40__bench_result *r = &e->res[e->nres++];
    memset(r, 0, sizeof *r);
    snprintf(r->workload, sizeof r->workload, "%s", workload);
    snprintf(r->impl, sizeof r->impl, "%s", impl);
    snprintf(r->label, sizeof r->label, "%s", label);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->max_rel_err = -1;
    return r;
}

/* Parses a comma-separated list of sizes, each "A" or "AxBxC". */
static int parse_sizes(const char *list, int64_t dims[][3], int max) {
    int n = 0;
    const char *p = list;
    while (p && *p && n < max) {
        char *end;
        int64_t a = strtoll(p, &end, 10), b = a, c = a;
        if (end == p || a < 1) return -1;
        if (*end == 'x') {
            p = end + 1;
            b = strtoll(p, &end, 10);
            if (end == p || *end != 'x' || b < 1) return -1;
            p = end + 1;
            c = strtoll(p, &end, 10);
            if (end == p || c < 1) return -1;
        }
        dims[n][0] = a;
        dims[n][1] = b;
        dims[n][2] = c;
        n++;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return n;
}

/* ---- copy: device-to-device bandwidth ------------------------------------ */

typedef struct copy_arg {
    m40_tensor *src, *dst;
    int use_memcpy;
} copy_arg;

static m40_status copy_op(bench_env *e, void *arg) {
    copy_arg *a = arg;
    if (a->use_memcpy)
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_data(a->dst), m40_tensor_data(a->src),
                                     m40_tensor_nbytes(a->src));
    return m40_tensor_copy(e->ctx, a->dst, a->src);
}

static int run_copy(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench copy: --sizes takes MiB counts, e.g. 1,64,1024\n");
        return 2;
    }
    for (int i = 0; i < ns; i++) {
        int64_t mib = sz[i][0], n[1] = {mib * 262144};
        copy_arg a = {0};
        if (m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &a.src) != M40_OK ||
            m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &a.dst) != M40_OK ||
            m40_fill_random(e->ctx, a.src, 7, M40_RANDOM_UNIFORM, -1, 1) != M40_OK) {
            fprintf(stderr, "m40-bench copy %lld MiB: %s\n", (long long)mib, m40_errmsg(e->ctx));
            m40_tensor_free(a.src);
            m40_tensor_free(a.dst);
            e->failed = 1;
            continue;
        }
        char label[32];
        snprintf(label, sizeof label, "%lldMiB", (long long)mib);
        m40__bench_result *base = NULL;
        double base_value = 0;
        if (e->info.is_gpu) { /* baseline: a plain cudaMemcpyAsync */
            a.use_memcpy = 1;
            base = new_result(e, "copy", "cudaMemcpy", label, "GB/s");
            if (base) {
                base->batch = (double)mib;
                base->work = 2.0 * (double)m40_tensor_nbytes(a.src);
                if (measure(e, copy_op, &a, base) == 0) base_value = base->value;
                else e->failed = 1;
                if (e->text) print_result(base);
            }
        }
        a.use_memcpy = 0;
        m40__bench_result *r = new_result(e, "copy", "m40_tensor_copy", label, "GB/s");
        if (r) {
            r->batch = (double)mib;
            r->work = 2.0 * (double)m40_tensor_nbytes(a.src);
            if (base) {
                snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
                r->baseline_value = base_value;
            }
            if (measure(e, copy_op, &a, r) != 0) e->failed = 1;
            uint32_t c1 = 0, c2 = 1;
            if (m40_tensor_crc32(e->ctx, a.src, &c1) == M40_OK &&
                m40_tensor_crc32(e->ctx, a.dst, &c2) == M40_OK) {
                r->max_rel_err = c1 == c2 ? 0 : 1;
                if (c1 != c2) {
                    fprintf(stderr, "m40-bench copy %s: destination differs from source\n", label);
                    e->failed = 1;
                }
            }
            if (e->text) print_result(r);
        }
        m40_tensor_free(a.src);
        m40_tensor_free(a.dst);
    }
    return 0;
}

/* ---- gemm: y[M,N] = x[M,K]·w[N,K]ᵀ, m40_matmul vs cuBLAS -------------------- */

typedef struct gemm_arg {
    m40_tensor *x, *w, *y;
    int cublas;
} gemm_arg;

static m40_status gemm_op(bench_env *e, void *arg) {
    gemm_arg *a = arg;
    if (a->cublas) return m40__bench_cublas_linear(e->ctx, a->x, a->w, a->y);
    return m40_matmul(e->ctx, a->x, a->w, NULL, a->y);
}

/* max |a-b| / max |b| over two downloaded outputs */
static double rel_err(bench_env *e, m40_tensor *got, m40_tensor *ref) {
    size_t nb = m40_tensor_nbytes(ref);
    float *g = malloc(nb), *r = malloc(nb);
    double d = -1, m = 0;
    if (g && r && m40_tensor_download(e->ctx, got, g, nb) == M40_OK &&
        m40_tensor_download(e->ctx, ref, r, nb) == M40_OK) {
        d = 0;
        for (size_t i = 0; i < nb / sizeof(float); i++) {
            double x = fabs((double)g[i] - r[i]);
            if (!(x <= d)) d = x;
            if (fabs(r[i]) > m) m = fabs(r[i]);
        }
        d = m > 0 ? d / m : d;
    }
    free(g);
    free(r);
    return d;
}

static int run_gemm(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench gemm: --sizes takes MxNxK or N (square), e.g. 1x4096x4096,4096\n");
        return 2;
    }
    for (int i = 0; i < ns; i++) {
        int64_t M = sz[i][0], N = sz[i][1], K = sz[i][2];
        int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
        gemm_arg a = {0};
        m40_tensor *y2 = NULL;
        char label[64];
        snprintf(label, sizeof label, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
        if (m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, xs, &a.x) != M40_OK ||
            m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ws, &a.w) != M40_OK ||
            m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ys, &a.y) != M40_OK ||
            m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ys, &y2) != M40_OK ||
            m40_fill_random(e->ctx, a.x, 1, M40_RANDOM_UNIFORM, -1, 1) != M40_OK ||
            m40_fill_random(e->ctx, a.w, 2, M40_RANDOM_UNIFORM, -1, 1) != M40_OK) {
            fprintf(stderr, "m40-bench gemm %s: %s\n", label, m40_errmsg(e->ctx));
            e->failed = 1;
            goto next;
        }
        double work = 2.0 * (double)M * (double)N * (double)K;
        m40__bench_result *base = NULL;
        double base_value = 0;
        if (e->info.is_gpu) {
            a.cublas = 1;
            base = new_result(e, "gemm", "cublas", label, "GFLOP/s");
            if (base) {
                base->batch = (double)M;
                base->m = M, base->n = N, base->k = K;
                base->work = work;
                if (measure(e, gemm_op, &a, base) == 0) base_value = base->value;
                else e->failed = 1;
                if (e->text) print_result(base);
            }
        }
        /* keep the cuBLAS output to check ours against */
        m40_tensor *keep = a.y;
        a.y = y2;
        a.cublas = 0;
        m40__bench_result *r = new_result(e, "gemm", "m40_matmul", label, "GFLOP/s");
        if (r) {
            r->batch = (double)M;
            r->m = M, r->n = N, r->k = K;
            r->work = work;
            if (base) {
                snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
                r->baseline_value = base_value;
            }
            if (measure(e, gemm_op, &a, r) != 0) e->failed = 1;
            if (base && base_value > 0) {
                r->max_rel_err = rel_err(e, y2, keep);
                /* both FP32; K-term sums in different orders differ ~1e-6 */
                if (!(r->max_rel_err >= 0 && r->max_rel_err < 1e-4)) {
                    fprintf(stderr, "m40-bench gemm %s: m40_matmul differs from cuBLAS "
                                    "(max rel err %.3g)\n", label, r->max_rel_err);
                    e->failed = 1;
                }
            }
            if (e->text) print_result(r);
        }
        a.y = keep;
    next:
        m40_tensor_free(a.x);
        m40_tensor_free(a.w);
        m40_tensor_free(a.y);
        m40_tensor_free(y2);
    }
    return 0;
}

/* ---- gemv: weight-only quantized y = x·Wᵀ, effective bandwidth --------------- */

typedef struct gemv_arg {
    m40_tensor *x, *y, *data, *scale, *copy_dst;
    m40_qweight w;
    int copy;
} gemv_arg;

static m40_status gemv_op(bench_env *e, void *arg) {
    gemv_arg *a = arg;
    if (a->copy) /* the baseline: stream the same bytes through a device copy */
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_data(a->copy_dst),
                                     m40_tensor_data(a->data), m40_tensor_nbytes(a->data));
    return m40_quant_linear(e->ctx, a->x, &a->w, NULL, a->y);
}

/* Random bytes into a device tensor (quantized codes need no quantizer to be timed). */
static m40_status upload_random(bench_env *e, m40_tensor *t, uint64_t seed) {
    size_t n = m40_tensor_nbytes(t);
    unsigned char *b = malloc(n ? n : 1);
    if (!b) return M40_ERR_OOM_HOST;
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        b[i] = (unsigned char)seed;
    }
    m40_status st = m40_tensor_upload(e->ctx, t, b, n);
    free(b);
    return st;
}

static int run_gemv(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench gemv: --sizes takes MxNxK (M rows of x, W [N,K]), e.g. 1x4096x4096\n");
        return 2;
    }
    static const m40_quant_format fmts[3] = {{M40_DTYPE_Q8, 0, M40_DTYPE_F16},
                                             {M40_DTYPE_Q4, 0, M40_DTYPE_F16},
                                             {M40_DTYPE_F16, 0, M40_DTYPE_F16}};
    for (int i = 0; i < ns; i++)
        for (int f = 0; f < 3; f++) {
            int64_t M = sz[i][0], N = sz[i][1], K = sz[i][2], xs[2] = {M, K}, ys[2] = {M, N};
            gemv_arg a = {0};
            m40_tensor_desc dd, sd;
            char label[64];
            snprintf(label, sizeof label, "%lldx%lldx%lld %s", (long long)M, (long long)N,
                     (long long)K, m40_quant_format_name(&fmts[f]));
            a.w.fmt = fmts[f];
            a.w.n = N;
            a.w.k = K;
            bool ok = m40_quant_descs(&fmts[f], N, K, &dd, &sd) == M40_OK &&
                      m40_tensor_create(e->ctx, &dd, side_of(e), &a.data) == M40_OK &&
                      m40_tensor_create(e->ctx, &dd, side_of(e), &a.copy_dst) == M40_OK &&
                      upload_random(e, a.data, 0x9E3779B97F4A7C15ull + (uint64_t)f) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, xs, &a.x) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, ys, &a.y) == M40_OK &&
                      m40_fill_random(e->ctx, a.x, 3, M40_RANDOM_UNIFORM, -1, 1) == M40_OK;
            if (ok && fmts[f].wtype != M40_DTYPE_F16)
                ok = m40_tensor_create(e->ctx, &sd, side_of(e), &a.scale) == M40_OK &&
                     m40_fill_random(e->ctx, a.scale, 4, M40_RANDOM_UNIFORM, 1e-3f, 1e-2f) == M40_OK;
            if (ok && fmts[f].wtype == M40_DTYPE_F16) /* f16 codes must be finite numbers */
                ok = m40_fill_random(e->ctx, a.data, 5, M40_RANDOM_UNIFORM, -1, 1) == M40_OK;
            a.w.data = a.data;
            a.w.scale = a.scale;
            double bytes = (double)m40_quant_nbytes(&fmts[f], N, K);
            if (!ok) {
                fprintf(stderr, "m40-bench gemv %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                goto next;
            }
            m40__bench_result *base = NULL;
            double base_value = 0;
            if (e->info.is_gpu) {
                a.copy = 1;
                base = new_result(e, "gemv", "device copy", label, "GB/s");
                if (base) {
                    base->batch = (double)M;
                    base->m = M, base->n = N, base->k = K;
                    base->work = 2.0 * (double)m40_tensor_nbytes(a.data); /* read + write */
                    if (measure(e, gemv_op, &a, base) == 0) base_value = base->value;
                    else e->failed = 1;
                    if (e->text) print_result(base);
                }
            }
            a.copy = 0;
            m40__bench_result *r = new_result(e, "gemv", "m40_quant_linear", label, "GB/s");
            if (r) {
                r->batch = (double)M;
                r->m = M, r->n = N, r->k = K;
                r->work = bytes; /* effective: weight + scale bytes read once */
                if (base) {
                    snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
                    r->baseline_value = base_value;
                }
                if (measure(e, gemv_op, &a, r) != 0) e->failed = 1;
                if (e->text) print_result(r);
            }
        next:
            m40_tensor_free(a.x);
            m40_tensor_free(a.y);
            m40_tensor_free(a.data);
            m40_tensor_free(a.scale);
            m40_tensor_free(a.copy_dst);
        }
    return 0;
}

/* ---- conv: ResNet-50's convolutions, m40_conv2d vs a GEMM of the same FLOPs --- */

typedef struct conv_arg {
    m40_conv2d_desc d;
    m40_tensor *x, *w, *b, *y, *xn, *wn, *yn, *ga, *gb, *gc;
    int gemm;
} conv_arg;

static m40_status conv_op(bench_env *e, void *arg) {
    conv_arg *a = arg;
    if (a->gemm) return m40_matmul(e->ctx, a->ga, a->gb, NULL, a->gc);
    if (a->d.layout == M40_LAYOUT_NHWC)
        return m40_conv2d(e->ctx, &a->d, a->xn, a->wn, NULL, a->b, NULL, a->yn);
    return m40_conv2d(e->ctx, &a->d, a->x, a->w, NULL, a->b, NULL, a->y);
}

static int run_conv(bench_env *e) {
    /* H(=W) C K R stride: every distinct conv of torchvision's ResNet-50 at 224x224 */
    static const int L[][5] = {{224, 3, 64, 7, 2},   {56, 64, 64, 1, 1},    {56, 64, 64, 3, 1},
                               {56, 64, 256, 1, 1},  {56, 256, 64, 1, 1},   {56, 256, 128, 1, 1},
                               {56, 128, 128, 3, 2}, {28, 128, 512, 1, 1},  {56, 256, 512, 1, 2},
                               {28, 512, 128, 1, 1}, {28, 128, 128, 3, 1},  {28, 512, 256, 1, 1},
                               {28, 256, 256, 3, 2}, {14, 256, 1024, 1, 1}, {28, 512, 1024, 1, 2},
                               {14, 1024, 256, 1, 1}, {14, 256, 256, 3, 1}, {14, 1024, 512, 1, 1},
                               {14, 512, 512, 3, 2}, {7, 512, 2048, 1, 1},  {14, 1024, 2048, 1, 2},
                               {7, 2048, 512, 1, 1}, {7, 512, 512, 3, 1}};
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench conv: --sizes takes batch sizes, e.g. 1,32\n");
        return 2;
    }
    for (int i = 0; i < ns; i++)
        for (size_t l = 0; l < sizeof L / sizeof L[0]; l++) {
            int64_t N = sz[i][0], H = L[l][0], C = L[l][1], K = L[l][2], R = L[l][3], s = L[l][4];
            int64_t P = (H + 2 * (R / 2) - R) / s + 1;
            int64_t xs[4] = {N, C, H, H}, ws[4] = {K, C, R, R}, bs[1] = {K}, ys[4] = {N, K, P, P};
            int64_t gas[2] = {N * P * P, C * R * R}, gbs[2] = {K, C * R * R}, gcs[2] = {N * P * P, K};
            conv_arg a = {0};
            m40_conv2d_desc_init(&a.d);
            a.d.stride_h = a.d.stride_w = (int)s;
            a.d.pad_h = a.d.pad_w = (int)(R / 2);
            a.d.relu = 1;
            char label[64];
            snprintf(label, sizeof label, "n%lld %lldx%lld %lld>%lld %lldx%lld/%lld", (long long)N,
                     (long long)H, (long long)H, (long long)C, (long long)K, (long long)R,
                     (long long)R, (long long)s);
            bool ok = m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, xs, &a.x) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, ws, &a.w) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, bs, &a.b) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, ys, &a.y) == M40_OK &&
                      m40_fill_random(e->ctx, a.x, 1, M40_RANDOM_UNIFORM, -1, 1) == M40_OK &&
                      m40_fill_random(e->ctx, a.w, 2, M40_RANDOM_UNIFORM, -1, 1) == M40_OK &&
                      m40_fill_random(e->ctx, a.b, 3, M40_RANDOM_UNIFORM, -1, 1) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gas, &a.ga) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gbs, &a.gb) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gcs, &a.gc) == M40_OK &&
                      m40_fill_random(e->ctx, a.ga, 4, M40_RANDOM_UNIFORM, -1, 1) == M40_OK &&
                      m40_fill_random(e->ctx, a.gb, 5, M40_RANDOM_UNIFORM, -1, 1) == M40_OK;
            int64_t xns[4] = {N, H, H, C}, wns[4] = {K, R, R, C}, yns[4] = {N, P, P, K};
            ok = ok && m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, xns, &a.xn) == M40_OK &&
                 m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, wns, &a.wn) == M40_OK &&
                 m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, yns, &a.yn) == M40_OK &&
                 m40_fill_random(e->ctx, a.xn, 1, M40_RANDOM_UNIFORM, -1, 1) == M40_OK &&
                 m40_fill_random(e->ctx, a.wn, 2, M40_RANDOM_UNIFORM, -1, 1) == M40_OK;
            double work = 2.0 * (double)(N * P * P) * (double)K * (double)(C * R * R);
            m40__bench_result *base = NULL, *r;
            double base_value = 0;
            if (!ok) {
                fprintf(stderr, "m40-bench conv %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                goto next;
            }
            a.gemm = 1;
            base = new_result(e, "conv", "m40_matmul same GEMM", label, "GFLOP/s");
            if (base) {
                base->batch = (double)N;
                base->m = N * P * P, base->n = K, base->k = C * R * R;
                base->work = work;
                if (measure(e, conv_op, &a, base) == 0) base_value = base->value;
                else e->failed = 1;
                if (e->text) print_result(base);
            }
            a.gemm = 0;
            for (int l = 0; l < 2; l++) {
            if (!(e->o->layouts & (1 << l))) continue;
            a.d.layout = (m40_layout)l;
            r = new_result(e, "conv", l ? "m40_conv2d NHWC" : "m40_conv2d NCHW", label, "GFLOP/s");
            if (r) {
                r->batch = (double)N;
                r->m = N * P * P, r->n = K, r->k = C * R * R;
                r->work = work;
                if (base) {
                    snprintf(r->baseline, sizeof r->baseline, "%s", base->impl);
                    r->baseline_value = base_value;
                }
                if (measure(e, conv_op, &a, r) != 0) e->failed = 1;
                if (e->text) print_result(r);
            }
            }
        next:
            m40_tensor_free(a.x); m40_tensor_free(a.w); m40_tensor_free(a.b); m40_tensor_free(a.y);
            m40_tensor_free(a.xn); m40_tensor_free(a.wn); m40_tensor_free(a.yn);
            m40_tensor_free(a.ga); m40_tensor_free(a.gb); m40_tensor_free(a.gc);
        }
    return 0;
}

/* ---- resnet50: the example's graph, images/s ------------------------------------ */

#ifdef M40B_HAVE_RESNET
static m40_status resnet_op(bench_env *e, void *arg) {
    (void)e;
    return m40_graph_run(((rn_model *)arg)->g);
}

static int run_resnet50(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench resnet50: --sizes takes batch sizes, e.g. 1,8,64\n");
        return 2;
    }
    rn_config cfg = rn_resnet50();
    for (int i = 0; i < ns; i++)
        for (int l = 1; l >= 0; l--) { /* NHWC (the fast path), then NCHW (direct kernel) */
            if (!(e->o->layouts & (1 << l))) continue;
            rn_model m;
            char err[512], label[32], impl[40];
            int N = (int)sz[i][0];
            m40_layout lay = (m40_layout)l;
            snprintf(label, sizeof label, "batch %d", N);
            if (rn_build(e->ctx, &cfg, NULL, 1, N, 224, 224, lay, NULL, &m, err, sizeof err) != M40_OK) {
                fprintf(stderr, "m40-bench resnet50 %s: %s\n", label, err);
                e->failed = 1;
                continue;
            }
            m40_tensor *in;
            if (m40_graph_get_tensor(m.g, m.input_id, &in) != M40_OK ||
                m40_fill_random(e->ctx, in, 9, M40_RANDOM_NORMAL, 0, 1) != M40_OK ||
                m40_graph_run(m.g) != M40_OK || m40_ctx_sync(e->ctx) != M40_OK) {
                fprintf(stderr, "m40-bench resnet50 %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                rn_free(&m);
                continue;
            }
            int graph = e->info.is_gpu && m40_graph_capture(m.g, 1) == M40_OK;
            snprintf(impl, sizeof impl, "m40 %s%s", l ? "NHWC" : "NCHW", graph ? " (CUDA graph)" : "");
            m40__bench_result *r = new_result(e, "resnet50", impl, label, "GFLOP/s");
            if (r) {
                r->batch = N;
                r->work = 8.18e9 * N; /* 8.18 GFLOP per 224x224 image */
                if (measure(e, resnet_op, &m, r) != 0) e->failed = 1;
                if (e->text) {
                    print_result(r);
                    printf("      = %.1f images/s (8.18 GFLOP/image); PyTorch side: "
                           "bench/bench_torch.py resnet50\n", r->value / 8.18);
                }
            }
            rn_free(&m);
        }
    return 0;
}
#endif

/* ---- the command table ------------------------------------------------------ */

typedef struct bench_cmd {
    const char *name;
    int (*run)(bench_env *e);  /* NULL: not implemented yet */
    int issue;                 /* the issue that brings it */
    const char *default_sizes;
    const char *help;
} bench_cmd;

static const bench_cmd commands[] = {
    {"copy", run_copy, 8, "1,8,64,256,1024",
     "device-to-device copy bandwidth (sizes in MiB): m40_tensor_copy vs cudaMemcpy"},
    {"gemm", run_gemm, 8,
     "1x4096x4096,8x4096x4096,32x4096x4096,128x4096x4096,512x4096x4096,2048x4096x4096,4096",
     "FP32 y[M,N] = x[M,K]·w[N,K]^T (sizes MxNxK or N): m40_matmul vs cuBLAS pedantic FP32"},
    {"conv", run_conv, 5, "1,32",
     "ResNet-50's 23 distinct convs at batch N (sizes): m40_conv2d (+bias+ReLU) NCHW and NHWC "
     "vs m40_matmul on the GEMM of the same FLOPs (cuDNN baseline: issue 5)"},
#ifdef M40B_HAVE_RESNET
    {"resnet50", run_resnet50, 5, "1,8,64",
     "ResNet-50 (examples/resnet50 graph, random weights, NHWC and NCHW) at batch N: GFLOP/s "
     "and images/s"},
#else
    {"resnet50", NULL, 5, NULL, "ResNet-50 inference (needs the example: libpng/libjpeg)"},
#endif
    {"gemv", run_gemv, 6,
     "1x4096x4096,1x27392x4096,1x65024x4096,8x27392x4096",
     "weight-only q8/q4/f16 y = x·W^T (sizes MxNxK): effective GB/s vs a device copy"},
    {"chatglm", NULL, 7, NULL, "ChatGLM2-6B decode, tokens/s"},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f) {
    fprintf(f, "usage: m40-bench <command> [options]\ncommands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s%s\n", commands[i].name, commands[i].help,
                commands[i].run ? "" : " (not implemented yet)");
    fprintf(f,
            "options:\n"
            "  --warmup N       untimed runs first (default 3)\n"
            "  --repeats N      timed runs; median, min/max and IQR are reported (default 20)\n"
            "  --sizes LIST     comma-separated sizes (see each command)\n"
            "  --device N       CUDA device (default 0)\n"
            "  --layout L       conv, resnet50: nhwc, nchw or both (default both)\n"
            "  --json[=FILE]    results as JSON (bench/compare.py reads it); bare: on stdout\n"
            "  --csv[=FILE]     results as CSV; bare: on stdout\n"
            "  --no-telemetry   do not sample NVML during measurements\n"
            "  --cpu            run on the CPU reference (tests the harness; no baselines)\n"
            "exit status: 0 ok, 1 a measurement or check failed, 2 usage or not implemented,\n"
            "             77 no usable GPU (nothing measured)\n");
}

static void iso_date(char *buf, size_t n) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

static int write_json(bench_env *e, FILE *f) {
    m40__jbuf j;
    char date[32];
    iso_date(date, sizeof date);
    m40__jb_init(&j);
    m40__jb_obj_begin(&j);
    m40__jb_kstr(&j, "schema", "m40-bench/1");
    m40__jb_kstr(&j, "tool", "m40-bench");
    m40__jb_kstr(&j, "command", e->command);
    m40__jb_kstr(&j, "date", date);
    m40__jb_key(&j, "device");
    m40__jb_obj_begin(&j);
    m40__jb_kstr(&j, "name", e->info.name);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", e->info.cc_major, e->info.cc_minor);
    m40__jb_kstr(&j, "cc", cc);
    m40__jb_kint(&j, "sm_count", e->info.sm_count);
    m40__jb_knum(&j, "mem_gib", e->info.total_bytes / 1073741824.0);
    m40__jb_kbool(&j, "is_m40", e->is_m40);
    m40__jb_kstr(&j, "driver", m40b_sampler_driver(e->smp));
    m40__jb_obj_end(&j);
    m40__jb_key(&j, "software");
    m40__jb_obj_begin(&j);
    m40__jb_kstr(&j, "libm40", m40_version());
    m40__jb_kstr(&j, "build", m40_build_info());
    m40__jb_obj_end(&j);
    m40__jb_key(&j, "options");
    m40__jb_obj_begin(&j);
    m40__jb_kint(&j, "warmup", e->o->warmup);
    m40__jb_kint(&j, "repeats", e->o->repeats);
    m40__jb_kstr(&j, "sizes", e->o->sizes);
    m40__jb_kstr(&j, "timing", e->info.is_gpu ? "cuda events per repeat" : "host clock");
    m40__jb_obj_end(&j);
    m40__jb_key(&j, "results");
    m40__jb_arr_begin(&j);
    for (int i = 0; i < e->nres; i++) m40__bench_result_json(&j, &e->res[i]);
    m40__jb_arr_end(&j);
    m40__jb_obj_end(&j);
    int ok = !j.oom && fprintf(f, "%s\n", j.p) > 0;
    m40__jb_free(&j);
    return ok ? 0 : 1;
}

static int write_csv(bench_env *e, FILE *f) {
    fprintf(f, "%s\n", m40__bench_csv_header());
    char line[1024];
    for (int i = 0; i < e->nres; i++) {
        m40__bench_result_csv(&e->res[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    return ferror(f) ? 1 : 0;
}

static int emit(bench_env *e, const char *dest, int (*fn)(bench_env *, FILE *)) {
    if (!dest) return 0;
    if (strcmp(dest, "-") == 0) return fn(e, stdout);
    FILE *f = fopen(dest, "w");
    if (!f) {
        fprintf(stderr, "m40-bench: cannot write %s\n", dest);
        return 1;
    }
    int rc = fn(e, f);
    if (fclose(f) != 0) rc = 1;
    return rc;
}

static int intarg(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return 1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const bench_cmd *cmd = NULL;
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) cmd = &commands[i];
    if (!cmd) {
        fprintf(stderr, "m40-bench: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    bench_opts o = {.warmup = 3, .repeats = 20, .device = 0, .telemetry = 1, .layouts = 3};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (strcmp(a, "--warmup") == 0 && i + 1 < argc) bad = intarg(argv[++i], 0, 1000, &o.warmup);
        else if (strcmp(a, "--repeats") == 0 && i + 1 < argc)
            bad = intarg(argv[++i], 1, M40B_MAX_REPEATS, &o.repeats);
        else if (strcmp(a, "--device") == 0 && i + 1 < argc)
            bad = intarg(argv[++i], 0, 1024, &o.device);
        else if (strcmp(a, "--sizes") == 0 && i + 1 < argc) o.sizes = argv[++i];
        else if (strcmp(a, "--layout") == 0 && i + 1 < argc) {
            const char *l = argv[++i];
            o.layouts = !strcmp(l, "nhwc") ? 1 << M40_LAYOUT_NHWC
                      : !strcmp(l, "nchw") ? 1 << M40_LAYOUT_NCHW
                      : !strcmp(l, "both") ? 3 : 0;
            bad = o.layouts == 0;
        }
        else if (strcmp(a, "--json") == 0) o.json = "-";
        else if (strncmp(a, "--json=", 7) == 0) o.json = a + 7;
        else if (strcmp(a, "--csv") == 0) o.csv = "-";
        else if (strncmp(a, "--csv=", 6) == 0) o.csv = a + 6;
        else if (strcmp(a, "--no-telemetry") == 0) o.telemetry = 0;
        else if (strcmp(a, "--cpu") == 0) o.cpu = 1;
        else bad = 1;
        if (bad) {
            fprintf(stderr, "m40-bench: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!cmd->run) {
        printf("m40-bench %s: not implemented yet (issue %d)\n", cmd->name, cmd->issue);
        return 2;
    }
    if (!o.sizes) o.sizes = cmd->default_sizes;
    if (o.json && o.csv && strcmp(o.json, "-") == 0 && strcmp(o.csv, "-") == 0) {
        fprintf(stderr, "m40-bench: --json and --csv cannot both go to stdout\n");
        return 2;
    }

    bench_env e = {.o = &o, .command = cmd->name};
    e.text = !(o.json && strcmp(o.json, "-") == 0) && !(o.csv && strcmp(o.csv, "-") == 0);
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = o.cpu ? M40_DEVICE_CPU : o.device;
    if (m40_ctx_create(&d, &e.ctx) != M40_OK) {
        fprintf(stderr, "m40-bench: no usable GPU: %s\nm40-bench: nothing measured (exit 77 = "
                        "skipped); run m40-doctor to see what is missing\n",
                m40_errmsg(e.ctx));
        m40_ctx_destroy(e.ctx);
        return M40B_SKIP;
    }
    if (m40_ctx_info(e.ctx, &e.info) != M40_OK) {
        fprintf(stderr, "m40-bench: %s\n", m40_errmsg(e.ctx));
        m40_ctx_destroy(e.ctx);
        return 1;
    }
    e.is_m40 = e.info.is_gpu && strstr(e.info.name, "M40") && e.info.cc_major == 5 &&
               e.info.cc_minor == 2;
    char why[256] = "";
    if (e.info.is_gpu && o.telemetry) {
        unsigned char u[16];
        char us[64];
        const char *up = NULL;
        if (m40__bench_device_uuid(e.ctx, u) == M40_OK) {
            m40__uuid_str(u, us, sizeof us);
            up = us;
        }
        e.smp = m40b_sampler_start(up, o.device, 10, why, sizeof why);
    }
    if (e.text) {
        printf("m40-bench %s on %s (cc %d.%d, %d SMs), libm40 %s (%s)\n", cmd->name, e.info.name,
               e.info.cc_major, e.info.cc_minor, e.info.sm_count, m40_version(), m40_build_info());
        if (!e.info.is_gpu)
            printf("NOTICE: CPU reference run (--cpu): these are CPU numbers, no baselines\n");
        printf("timing: %s, %d warm-up + %d timed repeats\n",
               e.info.is_gpu ? "CUDA events around each repeat" : "host clock", o.warmup,
               o.repeats);
        if (e.smp)
            printf("telemetry: NVML every 10 ms (driver %s)\n", m40b_sampler_driver(e.smp));
        else
            printf("telemetry: off%s%s%s\n", why[0] ? " (" : "", why, why[0] ? ")" : "");
    }
    int rc = cmd->run(&e);
    if (rc == 0 && e.failed) rc = 1;
    if (emit(&e, o.json, write_json) || emit(&e, o.csv, write_csv)) rc = rc ? rc : 1;
    m40b_sampler_stop(e.smp);
    free(e.res);
    m40_ctx_destroy(e.ctx);
    return rc;
}
