/* m40-soak: a long run that must leave nothing behind (issue 15).
** Runs a model for many units of work and every --every units samples
**   device memory used   cudaMemGetInfo (through m40_ctx_get_info) and NVML's
**                        view of the same board (when libnvidia-ml loads)
**   host RSS             /proc/self/statm, resident pages x page size
**   open descriptors     entries of /proc/self/fd
** The models:
**   resnet50 (default)   one unit = one batch of the library's ResNet graph
**                        (seeded random weights, or --weights FILE), replaying
**                        a captured CUDA graph on a GPU
**   chatglm2             one unit = one decoded token: rounds of a prefilled
**                        random prompt and --round decode steps (the step
**                        replayed as a CUDA graph on a GPU), sampled with
**                        m40_sample, rewinds between rounds and a full reset
**                        (KV cache overwritten with noise) every few rounds
**                        (soak_glm.c). Random weights of --shape (mid: 8
**                        layers, hidden 2048, vocab 65024) or --weights FILE.
** It writes the curve as CSV (--csv PATH) and prints a verdict: after the
** warm-up (--warmup units), every later sample must stay within 1 MB of
** the first one after it (device memory and RSS; descriptors exactly).
**   m40-soak [--model resnet50] [--batches 1000] [--batch 32] [--size 224]
**            [--every 10] [--warmup 50] [--csv PATH] [--cpu] [--device D]
**            [--nchw] [--no-graph] [--weights FILE]
**   m40-soak --model chatglm2 [--steps 10000] [--round 200] [--prompt 40]
**            [--chunk 16] [--reset-every 4] [--ctx 1024] [--dtype fp16]
**            [--shape mid|tiny|6b] [--seed S] [--every 100] [--warmup W]
**            [--csv PATH] [--cpu] [--device D] [--no-graph] [--weights FILE]
** Exit: 0 flat, 1 not flat or a run failed, 2 bad options, 77 no GPU
** (without --cpu). scripts/h200-soak.sh runs both on the H200; CI runs a
** few CPU units of each (tests/fault/tests.cmake). */
#define _POSIX_C_SOURCE 200809L
#include "m40/models.h"

#include "measure/nvml.h"
#include "soak_glm.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLAT_BYTES (1024.0 * 1024.0) /* "flat": within 1 MB (MiB) */

/* Under AddressSanitizer (the ASan+UBSan CI build) freed blocks wait in a
** quarantine of up to 256 MB on purpose, which RSS would show as growth:
** m40-soak reuses them at once instead (ASAN_OPTIONS still overrides). A
** plain build never calls this. */
const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void) {
    return "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
}

typedef struct sample {
    long batch;
    double t_s;
    long long dev_used;  /* bytes, cudaMemGetInfo; -1 on a CPU context */
    long long nvml_used; /* bytes, NVML; -1 when not read */
    long long rss;       /* bytes */
    int fds;
} sample;

