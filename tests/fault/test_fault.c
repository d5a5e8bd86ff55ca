/* Fault injection (issue 15): for every N from 1 until a pass completes
** without reaching call N, the N-th host allocation (CPU mode) or the N-th
** device allocation / stream, copy or launch call (--gpu) fails during
**   - a whole reduced-ResNet pass through the example's code path
**     (examples/resnet50/resnet.c, as tests/resnet/test_resnet.c uses it):
**     context, safetensors open, config, build + plan + alloc, upload, run,
**     download, teardown;
**   - a whole ChatGLM2 pass on tests/fixtures/chatglm2/tiny.safetensors, in
**     fp16 and in int4 (quantized at load): context, safetensors open, the
**     config and a plan of a declared-only graph, the prefill graph (load,
**     convert or quantize, plan, alloc), the decode graph bound to its
**     weights and KV cache (weights_from), a prefill run, two decode runs
**     (on a GPU the second replays a captured CUDA graph), a greedy
**     m40_sample, the logits download, teardown; and (host) the same from a
**     pre-quantized int4 checkpoint in two shards written from the fixture
**     (the loader's shards and take-as-is paths), which must also give the
**     quantize-at-load logits; and fp16 with a cache of 3 conversations
**     (the graphs' slot input, row 1: m40-server's slots), which must give
**     the one-conversation logits;
**   - a tokenizer load + encode;
**   - a safetensors open + lookup.
** Each injected failure must come back as a status with a message (a
** failure that the library absorbs must leave the result exact), the
** context must still run a small op unless it is marked lost, and after the
** teardown no block (host), no device allocation or stream (device) is left
** and no file descriptor; on the GPU cudaMemGetInfo is back to its start.
** Prints the fault sites covered per phase. --gpu exits 77 without a GPU.
** M40_FAULT_STRIDE=k tries every k-th call only (quick mode).
** The hooks: fault_hooks.c / fault_cuda.c, linked with -Wl,--wrap=...
** (tests/fault/tests.cmake); the library's sources are not touched. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "fault_hooks.h"
#include "m40/models.h"

#include <m40/tokenizer.h>
#include <m40/transformer.h>

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef M40_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static const char *WEIGHTS = "tests/fixtures/resnet/reduced_resnet.safetensors";
static const char *TOKENIZER = "tests/fixtures/tokenizer/bpe_bf.model";
static const char *ST_SMALL = "tests/fixtures/safetensors/small.safetensors";
static const char *GLM = "tests/fixtures/chatglm2/tiny.safetensors";
enum { IMG = 32, NLOGITS_MAX = 4096 };
/* No pass of the reduced ResNet comes near this many calls; a bound keeps a
** hook that never stops counting from looping for ever. */
enum { MAX_SITES = 200000 };

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* M40_FAULT_STRIDE=k: fail calls 1, 1+k, 1+2k, ... only (a quick mode for
** slow runs such as compute-sanitizer's); default 1, every call. */
static long sweep_stride(void) {
    const char *e = getenv("M40_FAULT_STRIDE");
    long k = e ? strtol(e, NULL, 10) : 1;
    return k >= 1 && k <= 100000 ? k : 1;
}

/* ---- tallies per phase and per failing function --------------------------- */

#define MAX_ROWS 16
typedef struct tally {
    const char *name;
    long sites, errors, absorbed;
} tally;
static tally by_phase[MAX_ROWS], by_fn[MAX_ROWS];
static int nphase, nfn;

static void tally_add(tally *t, int *n, const char *name, int errored) {
    int i = 0;
    while (i < *n && strcmp(t[i].name, name)) i++;
    if (i == *n) {
        if (*n == MAX_ROWS) return;
        t[i] = (tally){name, 0, 0, 0};
        ++*n;
    }
    t[i].sites++;
    if (errored) t[i].errors++;
    else t[i].absorbed++;
}

static void count_site(const char *phase, const char *fn, int errored) {
    tally_add(by_phase, &nphase, phase, errored);
    tally_add(by_fn, &nfn, fn, errored);
}

static void print_rows(const char *head, const tally *t, int n) {
    long total = 0;
    printf("  %-26s %7s %7s %9s\n", head, "sites", "status", "absorbed");
    for (int i = 0; i < n; i++) {
        printf("  %-26s %7ld %7ld %9ld\n", t[i].name, t[i].sites, t[i].errors, t[i].absorbed);
        total += t[i].sites;
    }
    printf("  %-26s %7ld\n", "total", total);
}

static void print_tally(const char *what) {
    printf("%s: fault sites covered (site = one call made to fail; status = it came back as "
           "an error, absorbed = the result was still right)\n", what);
    print_rows("phase", by_phase, nphase);
    print_rows("failing call", by_fn, nfn);
    nphase = nfn = 0;
}

/* ---- one reduced-ResNet pass ---------------------------------------------- */

typedef struct pass_result {
    m40_status st;
    char msg[512];
    int lost;       /* the context says it is lost */
    int usable;     /* a small op ran afterwards (or the pass succeeded) */
    int exact;      /* the logits equal the fault-free ones (1e-4) */
} pass_result;

/* 1 if a tiny add runs on ctx: the context survived the failure. */
static int small_op_runs(m40_ctx *ctx) {
    int64_t s[1] = {4};
    m40_tensor *a = NULL, *b = NULL;
    int ok = m40_tensor_new(ctx, M40_DTYPE_F32, 1, s, &a) == M40_OK &&
             m40_tensor_new(ctx, M40_DTYPE_F32, 1, s, &b) == M40_OK;
    float h[4] = {1, 2, 3, 4}, o[4] = {0};
    ok = ok && m40_tensor_upload(ctx, a, h, sizeof h) == M40_OK &&
         m40_add(ctx, a, a, b) == M40_OK && m40_tensor_download(ctx, b, o, sizeof o) == M40_OK &&
         o[0] == 2 && o[3] == 8;
    m40_tensor_destroy(a);
    m40_tensor_destroy(b);
    return ok;
}

/* An absorbed failure may take another path (a GEMM without split-K when
** the scratch cannot grow), so equal up to summation order, not bitwise. */
static int same_logits(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-4f + 1e-4f * fabsf(b[i]))) return 0;
    return 1;
}

