/* m40-attn-versions: the attention trail's numbered versions
** (bench/attention/attn_versions.cu) checked against a CPU double reference
** on small cases (f32 and f16 caches, decode and prefill, MHA and GQA), then
** timed beside the library's m40_attention on ChatGLM2 shapes (32 heads over
** 2 KV groups, D = 128, fp16 cache):
**   decode T = 1 at context 1K, 8K, 32K: KV bytes read / time, and the ratio
**     to a same-run cudaMemcpy device copy of the caches (its GB/s counts
**     read + write, as m40-bench copy)
**   prefill T = 512, 2048 (causal, L = T): GFLOP/s, counting 4·T²/2·D·H
** Each timed output is also compared with version 1's (same run, same
** inputs). Exit 0 all match, 1 a mismatch or CUDA error, 77 no GPU.
**
**   m40-attn-versions [--check] [--repeats N] [--graph N] [--decode-ctx L,...]
** (--check: the check only; --graph N: each op timed as N calls in one
** captured CUDA graph, as a decode step runs it; --decode-ctx: the decode
** contexts, default 1024,8192,32768) */
#define _POSIX_C_SOURCE 200809L
#include "attn_versions.h"
#include "m40/m40.h"
#include "m40/transformer.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define D M40B_ATTN_D
#define NV M40B_ATTN_NVERSIONS

static m40_ctx *C;
static void *S;   /* the context's stream: versions, copies and events all on it */
static int sms;
static long checks, failed;


typedef struct prob {
    m40b_attn_problem p;
    m40_tensor *q, *k, *v, *y, *pos;
} prob;

static void die(const char *what) {
    fprintf(stderr, "m40-attn-versions: %s: %s\n", what, C ? m40_errmsg(C) : "");
    exit(1);
}

/* fresh random inputs; positions p0 .. p0+T-1 for the production call */
static void prob_make(prob *b, int T, int H, int G, int L, int p0, int f16, uint64_t seed) {
    memset(b, 0, sizeof *b);
    const int64_t qs[3] = {1, T, (int64_t)H * D}, cs[4] = {1, L, G, D}, ps[2] = {1, T};
    const m40_dtype ct = f16 ? M40_DTYPE_F16 : M40_DTYPE_F32;
    if (m40_tensor_new(C, M40_DTYPE_F32, 3, qs, &b->q) || m40_tensor_new(C, ct, 4, cs, &b->k) ||
        m40_tensor_new(C, ct, 4, cs, &b->v) || m40_tensor_new(C, M40_DTYPE_F32, 3, qs, &b->y) ||
        m40_tensor_new(C, M40_DTYPE_I32, 2, ps, &b->pos))
        die("tensor_new");
    /* q wider than k: scores of std ~1.3 after the 1/sqrt(D) scale, a softmax
    ** that is neither flat nor one-hot */
    if (m40_fill_random(C, seed, M40_RANDOM_UNIFORM, -2.f, 2.f, b->q) ||
        m40_fill_random(C, seed + 1, M40_RANDOM_UNIFORM, -1.f, 1.f, b->k) ||
        m40_fill_random(C, seed + 2, M40_RANDOM_UNIFORM, -1.f, 1.f, b->v))
        die("fill_random");
    int32_t *pos = malloc((size_t)T * sizeof *pos);
    if (!pos) die("out of host memory");
    for (int t = 0; t < T; t++) pos[t] = p0 + t;
    if (m40_tensor_upload(C, b->pos, pos, (size_t)T * sizeof *pos)) die("upload pos");
    free(pos);
    b->p = (m40b_attn_problem){.T = T, .H = H, .G = G, .L = L, .p0 = p0, .f16 = f16,
                               .scale = 1.f / sqrtf((float)D),
                               .q = m40_tensor_get_data(b->q), .k = m40_tensor_get_data(b->k),
                               .v = m40_tensor_get_data(b->v), .y = m40_tensor_get_data(b->y)};
}