typedef struct opts {
    int glm;       /* --model chatglm2 */
    long batches, every, warmup; /* units: batches or decode steps */
    int batch, size, cpu, device, nchw, no_graph;
    const char *csv, *weights;
    soak_glm_opts g;
} opts;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, res = -1;
    if (f) {
        if (fscanf(f, "%lld %lld", &size, &res) != 2) res = -1;
        fclose(f);
    }
    return res < 0 ? -1 : res * (long long)sysconf(_SC_PAGESIZE);
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: m40-soak [--model resnet50] [--batches N] [--batch B] [--size S] [--every K] "
            "[--warmup W] [--csv PATH] [--cpu] [--device D] [--nchw] [--no-graph] "
            "[--weights FILE]\n"
            "       m40-soak --model chatglm2 [--steps N] [--round R] [--prompt P] [--chunk T] "
            "[--reset-every K] [--ctx L] [--dtype fp32|fp16|int8|int4|int4g128] "
            "[--shape mid|tiny|6b] [--seed S] [--every K] [--warmup W] [--csv PATH] [--cpu] "
            "[--device D] [--no-graph] [--weights FILE]\n");
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_format(const char *s, m40_wformat *f) {
    for (int i = 0; i < M40_WFMT_COUNT; i++)
        if (!strcmp(s, m40_wformat_name((m40_wformat)i))) {
            *f = (m40_wformat)i;
            return 1;
        }
    return 0;
}

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.batches = -1, .every = -1, .warmup = -1, .batch = 32, .size = 224, .device = 0};
    soak_glm_opts_init(&o->g);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--cpu")) o->cpu = 1;
        else if (!strcmp(a, "--nchw")) o->nchw = 1;
        else if (!strcmp(a, "--no-graph")) o->no_graph = 1;
        else if (!v) return 0;
        else if (!strcmp(a, "--model") && (!strcmp(v, "resnet50") || !strcmp(v, "chatglm2")))
            o->glm = !strcmp(v, "chatglm2"), i++;
        else if ((!strcmp(a, "--batches") || !strcmp(a, "--steps")) &&
                 parse_long(v, 1, 100000000, &x)) o->batches = x, i++;
        else if (!strcmp(a, "--every") && parse_long(v, 1, 1000000, &x)) o->every = x, i++;
        else if (!strcmp(a, "--warmup") && parse_long(v, 0, 100000000, &x)) o->warmup = x, i++;
        else if (!strcmp(a, "--batch") && parse_long(v, 1, 4096, &x)) o->batch = (int)x, i++;
        else if (!strcmp(a, "--size") && parse_long(v, 32, 4096, &x)) o->size = (int)x, i++;
        else if (!strcmp(a, "--device") && parse_long(v, 0, 1023, &x)) o->device = (int)x, i++;
        else if (!strcmp(a, "--round") && parse_long(v, 1, 1 << 20, &x)) o->g.round = x, i++;
        else if (!strcmp(a, "--prompt") && parse_long(v, 1, 1 << 20, &x)) o->g.prompt = (int)x, i++;
        else if (!strcmp(a, "--chunk") && parse_long(v, 1, 1 << 16, &x)) o->g.chunk = (int)x, i++;
        else if (!strcmp(a, "--reset-every") && parse_long(v, 1, 1 << 20, &x))
            o->g.reset_every = (int)x, i++;
        else if (!strcmp(a, "--ctx") && parse_long(v, 1, 1 << 22, &x)) o->g.ctx = x, i++;
        else if (!strcmp(a, "--seed") && parse_long(v, 0, 1L << 30, &x)) o->g.seed = (uint64_t)x, i++;
        else if (!strcmp(a, "--dtype") && parse_format(v, &o->g.format)) i++;
        else if (!strcmp(a, "--shape")) o->g.shape = v, i++;
        else if (!strcmp(a, "--csv")) o->csv = v, i++;
        else if (!strcmp(a, "--weights")) o->weights = v, i++;
        else return 0;
    }
    if (o->batches < 0) o->batches = o->glm ? 10000 : 1000;
    if (o->every < 0) o->every = o->glm ? 100 : 10;
    o->g.weights = o->weights;
    o->g.graph = !o->no_graph;
    /* chatglm2: past the first full reset after round 0 (every path has run) */
    if (o->warmup < 0) {
        long w = o->batches / 20 > 1 ? o->batches / 20 : 1;
        long g = o->g.round * (o->g.reset_every + 1);
        o->warmup = o->glm && g > w ? g : w;
    }
    if (o->warmup >= o->batches) o->warmup = o->batches - 1;
    return 1;
}

/* NVML's used bytes of the context's board; -1 when NVML is not there. */
typedef struct nvml_view {
    m40__nvml t;
    m40__nvml_dev dev;
    int ok;
} nvml_view;

static void nvml_start(nvml_view *n, int device) {
    char why[256];
    memset(n, 0, sizeof *n);
    if (m40__nvml_open(&n->t, why, sizeof why) != 0) return;
    /* the CUDA ordinal is NVML's index unless CUDA_VISIBLE_DEVICES reorders them */
    if (n->t.device_by_index && n->t.memory && !getenv("CUDA_VISIBLE_DEVICES") &&
        n->t.device_by_index((unsigned)device, &n->dev) == 0)
        n->ok = 1;
    else
        m40__nvml_close(&n->t);
}

static long long nvml_used(nvml_view *n) {
    m40__nvml_memory m;
    return n->ok && n->t.memory(n->dev, &m) == 0 ? (long long)m.used : -1;
}

static sample take(m40_ctx *ctx, nvml_view *nv, long batch, double t0) {
    sample s = {batch, now_s() - t0, -1, nvml_used(nv), rss_bytes(), open_fds()};
    m40_device_info info;
    if (m40_ctx_get_info(ctx, &info) == M40_OK && info.is_gpu)
        s.dev_used = (long long)info.total_bytes - (long long)info.free_bytes;
    return s;
}

/* Largest |x - base| over samples[from..n) of one column; -1 if unread. */
static double drift(const sample *s, int n, int from, int col) {
    double worst = 0;
    for (int i = from; i < n; i++) {
        long long b = col == 0 ? s[from].dev_used : col == 1 ? s[from].nvml_used
                    : col == 2 ? s[from].rss : s[from].fds;
        long long x = col == 0 ? s[i].dev_used : col == 1 ? s[i].nvml_used
                    : col == 2 ? s[i].rss : s[i].fds;
        if (b < 0 || x < 0) return -1;
        double d = fabs((double)(x - b));
        if (d > worst) worst = d;
    }
    return worst;
}