static void fail_at(pass_result *r, m40_status st, const char *msg) {
    r->st = st;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
}

/* ctx create -> open -> config -> build/plan/alloc -> upload -> run ->
** download -> teardown. `ref` NULL: fill it (the fault-free pass). */
static pass_result resnet_pass(int device, m40_layout layout, const float *input, float *logits,
                               size_t *nlogits, const float *ref) {
    pass_result r = {M40_OK, "", 0, 1, 1};
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = device;
    m40_ctx *ctx = NULL;
    m40_st_file *w = NULL;
    m40_graph *g = NULL;
    m40_resnet50_info info;
    int built = 0;
    m40f_set_phase("ctx_create");
    m40_status st = m40_ctx_create(&d, &ctx);
    if (st != M40_OK) {
        /* a context that could not be allocated cannot hold a message */
        fail_at(&r, st, ctx ? m40_errmsg(ctx) : st == M40_ERR_OOM_HOST ? "(no context)" : "");
        r.usable = 1; /* a failed creation is not a context to reuse */
        goto teardown;
    }
    m40f_set_phase("st_open");
    if ((st = m40_st_open(WEIGHTS, &w)) != M40_OK) {
        fail_at(&r, st, w ? m40_st_errmsg(w) : st == M40_ERR_OOM_HOST ? "(no handle)" : "");
        goto after_fail;
    }
    m40f_set_phase("build_plan_alloc");
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.height = rd.width = IMG;
    rd.layout = layout;
    if ((st = m40_resnet50_graph(ctx, &rd, w, &g, &info)) != M40_OK) {
        fail_at(&r, st, m40_errmsg(ctx));
        goto after_fail;
    }
    built = 1;
    m40_tensor *tin = NULL, *tout = NULL;
    m40f_set_phase("upload");
    if ((st = m40_graph_get_tensor(g, info.input, &tin)) != M40_OK ||
        (st = m40_graph_get_tensor(g, info.logits, &tout)) != M40_OK ||
        (st = m40_tensor_upload(ctx, tin, input, (size_t)IMG * IMG * 3 * 4)) != M40_OK) {
        fail_at(&r, st, m40_errmsg(ctx));
        goto after_fail;
    }
    m40f_set_phase("run");
    if ((st = m40_graph_run(g)) != M40_OK) {
        fail_at(&r, st, m40_errmsg(ctx));
        goto after_fail;
    }
    m40f_set_phase("download");
    size_t n = (size_t)m40_tensor_desc_numel(m40_tensor_get_desc(tout));
    if (n > NLOGITS_MAX) n = NLOGITS_MAX;
    if ((st = m40_tensor_download(ctx, tout, logits, n * 4)) != M40_OK ||
        (st = m40_ctx_sync(ctx)) != M40_OK) {
        fail_at(&r, st, m40_errmsg(ctx));
        goto after_fail;
    }
    *nlogits = n;
    if (ref) r.exact = same_logits(logits, ref, n);
    goto teardown;
after_fail:
    r.lost = m40_errcode(ctx) == M40_ERR_DEVICE_LOST;
    m40f_set_phase("check_usable");
    if (!r.lost) r.usable = small_op_runs(ctx);
teardown:
    m40f_set_phase("teardown");
    if (built) m40_graph_destroy(g);
    m40_st_destroy(w);
    m40_ctx_destroy(ctx);
    return r;
}