static void prob_free(prob *b) {
    m40_tensor_destroy(b->q);
    m40_tensor_destroy(b->k);
    m40_tensor_destroy(b->v);
    m40_tensor_destroy(b->y);
    m40_tensor_destroy(b->pos);
}

/* version 0: the library's m40_attention; 1..5: attn_versions.cu */
static int run_version(prob *b, int version, void *scratch) {
    if (version > 0) return m40b_attn_run(S, &b->p, version, sms, scratch);
    m40_attention_desc d = {.struct_size = sizeof d, .heads = b->p.H, .kv_heads = b->p.G,
                            .head_dim = D, .scale = b->p.scale};
    m40_status st = m40_attention(C, &d, b->q, b->k, b->v, b->pos, NULL, b->y);
    if (st) fprintf(stderr, "m40_attention: %s\n", m40_errmsg(C));
    return st ? -1 : 0;
}

static void *scratch_for(prob *b, int version) {
    size_t n = version > 0 ? m40b_attn_scratch_bytes(&b->p, version, sms) : 0;
    void *p = NULL;
    if (n && cudaMalloc(&p, n) != cudaSuccess) die("cudaMalloc scratch");
    return p;
}

static float *download_y(prob *b) {
    size_t n = m40_tensor_get_nbytes(b->y);
    float *h = malloc(n);
    if (!h || m40_tensor_download(C, b->y, h, n)) die("download y");
    return h;
}

static float h2f(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 31) u = s | 0x7f800000u | (m << 13);
    else if (e) u = s | ((e + 112) << 23) | (m << 13);
    else if (m) { /* subnormal: normalise */
        e = 113;
        while (!(m & 1024)) m <<= 1, e--;
        u = s | (e << 23) | ((m & 1023) << 13);
    } else u = s;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double *download_f64(m40_tensor *t) {
    size_t nb = m40_tensor_get_nbytes(t), n;
    int f16 = m40_tensor_get_desc(t)->dtype == M40_DTYPE_F16;
    n = nb / (f16 ? 2 : 4);
    void *raw = malloc(nb);
    double *o = malloc(n * sizeof *o);
    if (!raw || !o || m40_tensor_download(C, t, raw, nb)) die("download");
    for (size_t i = 0; i < n; i++)
        o[i] = f16 ? h2f(((uint16_t *)raw)[i]) : ((float *)raw)[i];
    free(raw);
    return o;
}

/* y [T, H, D] in double, from the device's own inputs */
static double *reference(prob *b) {
    const m40b_attn_problem *p = &b->p;
    double *q = download_f64(b->q), *k = download_f64(b->k), *v = download_f64(b->v);
    double *y = calloc((size_t)p->T * p->H * D, sizeof *y), *s = malloc((size_t)p->L * sizeof *s);
    if (!y || !s) die("out of host memory");
    for (int t = 0; t < p->T; t++)
        for (int h = 0; h < p->H; h++) {
            const int g = h / (p->H / p->G), last = p->p0 + t;
            const double *qv = q + ((size_t)t * p->H + h) * D;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j <= last; j++) {
                const double *kv = k + ((size_t)j * p->G + g) * D;
                double a = 0;
                for (int d = 0; d < D; d++) a += qv[d] * kv[d];
                s[j] = a * p->scale;
                if (s[j] > m) m = s[j];
            }
            for (int j = 0; j <= last; j++) sum += s[j] = exp(s[j] - m);
            double *yo = y + ((size_t)t * p->H + h) * D;
            for (int j = 0; j <= last; j++) {
                const double *vv = v + ((size_t)j * p->G + g) * D, w = s[j] / sum;
                for (int d = 0; d < D; d++) yo[d] += w * vv[d];
            }
        }
    free(q);
    free(k);
    free(v);
    free(s);
    return y;
}

/* worst |got - ref| / tol; tol = atol·max|ref| + rtol·|ref| */
static double compare(const float *got, const double *ref, size_t n, double atol, double rtol) {
    double mx = 0, worst = 0;
    for (size_t i = 0; i < n; i++) mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]), tol = atol * mx + rtol * fabs(ref[i]) + 1e-30;
        if (d != d) return INFINITY;
        if (d / tol > worst) worst = d / tol;
    }
    return worst;
}