/* The ResNet workload: one graph, one batch per unit. */
typedef struct resnet_run {
    m40_ctx *ctx;
    m40_graph *g;
    m40_tensor *tin, *tout;
    float *in, *out;
    size_t nin, nout;
    int graph;
} resnet_run;

static int resnet_open(m40_ctx *ctx, const opts *o, const m40_device_info *info, resnet_run *r) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    m40_st_file *w = NULL;
    if (o->weights && m40_st_open(o->weights, &w) != M40_OK) {
        fprintf(stderr, "m40-soak: %s\n", w ? m40_st_errmsg(w) : "cannot open");
        m40_st_destroy(w);
        return -1;
    }
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = o->batch;
    rd.height = rd.width = o->size;
    rd.layout = o->nchw ? M40_LAYOUT_NCHW : M40_LAYOUT_NHWC;
    rd.random_weights = w == NULL;
    rd.seed = 1;
    m40_resnet50_info ri;
    m40_status st = m40_resnet50_graph(ctx, &rd, w, &r->g, &ri);
    m40_st_destroy(w);
    if (st != M40_OK) {
        fprintf(stderr, "m40-soak: build: %s\n", m40_errmsg(ctx));
        return -1;
    }
    m40_graph_get_tensor(r->g, ri.input, &r->tin);
    m40_graph_get_tensor(r->g, ri.logits, &r->tout);
    r->nin = (size_t)m40_tensor_desc_numel(m40_tensor_get_desc(r->tin));
    r->nout = (size_t)m40_tensor_desc_numel(m40_tensor_get_desc(r->tout));
    r->in = malloc(r->nin * sizeof *r->in);
    r->out = malloc(r->nout * sizeof *r->out);
    if (!r->in || !r->out) {
        fprintf(stderr, "m40-soak: out of host memory\n");
        return -1;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < r->nin; i++) {
        x = x * 1664525u + 1013904223u;
        r->in[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    }
    /* one plain run, then (GPU) the capture that later batches replay */
    if (m40_tensor_upload(ctx, r->tin, r->in, r->nin * 4) != M40_OK ||
        m40_graph_run(r->g) != M40_OK || m40_ctx_sync(ctx) != M40_OK) {
        fprintf(stderr, "m40-soak: first run: %s\n", m40_errmsg(ctx));
        return -1;
    }
    if (info->is_gpu && !o->no_graph) {
        if (m40_graph_capture(r->g, 1) != M40_OK) {
            fprintf(stderr, "m40-soak: capture: %s\n", m40_errmsg(ctx));
            return -1;
        }
        r->graph = 1;
    }
    printf("m40-soak: ResNet (base %d, %d classes) batch %d at %dx%d %s on %s, %ld batches, "
           "%s, sample every %ld, warm-up %ld", ri.base, ri.classes, o->batch, o->size, o->size,
           o->nchw ? "NCHW" : "NHWC", info->name, o->batches,
           r->graph ? "CUDA graph replay" : "node by node", o->every, o->warmup);
    return 0;
}

static int resnet_step(resnet_run *r, long b, long last) {
    r->in[(size_t)b % r->nin] += 1e-3f; /* each batch's input differs a little */
    if (m40_tensor_upload(r->ctx, r->tin, r->in, r->nin * 4) != M40_OK ||
        m40_graph_run(r->g) != M40_OK ||
        m40_tensor_download(r->ctx, r->tout, r->out, r->nout * 4) != M40_OK) {
        fprintf(stderr, "m40-soak: batch %ld: %s\n", b, m40_errmsg(r->ctx));
        return -1;
    }
    if (b == 0 || b == last)
        for (size_t i = 0; i < r->nout; i++)
            if (!isfinite(r->out[i])) {
                fprintf(stderr, "m40-soak: batch %ld: logit %zu is %f\n", b, i, r->out[i]);
                return -1;
            }
    return 0;
}

static void resnet_close(resnet_run *r) {
    m40_graph_destroy(r->g);
    free(r->in);
    free(r->out);
}