#ifdef M40_HAVE_CUDA
static size_t device_free_bytes(void) {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) return 0;
    return f;
}
#endif

/* A pass of one workload: `ref` NULL fills out[0..*nout) (the fault-free
** pass), else the result is compared with it (pass_result.exact). */
typedef pass_result (*pass_fn)(const void *arg, float *out, size_t *nout, const float *ref);

typedef struct resnet_arg {
    int device;
    m40_layout layout;
    const float *input;
} resnet_arg;

static pass_result resnet_job(const void *arg, float *out, size_t *nout, const float *ref) {
    const resnet_arg *a = arg;
    return resnet_pass(a->device, a->layout, a->input, out, nout, ref);
}

/* Runs `pass` for N = 1, 2, ... with the N-th call of `kind` failing. */
static void sweep(int kind, const char *what, pass_fn pass, const void *arg) {
    float *ref = malloc(NLOGITS_MAX * 4), *got = malloc(NLOGITS_MAX * 4);
    CHECK(ref && got);
    if (!ref || !got) goto out;
    size_t nref = 0, n = 0;
    /* the fault-free pass: the reference result and the number of calls */
    m40f_arm(kind, 0);
    pass_result r0 = pass(arg, ref, &nref, NULL);
    m40f_disarm(kind);
    CHECK_ST(r0.st, M40_OK);
    if (r0.st != M40_OK) {
        fprintf(stderr, "%s: the fault-free pass failed: %s\n", what, r0.msg);
        goto out;
    }
    long calls0 = m40f_calls(kind);
    CHECK(m40f_live(kind) == 0); /* nothing left behind without a fault either */
    int fds0 = open_fds();
#ifdef M40_HAVE_CUDA
    size_t free0 = kind == M40F_DEVICE ? device_free_bytes() : 0;
#endif
    printf("%s: fault-free pass makes %ld calls\n", what, calls0);
    long N, stride = sweep_stride();
    int failures0 = m40t_failures;
    for (N = 1; N <= MAX_SITES; N += stride) {
        m40f_arm(kind, N);
        pass_result r = pass(arg, got, &n, ref);
        m40f_disarm(kind);
        if (!m40f_hit(kind)) {
            CHECK_ST(r.st, M40_OK);
            CHECK(r.exact);
            break;
        }
        const char *phase = m40f_hit_phase(kind), *fn = m40f_hit_fn(kind);
        count_site(phase, fn, r.st != M40_OK);
        long live = m40f_live(kind);
        int fds = open_fds();
        int ok = 1;
        if (r.st != M40_OK) ok &= r.msg[0] != 0;  /* a status with a message */
        else ok &= r.exact;                        /* absorbed: the result must not change */
        ok &= r.usable;
        ok &= live == 0;
        ok &= fds == fds0;
#ifdef M40_HAVE_CUDA
        size_t fr = kind == M40F_DEVICE ? device_free_bytes() : 0;
        /* under compute-sanitizer the tool's own allocations move the free
        ** figure; its leak check (memcheck --leak-check full) judges then */
        if (kind == M40F_DEVICE && !getenv("M40_FAULT_NO_DEVMEM")) ok &= fr == free0;
#endif
        m40t_checks++;
        if (!ok) {
            m40t_failures++;
            fprintf(stderr,
                    "FAIL %s: call %ld (%s in %s): %s '%s'%s%s; live blocks %ld, fds %d (start "
                    "%d)",
                    what, N, fn, phase, m40_status_str(r.st), r.msg,
                    r.st == M40_OK && !r.exact ? " [absorbed but the result changed]" : "",
                    r.usable ? "" : " [context no longer runs an op]", live, fds, fds0);
#ifdef M40_HAVE_CUDA
            if (kind == M40F_DEVICE)
                fprintf(stderr, ", device free %+lld bytes", (long long)fr - (long long)free0);
#endif
            fprintf(stderr, "\n");
            if (m40t_failures - failures0 > 20) {
                fprintf(stderr, "%s: too many failures, stopping the sweep\n", what);
                break;
            }
        } else if (getenv("M40_FAULT_VERBOSE")) {
            printf("  call %ld (%s in %s): %s: %s\n", N, fn, phase, m40_status_str(r.st), r.msg);
        }
    }
    CHECK(N <= MAX_SITES);
    print_tally(what);
out:
    free(ref);
    free(got);
}