static void check_case(int T, int H, int G, int L, int p0, int f16) {
    prob b;
    prob_make(&b, T, H, G, L, p0, f16, 1000u + (uint64_t)(T * 7 + L + f16));
    double *ref = reference(&b);
    const size_t n = (size_t)T * H * D;
    for (int ver = 0; ver <= NV; ver++) {
        void *ws = scratch_for(&b, ver);
        /* NaN: an unwritten output shows; synchronized, as the context's
        ** stream may not wait for the legacy stream */
        if (cudaMemset(b.p.y, 0xFF, n * 4) || cudaDeviceSynchronize()) die("memset");
        int e = run_version(&b, ver, ws);
        if (!e) e = (int)cudaDeviceSynchronize();
        if (!e && m40_ctx_sync(C)) e = -1;
        float *got = e ? NULL : download_y(&b);
        double worst = got ? compare(got, ref, n, 2e-5, 1e-4) : INFINITY;
        checks++;
        if (e || !(worst <= 1)) {
            failed++;
            printf("FAIL T=%d H=%d G=%d L=%d p0=%d %s cache, %s %d: %s worst %.3g x tol\n", T, H,
                   G, L, p0, f16 ? "f16" : "f32", ver ? "version" : "m40_attention", ver,
                   e ? "error," : "", worst);
        }
        free(got);
        cudaFree(ws);
    }
    free(ref);
    prob_free(&b);
}

/* ---- timing ------------------------------------------------------------------ */

typedef int (*op_fn)(void *arg);
static int reps = 10;
static int graph_calls = 0; /* --graph N: N calls captured in one CUDA graph, replay / N */

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* With --graph N: the median of `reps` replays of N calls captured in one
** CUDA graph, divided by N (a decode step's view: no host launch, no event
** per call); after one call outside the capture (the library's scratch
** grows there, never inside it) and one warm-up replay. -1 on failure. */
static double time_graph(op_fn op, void *arg) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t e0, e1;
    float ms[1000];
    if (op(arg) || cudaStreamSynchronize(S)) return -1;
    if (cudaStreamBeginCapture(S, cudaStreamCaptureModeThreadLocal)) return -1;
    int fail = 0;
    for (int i = 0; i < graph_calls; i++) fail |= op(arg) != 0;
    if (cudaStreamEndCapture(S, &g) || fail || !g || cudaGraphInstantiateWithFlags(&ge, g, 0)) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        return -1;
    }
    if (cudaEventCreate(&e0) || cudaEventCreate(&e1)) die("cudaEventCreate");
    fail = cudaGraphLaunch(ge, S) || cudaStreamSynchronize(S);
    const int n = reps;
    for (int i = 0; i < n && !fail; i++) {
        cudaEventRecord(e0, S);
        fail = cudaGraphLaunch(ge, S) != cudaSuccess;
        cudaEventRecord(e1, S);
        if (cudaEventSynchronize(e1) || cudaEventElapsedTime(&ms[i], e0, e1)) fail = 1;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    if (fail || cudaGetLastError() != cudaSuccess) return -1;
    qsort(ms, (size_t)n, sizeof ms[0], cmp_f);
    return (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2])) / graph_calls;
}