int main(int argc, char **argv) {
    opts o;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (!parse(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = o.cpu ? M40_DEVICE_CPU : o.device;
    m40_ctx *ctx = NULL;
    m40_status st = m40_ctx_create(&cd, &ctx);
    if (st != M40_OK) {
        printf("m40-soak: no context (%s: %s)%s\n", m40_status_str(st), m40_errmsg(ctx),
               o.cpu ? "" : "; --cpu runs on the CPU reference");
        m40_ctx_destroy(ctx);
        return o.cpu ? 1 : 77;
    }
    m40_device_info info;
    m40_ctx_get_info(ctx, &info);
    int rc = 1, nsamples = 0;
    sample *smp = NULL;
    FILE *csv = NULL;
    resnet_run rn = {0};
    soak_glm *glm = NULL;
    nvml_view nv = {0};
    const char *unit = o.glm ? "step" : "batch";
    if (o.glm ? soak_glm_open(ctx, &o.g, &glm) != 0 : resnet_open(ctx, &o, &info, &rn) != 0)
        goto done;
    long cap = o.batches / o.every + 2;
    if (!(smp = malloc((size_t)cap * sizeof *smp))) {
        fprintf(stderr, "m40-soak: out of host memory\n");
        goto done;
    }
    nvml_start(&nv, info.device);
    if (o.glm)
        printf("m40-soak: on %s, %ld decode steps, sample every %ld, warm-up %ld", info.name,
               o.batches, o.every, o.warmup);
    printf("; NVML %s\n", nv.ok ? "yes" : "no");
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "m40-soak: cannot write %s\n", o.csv);
        goto done;
    }
    if (csv) fprintf(csv, "%s,t_s,dev_used_bytes,nvml_used_bytes,rss_bytes,open_fds\n", unit);
    double t0 = now_s();
    int base = -1; /* the first sample after the warm-up */
    for (long b = 0; b <= o.batches; b++) {
        if (b % o.every == 0 || b == o.batches) {
            m40_ctx_sync(ctx);
            if (glm && soak_glm_check(glm, b)) goto done;
            sample s = take(ctx, &nv, b, t0);
            if (nsamples < cap) smp[nsamples++] = s;
            if (base < 0 && b >= o.warmup) base = nsamples - 1;
            if (csv) {
                fprintf(csv, "%ld,%.3f,%lld,%lld,%lld,%d\n", s.batch, s.t_s, s.dev_used,
                        s.nvml_used, s.rss, s.fds);
                fflush(csv);
            }
        }
        if (b == o.batches) break;
        if (glm ? soak_glm_step(glm, b) != 0 : resnet_step(&rn, b, o.batches - 1) != 0) goto done;
    }
    double secs = now_s() - t0;
    /* the curve, compact: at most 20 rows */
    printf("%8s %9s %14s %14s %12s %5s\n", unit, "t_s", "dev_used_MiB", "nvml_used_MiB",
           "rss_MiB", "fds");
    int stepr = nsamples > 20 ? (nsamples + 19) / 20 : 1;
    for (int i = 0; i < nsamples; i++)
        if (i % stepr == 0 || i == nsamples - 1 || i == base)
            printf("%8ld %9.2f %14.3f %14.3f %12.3f %5d%s\n", smp[i].batch, smp[i].t_s,
                   smp[i].dev_used < 0 ? NAN : smp[i].dev_used / 1048576.0,
                   smp[i].nvml_used < 0 ? NAN : smp[i].nvml_used / 1048576.0,
                   smp[i].rss / 1048576.0, smp[i].fds, i == base ? "  <- after warm-up" : "");
    double dd = drift(smp, nsamples, base, 0), dn = drift(smp, nsamples, base, 1),
           dr = drift(smp, nsamples, base, 2), df = drift(smp, nsamples, base, 3);
    int flat = (dd < 0 || dd <= FLAT_BYTES) && (dn < 0 || dn <= FLAT_BYTES) && dr >= 0 &&
               dr <= FLAT_BYTES && df == 0;
    char ddev[32] = "n/a", dnv[32] = "n/a";
    if (dd >= 0) snprintf(ddev, sizeof ddev, "%.3f MiB", dd / 1048576.0);
    if (dn >= 0) snprintf(dnv, sizeof dnv, "%.3f MiB", dn / 1048576.0);
    printf("drift after warm-up (max |x - x[%s %ld]|): device %s, NVML %s, RSS %.3f MiB, "
           "fds %.0f\n", unit, smp[base].batch, ddev, dnv, dr / 1048576.0, df);
    int other = 0; /* a failed check besides the memory's */
    if (glm) other = soak_glm_summary(glm, secs, o.batches) != 0;
    else
        printf("%ld batches in %.1f s (%.1f images/s)\n", o.batches, secs,
               secs > 0 ? (double)o.batches * o.batch / secs : 0.0);
    printf("flat within 1 MB after warm-up: %s\n", flat ? "yes" : "no");
    rc = flat && !other ? 0 : 1;
done:
    if (nv.ok) m40__nvml_close(&nv.t);
    if (csv) fclose(csv);
    soak_glm_close(glm);
    resnet_close(&rn);
    free(smp);
    m40_ctx_destroy(ctx);
    return rc;
}