static void resnet_sweep(int kind, int device, m40_layout layout) {
    char what[64];
    snprintf(what, sizeof what, "resnet %s (%s)", layout == M40_LAYOUT_NHWC ? "NHWC" : "NCHW",
             kind == M40F_HOST ? "host allocations" : "device calls");
    float *input = malloc((size_t)IMG * IMG * 3 * 4);
    CHECK(input != NULL);
    if (!input) return;
    for (int i = 0; i < IMG * IMG * 3; i++) input[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    resnet_arg a = {device, layout, input};
    sweep(kind, what, resnet_job, &a);
    free(input);
}

/* ---- one ChatGLM2 pass ------------------------------------------------------ */

enum { GLM_CTX = 16, GLM_PROMPT = 8 };

typedef struct glm_arg {
    int device;
    m40_wformat format;
    const char *const *files; /* NULL: the fixture; else nfiles shards */
    int nfiles;
    int slots;                /* > 0: a cache of that many conversations, this one in row 1 */
} glm_arg;

/* The graph of a checkpoint (nw files) for one phase, or the decode graph
** bound to `from`'s weights. */
static m40_status glm_graph(m40_ctx *ctx, m40_wformat fmt, m40_st_file *const *w, int nw,
                            m40_graph *from, const m40_chatglm2_config *cfg, int slots,
                            m40_graph **g, m40_chatglm2_info *info) {
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.weights = fmt;
    d.slots = slots;
    d.ctx = GLM_CTX;
    d.chunk = GLM_PROMPT;
    if (from) {
        d.phase = M40_PHASE_DECODE;
        d.weights_from = from;
        d.config = *cfg;
    } else if (nw > 1) {
        d.shards = w;
        d.nshards = nw;
    }
    return m40_chatglm2_graph(ctx, &d, from || nw > 1 ? NULL : w[0], g, info);
}

/* Uploads ids and their positions pos0.. (and cache row 1, when the graph
** has a slot input) into graph g's inputs and runs it. */
static m40_status glm_run(m40_ctx *ctx, m40_graph *g, const m40_chatglm2_info *in,
                          const int32_t *ids, int n, int32_t pos0) {
    int32_t pos[GLM_PROMPT], row = 1;
    for (int i = 0; i < n; i++) pos[i] = pos0 + i;
    m40_tensor *ti, *tp, *ts;
    m40_status st;
    if (in->slot >= 0 && ((st = m40_graph_get_tensor(g, in->slot, &ts)) != M40_OK ||
                          (st = m40_tensor_upload(ctx, ts, &row, 4)) != M40_OK))
        return st;
    if ((st = m40_graph_get_tensor(g, in->input_ids, &ti)) != M40_OK ||
        (st = m40_graph_get_tensor(g, in->position, &tp)) != M40_OK ||
        (st = m40_tensor_upload(ctx, ti, ids, (size_t)n * 4)) != M40_OK ||
        (st = m40_tensor_upload(ctx, tp, pos, (size_t)n * 4)) != M40_OK)
        return st;
    return m40_graph_run(g);
}

/* ctx create -> open -> config + a declared-only plan -> prefill graph
** (load, convert / quantize, plan, alloc) -> decode graph (weights_from) ->
** prefill run -> decode run -> (GPU: capture) -> decode run (GPU: replay)
** -> greedy sample -> download -> teardown. out: the last decode step's
** logits [V], then the sampled id. */
static pass_result glm_pass(const void *arg, float *out, size_t *nout, const float *ref) {
    const glm_arg *a = arg;
    pass_result r = {M40_OK, "", 0, 1, 1};
    static const int32_t prompt[GLM_PROMPT] = {64, 17, 250, 3, 99, 42, 7, 128}, next[2] = {5, 211};
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = a->device;
    m40_ctx *ctx = NULL;
    m40_st_file *w[2] = {NULL, NULL};
    const char *const fixture[1] = {GLM};
    const char *const *paths = a->files ? a->files : fixture;
    const int nw = a->files ? a->nfiles : 1;
    m40_graph *pl = NULL, *pg = NULL, *dg = NULL;
    m40_tensor *view = NULL, *tout = NULL;
    m40_chatglm2_info pi, di;
    m40_status st;
    m40f_set_phase("ctx_create");
    if ((st = m40_ctx_create(&cd, &ctx)) != M40_OK) {
        fail_at(&r, st, ctx ? m40_errmsg(ctx) : st == M40_ERR_OOM_HOST ? "(no context)" : "");
        goto teardown; /* a failed creation is not a context to reuse */
    }
    m40f_set_phase("st_open");
    for (int i = 0; i < nw; i++)
        if ((st = m40_st_open(paths[i], &w[i])) != M40_OK) {
            fail_at(&r, st, w[i] ? m40_st_errmsg(w[i]) : st == M40_ERR_OOM_HOST ? "(no handle)" : "");
            goto after_fail;
        }
    /* the planner alone: the file's config, a graph declared without weights */
    m40f_set_phase("config_plan");
    m40_chatglm2_config cfg;
    m40_chatglm2_desc pd;
    m40_chatglm2_desc_init(&pd);
    pd.weights = a->format;
    pd.ctx = GLM_CTX;
    pd.chunk = GLM_PROMPT;
    m40_plan_info plan;
    if ((st = m40_chatglm2_config_of(ctx, w, nw, NULL, &cfg)) != M40_OK ||
        (pd.config = cfg, st = m40_chatglm2_graph(ctx, &pd, NULL, &pl, NULL)) != M40_OK ||
        (st = m40_graph_plan(pl, NULL, &plan)) != M40_OK)
        goto lib_fail;
    m40_graph_destroy(pl);
    pl = NULL;
    m40f_set_phase("prefill_graph");
    if ((st = glm_graph(ctx, a->format, w, nw, NULL, NULL, a->slots, &pg, &pi)) != M40_OK)
        goto lib_fail;
    m40f_set_phase("decode_graph");
    if ((st = glm_graph(ctx, a->format, NULL, 0, pg, &pi.config, a->slots, &dg, &di)) != M40_OK)
        goto lib_fail;
    for (int i = 0; i < nw; i++) { /* the weights are in the graphs */
        m40_st_destroy(w[i]);
        w[i] = NULL;
    }
    m40f_set_phase("prefill_run");
    if ((st = glm_run(ctx, pg, &pi, prompt, GLM_PROMPT, 0)) != M40_OK) goto lib_fail;
    m40f_set_phase("decode_run");
    if ((st = glm_run(ctx, dg, &di, &next[0], 1, GLM_PROMPT)) != M40_OK) goto lib_fail;
    m40_device_info info;
    if (m40_ctx_get_info(ctx, &info) == M40_OK && info.is_gpu) {
        m40f_set_phase("decode_capture");
        if ((st = m40_graph_capture(dg, 1)) != M40_OK) goto lib_fail;
    }
    m40f_set_phase("decode_run");
    if ((st = glm_run(ctx, dg, &di, &next[1], 1, GLM_PROMPT + 1)) != M40_OK) goto lib_fail;
    m40f_set_phase("sample");
    m40_tensor *tl;
    m40_tensor_desc vd;
    const int V = pi.config.vocab;
    const int64_t sv[2] = {1, V}, so[2] = {1, 2};
    m40_tensor_desc_make(&vd, M40_DTYPE_F32, 2, sv);
    m40_sampler_desc sd;
    m40_sampler_desc_init(&sd);
    sd.temperature = 0; /* greedy */
    float got[2] = {-1, -1};
    if ((st = m40_graph_get_tensor(dg, di.logits, &tl)) != M40_OK ||
        (st = m40_tensor_view(ctx, tl, &vd, 0, &view)) != M40_OK ||
        (st = m40_tensor_new(ctx, M40_DTYPE_F32, 2, so, &tout)) != M40_OK ||
        (st = m40_sample(ctx, &sd, view, NULL, NULL, tout)) != M40_OK ||
        (st = m40_tensor_download(ctx, tout, got, sizeof got)) != M40_OK)
        goto lib_fail;
    m40f_set_phase("download");
    if (V + 1 > NLOGITS_MAX) {
        fail_at(&r, M40_ERR_SHAPE, "the fixture's vocabulary is larger than the test expects");
        goto teardown;
    }
    if ((st = m40_tensor_download(ctx, view, out, (size_t)V * 4)) != M40_OK ||
        (st = m40_ctx_sync(ctx)) != M40_OK)
        goto lib_fail;
    out[V] = got[0];
    *nout = (size_t)V + 1;
    if (ref) r.exact = same_logits(out, ref, (size_t)V) && out[V] == ref[V];
    goto teardown;
lib_fail:
    fail_at(&r, st, m40_errmsg(ctx));
after_fail:
    r.lost = m40_errcode(ctx) == M40_ERR_DEVICE_LOST;
    m40f_set_phase("check_usable");
    if (!r.lost) r.usable = small_op_runs(ctx);
teardown:
    m40f_set_phase("teardown");
    m40_tensor_destroy(view);
    m40_tensor_destroy(tout);
    m40_graph_destroy(pl);
    m40_graph_destroy(dg);
    m40_graph_destroy(pg);
    m40_st_destroy(w[0]);
    m40_st_destroy(w[1]);
    m40_ctx_destroy(ctx);
    return r;
}

static void glm_sweep(int kind, int device, m40_wformat fmt) {
    char what[64];
    snprintf(what, sizeof what, "chatglm2 %s (%s)", m40_wformat_name(fmt),
             kind == M40F_HOST ? "host allocations" : "device calls");
    glm_arg a = {device, fmt, NULL, 0, 0};
    sweep(kind, what, glm_pass, &a);
}

/* Fault-free passes of a and b give the same logits and id. */
static void same_pass(const glm_arg *a, const glm_arg *b) {
    float *x = malloc(NLOGITS_MAX * 4), *y = malloc(NLOGITS_MAX * 4);
    size_t nx = 0, ny = 0;
    CHECK(x && y);
    if (x && y) {
        pass_result rx = glm_pass(a, x, &nx, NULL), ry = glm_pass(b, y, &ny, NULL);
        CHECK_ST(rx.st, M40_OK);
        CHECK_ST(ry.st, M40_OK);
        CHECK(nx == ny && nx > 1 && same_logits(y, x, nx - 1) && x[nx - 1] == y[ny - 1]);
    }
    free(x);
    free(y);
}

/* The cache of several conversations (m40-server's slots): the prefill and
** decode graphs with a slot input, the pass in row 1 of 3. The same logits
** and id as the one-conversation pass, then the sweep. */
static void glm_slots_sweep(int kind, int device) {
    glm_arg one = {device, M40_WFMT_FP16, NULL, 0, 0}, three = {device, M40_WFMT_FP16, NULL, 0, 3};
    same_pass(&one, &three);
    sweep(kind, kind == M40F_HOST ? "chatglm2 fp16, 3 cache slots (host allocations)"
                                  : "chatglm2 fp16, 3 cache slots (device calls)", glm_pass, &three);
}

/* A pre-quantized int4 checkpoint in two shards (what m40-chat saves: the
** int4 graph's weights as they are, `.weight` codes and `.weight_scale`),
** made from the fixture: tensors alternate between dir/a and dir/b. The
** loader then takes them as they are, through the shards path. */
static int write_int4_shards(char paths[2][600]) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    m40_ctx *ctx = NULL;
    m40_st_file *w = NULL;
    m40_graph *g = NULL;
    m40_chatglm2_info pi;
    char *head = malloc(1 << 16);
    void *buf = NULL;
    FILE *f = NULL;
    int ok = head && m40_ctx_create(&cd, &ctx) == M40_OK && m40_st_open(GLM, &w) == M40_OK &&
             glm_graph(ctx, M40_WFMT_INT4, &w, 1, NULL, NULL, 0, &g, &pi) == M40_OK;
    const m40_chatglm2_config *c = &pi.config;
    for (int sh = 0; ok && sh < 2; sh++) {
        size_t hl = (size_t)snprintf(head, 1 << 16, "{\"__metadata__\":{\"num_attention_heads\":"
                                     "\"%d\",\"multi_query_group_num\":\"%d\",\"kv_channels\":"
                                     "\"%d\",\"layernorm_epsilon\":\"%.9g\",\"rope_ratio\":"
                                     "\"%.9g\"}", c->heads, c->kv_heads, c->head_dim,
                                     (double)c->eps, (double)c->rope_theta / 10000.0);
        uint64_t off = 0;
        int n = m40_graph_get_tensor_count(g), k = 0;
        for (int id = 0; id < n; id++) { /* the header: this shard's weights in order */
            m40_graph_tensor_info ti;
            if (m40_graph_get_tensor_info(g, id, &ti) != M40_OK) ok = 0;
            if (!ok || ti.role != M40_ROLE_WEIGHT || k++ % 2 != sh) continue;
            const m40_tensor_desc *d = &ti.desc;
            const char *dt = d->dtype == M40_DTYPE_I8 ? "I8" : d->dtype == M40_DTYPE_F16 ? "F16" : "F32";
            hl += (size_t)snprintf(head + hl, (1 << 16) - hl, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                   ti.name, dt);
            for (int i = 0; i < d->ndim; i++)
                hl += (size_t)snprintf(head + hl, (1 << 16) - hl, "%s%lld", i ? "," : "",
                                       (long long)d->shape[i]);
            hl += (size_t)snprintf(head + hl, (1 << 16) - hl, "],\"data_offsets\":[%llu,%llu]}",
                                   (unsigned long long)off, (unsigned long long)(off + ti.bytes));
            off += ti.bytes;
            if (hl > (1 << 16) - 512) ok = 0;
        }
        hl += (size_t)snprintf(head + hl, (1 << 16) - hl, "}");
        while (hl % 8) head[hl++] = ' ';
        unsigned char le[8];
        for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)hl >> (8 * i));
        ok = ok && (f = fopen(paths[sh], "wb")) && fwrite(le, 1, 8, f) == 8 &&
             fwrite(head, 1, hl, f) == hl;
        k = 0;
        for (int id = 0; ok && id < n; id++) { /* the data, in the header's order */
            m40_graph_tensor_info ti;
            m40_tensor *t;
            if (m40_graph_get_tensor_info(g, id, &ti) != M40_OK) ok = 0;
            if (!ok || ti.role != M40_ROLE_WEIGHT || k++ % 2 != sh) continue;
            free(buf);
            ok = (buf = malloc(ti.bytes)) && m40_graph_get_tensor(g, id, &t) == M40_OK &&
                 m40_tensor_download(ctx, t, buf, ti.bytes) == M40_OK &&
                 fwrite(buf, 1, ti.bytes, f) == ti.bytes;
        }
        if (f && fclose(f) != 0) ok = 0;
        f = NULL;
    }
    if (f) fclose(f);
    free(buf);
    free(head);
    m40_graph_destroy(g);
    m40_st_destroy(w);
    m40_ctx_destroy(ctx);
    return ok;
}

