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
** To add a workload: write `int run_<name>(bench_env *e)` that calls
** measure() per size (tools/bench/harness.h) and add a row to `commands`
** below. The harness is in tools/bench/harness.c, the conv and ResNet-50
** workloads in tools/bench/nn.c. */
#define _POSIX_C_SOURCE 200809L
#include <m40/m40.h>

#include <m40/quant.h>

#include "bench/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- copy: device-to-device bandwidth ------------------------------------ */

typedef struct copy_arg {
    m40_tensor *src, *dst;
    int use_memcpy;
} copy_arg;

static m40_status copy_op(bench_env *e, void *arg) {
    copy_arg *a = arg;
    if (a->use_memcpy)
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_get_data(a->dst), m40_tensor_get_data(a->src),
                                     m40_tensor_get_nbytes(a->src));
    return m40_tensor_copy(e->ctx, a->dst, a->src);
}

#define COPY_MAX_MIB (1 << 20)

static int run_copy(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    /* 1 TiB per tensor is beyond any GPU's memory and keeps mib * 2^18 exact */
    for (int i = 0; i < ns; i++)
        if (sz[i][0] > COPY_MAX_MIB) ns = -1;
    if (ns <= 0) {
        fprintf(stderr, "m40-bench copy: --sizes takes MiB counts in 1..%d, e.g. 1,64,1024\n",
                COPY_MAX_MIB);
        return 2;
    }
    for (int i = 0; i < ns; i++) {
        int64_t mib = sz[i][0], n[1] = {mib * 262144};
        copy_arg a = {0};
        if (m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &a.src) != M40_OK ||
            m40_tensor_new(e->ctx, M40_DTYPE_F32, 1, n, &a.dst) != M40_OK ||
            m40_fill_random(e->ctx, 7, M40_RANDOM_UNIFORM, -1, 1, a.src) != M40_OK) {
            fprintf(stderr, "m40-bench copy %lld MiB: %s\n", (long long)mib, m40_errmsg(e->ctx));
            m40_tensor_destroy(a.src);
            m40_tensor_destroy(a.dst);
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
                base->work = 2.0 * (double)m40_tensor_get_nbytes(a.src);
                if (measure(e, copy_op, &a, base) == 0) base_value = base->value;
                else e->failed = 1;
                if (e->text) print_result(base);
            }
        }
        a.use_memcpy = 0;
        m40__bench_result *r = new_result(e, "copy", "m40_tensor_copy", label, "GB/s");
        if (r) {
            r->batch = (double)mib;
            r->work = 2.0 * (double)m40_tensor_get_nbytes(a.src);
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
        m40_tensor_destroy(a.src);
        m40_tensor_destroy(a.dst);
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
            m40_fill_random(e->ctx, 1, M40_RANDOM_UNIFORM, -1, 1, a.x) != M40_OK ||
            m40_fill_random(e->ctx, 2, M40_RANDOM_UNIFORM, -1, 1, a.w) != M40_OK) {
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
        m40_tensor_destroy(a.x);
        m40_tensor_destroy(a.w);
        m40_tensor_destroy(a.y);
        m40_tensor_destroy(y2);
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
        return m40__bench_memcpy_d2d(e->ctx, m40_tensor_get_data(a->copy_dst),
                                     m40_tensor_get_data(a->data), m40_tensor_get_nbytes(a->data));
    return m40_quant_linear(e->ctx, a->x, &a->w, NULL, a->y);
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
                      m40_fill_random(e->ctx, 3, M40_RANDOM_UNIFORM, -1, 1, a.x) == M40_OK;
            if (ok && fmts[f].wtype != M40_DTYPE_F16)
                ok = m40_tensor_create(e->ctx, &sd, side_of(e), &a.scale) == M40_OK &&
                     m40_fill_random(e->ctx, 4, M40_RANDOM_UNIFORM, 1e-3f, 1e-2f, a.scale) == M40_OK;
            if (ok && fmts[f].wtype == M40_DTYPE_F16) /* f16 codes must be finite numbers */
                ok = m40_fill_random(e->ctx, 5, M40_RANDOM_UNIFORM, -1, 1, a.data) == M40_OK;
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
                    base->work = 2.0 * (double)m40_tensor_get_nbytes(a.data); /* read + write */
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
            m40_tensor_destroy(a.x);
            m40_tensor_destroy(a.y);
            m40_tensor_destroy(a.data);
            m40_tensor_destroy(a.scale);
            m40_tensor_destroy(a.copy_dst);
        }
    return 0;
}

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
     "vs m40_matmul on the GEMM of the same FLOPs (cuDNN: bench/bench_torch.py conv)"},
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
    {"attention", run_attention, 8, "1024,8192,32768",
     "causal GQA attention, 32 heads over 2 KV groups, d 128: decode (KV bytes/s vs a device "
     "copy) at context N and prefill (GFLOP/s vs m40_matmul) (tools/bench/attention.c)"},
    {"norm", run_norm, 8, "1,64,512",
     "RMSNorm (+residual), RoPE, SwiGLU, embedding at ChatGLM2 widths, N rows: GB/s vs a device "
     "copy (tools/bench/norm.c)"},
    {"sample", run_sample, 8, "1,8",
     "sampling over 65024 logits, N rows: greedy, top-k, top-p, min-p, penalty (tools/bench/sample.c)"},
    {"chatglm2", run_chatglm2, 5, "128,1024,8192",
     "ChatGLM2-6B-shaped model, random weights, fp16/int8/int4/int4g128: decode tokens/s at "
     "context N (bytes read vs a device copy) and prefill of 128/512/2048 tokens "
     "(tools/bench/chatglm2.c)"},
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
            "  --graph-calls N  norm, sample, attention decode: also time N calls captured\n"
            "                   in one CUDA graph, per call (a decode step's cost; default\n"
            "                   20, 0: off)\n"
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
    m40__jb_kint(&j, "graph_calls", e->o->graph_calls);
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
    bench_opts o = {.warmup = 3, .repeats = 20, .device = 0, .telemetry = 1, .layouts = 3,
                    .graph_calls = 20};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int bad = 0;
        if (strcmp(a, "--warmup") == 0 && i + 1 < argc) bad = intarg(argv[++i], 0, 1000, &o.warmup);
        else if (strcmp(a, "--repeats") == 0 && i + 1 < argc)
            bad = intarg(argv[++i], 1, M40B_MAX_REPEATS, &o.repeats);
        else if (strcmp(a, "--device") == 0 && i + 1 < argc)
            bad = intarg(argv[++i], 0, 1024, &o.device);
        else if (strcmp(a, "--sizes") == 0 && i + 1 < argc) o.sizes = argv[++i];
        else if (strcmp(a, "--graph-calls") == 0 && i + 1 < argc)
            bad = intarg(argv[++i], 0, 1000, &o.graph_calls);
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
    if (m40_ctx_get_info(e.ctx, &e.info) != M40_OK) {
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