/* median ms of `reps` event-timed runs after warm-up; a version slower than
** half a second a run gets 3 (--graph N: time_graph) */
static double time_op(op_fn op, void *arg) {
    if (graph_calls > 0) return time_graph(op, arg);
    cudaEvent_t e0, e1;
    float ms[1000];
    if (cudaEventCreate(&e0) || cudaEventCreate(&e1)) die("cudaEventCreate");
    int n = reps, fail = 0;
    for (int i = 0; i < 2 && !fail; i++) {
        cudaEventRecord(e0, S);
        fail = op(arg) != 0;
        cudaEventRecord(e1, S);
        if (cudaEventSynchronize(e1) || cudaEventElapsedTime(&ms[0], e0, e1)) fail = 1;
        if (!fail && ms[0] > 500.f && n > 3) n = 3;
    }
    for (int i = 0; i < n && !fail; i++) {
        cudaEventRecord(e0, S);
        fail = op(arg) != 0;
        cudaEventRecord(e1, S);
        if (cudaEventSynchronize(e1) || cudaEventElapsedTime(&ms[i], e0, e1)) fail = 1;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (fail || cudaGetLastError() != cudaSuccess) return -1;
    qsort(ms, (size_t)n, sizeof ms[0], cmp_f);
    return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

typedef struct ver_arg {
    prob *b;
    int version;
    void *scratch;
} ver_arg;

static int ver_op(void *a) {
    ver_arg *v = a;
    return run_version(v->b, v->version, v->scratch);
}

typedef struct copy_arg {
    void *dst;
    const void *k, *v;
    size_t n;
} copy_arg;

static int copy_op(void *a) {
    copy_arg *c = a;
    return cudaMemcpyAsync(c->dst, c->k, c->n, cudaMemcpyDeviceToDevice, S) ||
           cudaMemcpyAsync((char *)c->dst + c->n, c->v, c->n, cudaMemcpyDeviceToDevice, S);
}

static const char *name_of(int ver) {
    static char buf[NV + 1][96];
    if (ver == 0) return "m40_attention (library)";
    snprintf(buf[ver], sizeof buf[ver], "v%d %.60s", ver, m40b_attn_notes[ver - 1]);
    return buf[ver];
}

/* One timed shape; decode (T = 1) reports bytes, prefill FLOPs. */
static void time_shape(int T, int L) {
    const int H = 32, G = 2, decode = T == 1;
    prob b;
    prob_make(&b, T, H, G, L, L - T, 1, 77u + (uint64_t)L * 3 + (uint64_t)T);
    const size_t n = (size_t)T * H * D, cache = (size_t)L * G * D * 2;
    const double kv = 2.0 * cache, flops = 2.0 * T * (double)T * D * H; /* 4·T²/2·D·H */
    double copy_gbs = 0;
    if (decode) {
        printf("\ndecode T=1, context %d, fp16 cache: KV %.2f MB read per step\n", L, kv / 1e6);
        printf("  %-72s %10s %9s %7s %10s\n", "version", "ms", "GB/s", "x copy", "vs v1");
        copy_arg c = {NULL, b.p.k, b.p.v, cache};
        if (cudaMalloc(&c.dst, 2 * cache) != cudaSuccess) die("cudaMalloc copy");
        double ms = time_op(copy_op, &c);
        copy_gbs = ms > 0 ? 2.0 * kv / (ms * 1e6) : 0; /* read + write */
        printf("  %-72s %10.4f %9.1f %7s %10s\n", "cudaMemcpy device copy (read+write)", ms,
               copy_gbs, "1.00", "");
        cudaFree(c.dst);
    } else {
        printf("\nprefill T=%d causal (L = T), fp16 cache: %.3f GFLOP (4*T^2/2*D*H)\n", T,
               flops / 1e9);
        printf("  %-72s %10s %9s %10s\n", "version", "ms", "GFLOP/s", "vs v1");
    }
    float *base = NULL;
    for (int ver = 1; ver <= NV + 1; ver++) {
        const int v = ver == NV + 1 ? 0 : ver; /* the library last */
        ver_arg a = {&b, v, scratch_for(&b, v)};
        double ms = time_op(ver_op, &a);
        if (!(ms > 0) || m40_ctx_sync(C)) {
            failed++;
            printf("  %-72s FAILED (%s)\n", name_of(v), cudaGetErrorString(cudaGetLastError()));
            cudaFree(a.scratch);
            continue;
        }
        float *y = download_y(&b);
        double diff = 0;
        if (!base) base = y;
        else {
            double *r = malloc(n * sizeof *r);
            if (!r) die("out of host memory");
            for (size_t i = 0; i < n; i++) r[i] = base[i];
            diff = compare(y, r, n, 2e-5, 1e-4);
            free(r);
            free(y);
        }
        if (!(diff <= 1)) failed++;
        if (decode) {
            double gbs = kv / (ms * 1e6);
            printf("  %-72s %10.4f %9.1f %7.2f %9.2gx%s\n", name_of(v), ms, gbs,
                   copy_gbs > 0 ? gbs / copy_gbs : 0, diff, diff <= 1 ? "" : " MISMATCH");
        } else {
            printf("  %-72s %10.4f %9.1f %9.2gx%s\n", name_of(v), ms, flops / (ms * 1e6), diff,
                   diff <= 1 ? "" : " MISMATCH");
        }
        fflush(stdout);
        cudaFree(a.scratch);
    }
    free(base);
    prob_free(&b);
}

/* "a,b,c" of contexts in [16, 65536] into v (at most 8); 0 on a bad list */
static int parse_ctxs(const char *s, int *v) {
    int n = 0;
    while (*s && n < 8) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 16 || x > 65536 || (*end && *end != ',')) return 0;
        v[n++] = (int)x;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

int main(int argc, char **argv) {
    int check_only = 0, nctx = 3;
    int ctxs[8] = {1024, 8192, 32768};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) check_only = 1;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                 atoi(argv[i + 1]) <= 1000)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graph") && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                 atoi(argv[i + 1]) <= 100)
            graph_calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode-ctx") && i + 1 < argc && (nctx = parse_ctxs(argv[i + 1], ctxs)) > 0)
            i++;
        else {
            fprintf(stderr, "usage: m40-attn-versions [--check] [--repeats N (1..1000)] [--graph N "
                            "(1..100)] [--decode-ctx L,L,... (16..65536, at most 8)]\n");
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("m40-attn-versions: no GPU, skipped\n");
        return 77;
    }
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = 0;
    if (m40_ctx_create(&cd, &C) != M40_OK) {
        printf("m40-attn-versions: no usable GPU (%s), skipped\n", m40_errmsg(C));
        m40_ctx_destroy(C);
        return 77;
    }
    S = m40_ctx_get_stream(C);
    for (int i = 0; i < NV; i++) printf("version %d: %s\n", i + 1, m40b_attn_notes[i]);
    printf("production m40_attention: checked and timed as version 0\n");
    /* T, H, G, L, p0: decode, decode at ChatGLM2 heads, prefill, a chunk of
    ** prefill after a prefix with unused cache behind it, MHA with T = 3 */
    static const int cases[][5] = {{1, 8, 2, 300, 299}, {1, 32, 2, 1000, 999}, {77, 8, 2, 77, 0},
                                   {20, 32, 2, 200, 150}, {3, 8, 8, 64, 40}};
    for (int c = 0; c < 5; c++)
        for (int f16 = 0; f16 < 2; f16++)
            check_case(cases[c][0], cases[c][1], cases[c][2], cases[c][3], cases[c][4], f16);
    printf("m40-attn-versions: %ld checks, %ld failed\n", checks, failed);
    if (!check_only && !failed) {
        printf("\ntimes: median of %d after 2 warm-up runs (3 for a run over 0.5 s); 32 heads, "
               "2 KV groups, D = 128; 'vs v1': worst diff to version 1's output in units of "
               "tolerance\n", reps);
        if (graph_calls)
            printf("each time: %d calls captured in one CUDA graph, the replay / %d (the copy too)\n",
                   graph_calls, graph_calls);
        static const int pre[] = {512, 2048};
        for (int i = 0; i < nctx; i++) time_shape(1, ctxs[i]);
        for (int i = 0; i < 2; i++) time_shape(pre[i], pre[i]);
        printf("\nm40-attn-versions: timing %s\n", failed ? "had failures" : "done");
    }
    m40_ctx_destroy(C);
    return failed ? 1 : 0;
}