static void glm_shards_sweep(void) {
    const char *tmp = getenv("TMPDIR");
    char dir[512], paths[2][600];
    snprintf(dir, sizeof dir, "%s/m40_fault_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(paths[0], sizeof paths[0], "%s/a.safetensors", dir);
    snprintf(paths[1], sizeof paths[1], "%s/b.safetensors", dir);
    int ok = write_int4_shards(paths);
    CHECK(ok);
    if (ok) {
        /* the same model as quantized at load: the same logits and id */
        const char *const files[2] = {paths[0], paths[1]};
        glm_arg q = {M40_DEVICE_CPU, M40_WFMT_INT4, NULL, 0, 0},
                sa = {M40_DEVICE_CPU, M40_WFMT_INT4, files, 2, 0};
        same_pass(&q, &sa);
        sweep(M40F_HOST, "chatglm2 int4 pre-quantized, 2 shards (host allocations)", glm_pass, &sa);
    }
    remove(paths[0]);
    remove(paths[1]);
    rmdir(dir);
}

/* ---- tokenizer and safetensors (host only) ------------------------------- */

static const char TEXT[] = "Hello world: fault injection, \xe2\x96\x81 and bytes \xff\xfe.";

/* load + encode; ids/n filled on success */
static pass_result tokenizer_pass(int32_t *ids, size_t cap, size_t *n, const int32_t *ref,
                                  size_t nref) {
    pass_result r = {M40_OK, "", 0, 1, 1};
    m40_tokenizer *tok = NULL;
    m40f_set_phase("tokenizer_load");
    m40_status st = m40_tokenizer_load_file(TOKENIZER, &tok);
    if (st != M40_OK) {
        fail_at(&r, st, tok ? m40_tokenizer_errmsg(tok) : st == M40_ERR_OOM_HOST ? "(no handle)" : "");
    } else {
        m40f_set_phase("tokenizer_encode");
        st = m40_tokenizer_encode(tok, TEXT, sizeof TEXT - 1, ids, cap, n);
        if (st != M40_OK) {
            fail_at(&r, st, m40_tokenizer_errmsg(tok));
            /* still usable: the same call succeeds once memory is back */
            m40f_set_phase("check_usable");
            size_t n2 = 0;
            r.usable = m40_tokenizer_encode(tok, TEXT, sizeof TEXT - 1, NULL, 0, &n2) == M40_OK;
        } else if (ref) {
            r.exact = *n == nref && !memcmp(ids, ref, nref * sizeof *ids);
        }
    }
    m40f_set_phase("teardown");
    m40_tokenizer_destroy(tok);
    return r;
}

static pass_result st_pass(int *ntensors) {
    pass_result r = {M40_OK, "", 0, 1, 1};
    m40_st_file *f = NULL;
    m40f_set_phase("safetensors_open");
    m40_status st = m40_st_open(ST_SMALL, &f);
    if (st != M40_OK) fail_at(&r, st, f ? m40_st_errmsg(f) : st == M40_ERR_OOM_HOST ? "(no handle)" : "");
    else if (ntensors) {
        *ntensors = (int)m40_st_get_count(f);
        for (size_t i = 0; i < m40_st_get_count(f); i++)
            if (m40_st_find(f, m40_st_get(f, i)->name) != m40_st_get(f, i)) r.exact = 0;
    }
    m40f_set_phase("teardown");
    m40_st_destroy(f);
    return r;
}

/* A sweep over a pass without a context: tokenizer (which = 0), safetensors (1). */
static void small_sweep(int which) {
    const char *what = which == 0 ? "tokenizer load+encode" : "safetensors open";
    int32_t ref[256], got[256];
    size_t nref = 0, n = 0;
    int nt0 = 0, nt = 0;
    m40f_arm(M40F_HOST, 0);
    pass_result r0 = which == 0 ? tokenizer_pass(ref, 256, &nref, NULL, 0) : st_pass(&nt0);
    m40f_disarm(M40F_HOST);
    CHECK_ST(r0.st, M40_OK);
    CHECK(m40f_live(M40F_HOST) == 0);
    if (r0.st != M40_OK) return;
    int fds0 = open_fds();
    printf("%s: fault-free pass makes %ld host allocations\n", what, m40f_calls(M40F_HOST));
    long N, stride = sweep_stride();
    for (N = 1; N <= MAX_SITES; N += stride) {
        m40f_arm(M40F_HOST, N);
        nt = 0;
        pass_result r = which == 0 ? tokenizer_pass(got, 256, &n, ref, nref) : st_pass(&nt);
        m40f_disarm(M40F_HOST);
        if (which == 1 && r.st == M40_OK) r.exact &= nt == nt0;
        if (!m40f_hit(M40F_HOST)) {
            CHECK_ST(r.st, M40_OK);
            CHECK(r.exact);
            break;
        }
        count_site(m40f_hit_phase(M40F_HOST), m40f_hit_fn(M40F_HOST), r.st != M40_OK);
        long live = m40f_live(M40F_HOST);
        int fds = open_fds();
        int ok = (r.st != M40_OK ? r.msg[0] != 0 : r.exact) && r.usable && live == 0 && fds == fds0;
        m40t_checks++;
        if (!ok) {
            m40t_failures++;
            fprintf(stderr, "FAIL %s: allocation %ld (%s in %s): %s '%s'; live blocks %ld, fds %d (start %d)\n",
                    what, N, m40f_hit_fn(M40F_HOST), m40f_hit_phase(M40F_HOST),
                    m40_status_str(r.st), r.msg, live, fds, fds0);
        }
    }
    CHECK(N <= MAX_SITES);
    print_tally(what);
}

/* The hooks themselves: calls from this file and from libm40.a's objects are
** seen, the N-th fails, and a block left behind is counted (so the sweeps'
** "no leak" can fail). */
static void test_hooks(void) {
    m40f_arm(M40F_HOST, 0);
    void *volatile p = malloc(16);
    CHECK(p != NULL && m40f_calls(M40F_HOST) == 1 && m40f_live(M40F_HOST) == 1);
    free(p);
    CHECK(m40f_live(M40F_HOST) == 0);
    m40_st_file *f = NULL;
    CHECK_ST(m40_st_open(ST_SMALL, &f), M40_OK);
    CHECK(m40f_calls(M40F_HOST) > 1 && m40f_live(M40F_HOST) > 0); /* inside libm40.a */
    m40_st_destroy(f);
    CHECK(m40f_live(M40F_HOST) == 0);
    m40f_disarm(M40F_HOST);
    m40f_arm(M40F_HOST, 2);
    void *volatile a = malloc(8), *volatile b = malloc(8);
    CHECK(a != NULL && b == NULL && m40f_hit(M40F_HOST) && !strcmp(m40f_hit_fn(M40F_HOST), "malloc"));
    m40f_disarm(M40F_HOST);
    CHECK(m40f_live(M40F_HOST) == 1); /* a, not freed yet: a leak is seen */
    free(a);
    CHECK(m40f_live(M40F_HOST) == 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--gpu")) {
        /* every kernel loaded at context creation: with lazy loading (the
        ** CUDA 12 default) a path taken only after a fault (a GEMM without
        ** split-K) would load a module and look like a device leak */
        setenv("CUDA_MODULE_LOADING", "EAGER", 0);
        m40_ctx *probe = m40t_gpu_ctx_or_skip("test_gpu_fault");
        if (!probe) return M40T_SKIP;
        m40_ctx_destroy(probe);
        /* warm-up: the first pass loads the kernels; device memory is
        ** compared from the second on */
        float in[IMG * IMG * 3] = {0}, lg[NLOGITS_MAX];
        size_t n = 0;
        pass_result w = resnet_pass(0, M40_LAYOUT_NHWC, in, lg, &n, NULL);
        CHECK_ST(w.st, M40_OK);
        resnet_sweep(M40F_DEVICE, 0, M40_LAYOUT_NHWC);
        resnet_sweep(M40F_DEVICE, 0, M40_LAYOUT_NCHW);
        /* the same for ChatGLM2, after a warm-up pass of its own (its
        ** kernels, the first capture) */
        glm_arg ga = {0, M40_WFMT_FP16, NULL, 0, 0};
        pass_result gw = glm_pass(&ga, lg, &n, NULL);
        CHECK_ST(gw.st, M40_OK);
        glm_sweep(M40F_DEVICE, 0, M40_WFMT_FP16);
        glm_sweep(M40F_DEVICE, 0, M40_WFMT_INT4);
        glm_slots_sweep(M40F_DEVICE, 0);
        return m40t_finish("test_gpu_fault");
    }
    test_hooks();
    resnet_sweep(M40F_HOST, M40_DEVICE_CPU, M40_LAYOUT_NHWC);
    resnet_sweep(M40F_HOST, M40_DEVICE_CPU, M40_LAYOUT_NCHW);
    glm_sweep(M40F_HOST, M40_DEVICE_CPU, M40_WFMT_FP16);
    glm_sweep(M40F_HOST, M40_DEVICE_CPU, M40_WFMT_INT4);
    glm_slots_sweep(M40F_HOST, M40_DEVICE_CPU);
    glm_shards_sweep();
    small_sweep(0);
    small_sweep(1);
    return m40t_finish("test_fault");
}
