/* m40-soak: a long run that must leave nothing behind (issue 15).
** Runs the ResNet example's graph (examples/resnet50/resnet.c; seeded random
** weights, or a weights file) for many batches, replaying a captured CUDA
** graph on a GPU, and every --every batches samples
**   device memory used   cudaMemGetInfo (through m40_ctx_get_info) and NVML's
**                        view of the same board (when libnvidia-ml loads)
**   host RSS             /proc/self/statm, resident pages x page size
**   open descriptors     entries of /proc/self/fd
** It writes the curve as CSV (--csv PATH) and prints a verdict: after the
** warm-up (--warmup batches), every later sample must stay within 1 MB of
** the first one after it (device memory and RSS; descriptors exactly).
**   m40-soak [--batches 1000] [--batch 32] [--size 224] [--every 10]
**            [--warmup 50] [--csv PATH] [--cpu] [--device D] [--nchw]
**            [--no-graph] [--weights FILE]
** Exit: 0 flat, 1 not flat or a run failed, 2 bad options, 77 no GPU
** (without --cpu). scripts/h200-soak.sh runs it on the H200; CI runs a few
** CPU batches (tests/fault/tests.cmake). */
#define _POSIX_C_SOURCE 200809L
#include "m40/models.h"

#include "measure/nvml.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLAT_BYTES (1024.0 * 1024.0) /* "flat": within 1 MB (MiB) */

typedef struct sample {
    long batch;
    double t_s;
    long long dev_used;  /* bytes, cudaMemGetInfo; -1 on a CPU context */
    long long nvml_used; /* bytes, NVML; -1 when not read */
    long long rss;       /* bytes */
    int fds;
} sample;

typedef struct opts {
    long batches, every, warmup;
    int batch, size, cpu, device, nchw, no_graph;
    const char *csv, *weights;
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

static void usage(void) {
    fprintf(stderr, "usage: m40-soak [--batches N] [--batch B] [--size S] [--every K] "
                    "[--warmup W] [--csv PATH] [--cpu] [--device D] [--nchw] [--no-graph] "
                    "[--weights FILE]\n");
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.batches = 1000, .every = 10, .warmup = -1, .batch = 32, .size = 224,
                .device = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--cpu")) o->cpu = 1;
        else if (!strcmp(a, "--nchw")) o->nchw = 1;
        else if (!strcmp(a, "--no-graph")) o->no_graph = 1;
        else if (!v) return 0;
        else if (!strcmp(a, "--batches") && parse_long(v, 1, 100000000, &x)) o->batches = x, i++;
        else if (!strcmp(a, "--every") && parse_long(v, 1, 1000000, &x)) o->every = x, i++;
        else if (!strcmp(a, "--warmup") && parse_long(v, 0, 100000000, &x)) o->warmup = x, i++;
        else if (!strcmp(a, "--batch") && parse_long(v, 1, 4096, &x)) o->batch = (int)x, i++;
        else if (!strcmp(a, "--size") && parse_long(v, 32, 4096, &x)) o->size = (int)x, i++;
        else if (!strcmp(a, "--device") && parse_long(v, 0, 1023, &x)) o->device = (int)x, i++;
        else if (!strcmp(a, "--csv")) o->csv = v, i++;
        else if (!strcmp(a, "--weights")) o->weights = v, i++;
        else return 0;
    }
    if (o->warmup < 0) o->warmup = o->batches / 20 > 1 ? o->batches / 20 : 1;
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

int main(int argc, char **argv) {
    opts o;
    if (!parse(argc, argv, &o)) {
        usage();
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
    float *in = NULL, *out = NULL;
    FILE *csv = NULL;
    m40_st_file *w = NULL;
    m40_graph *g = NULL;
    m40_resnet50_info ri;
    nvml_view nv = {0};
    int built = 0;
    if (o.weights) {
        if ((st = m40_st_open(o.weights, &w)) != M40_OK) {
            fprintf(stderr, "m40-soak: %s\n", m40_st_errmsg(w));
            goto done;
        }
    }
    m40_layout lay = o.nchw ? M40_LAYOUT_NCHW : M40_LAYOUT_NHWC;
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = o.batch;
    rd.height = rd.width = o.size;
    rd.layout = lay;
    rd.random_weights = w == NULL;
    rd.seed = 1;
    if ((st = m40_resnet50_graph(ctx, &rd, w, &g, &ri)) != M40_OK) {
        fprintf(stderr, "m40-soak: build: %s\n", m40_errmsg(ctx));
        goto done;
    }
    built = 1;
    m40_tensor *tin, *tout;
    m40_graph_get_tensor(g, ri.input, &tin);
    m40_graph_get_tensor(g, ri.logits, &tout);
    size_t nin = (size_t)m40_tensor_desc_numel(m40_tensor_get_desc(tin));
    size_t nout = (size_t)m40_tensor_desc_numel(m40_tensor_get_desc(tout));
    long cap = o.batches / o.every + 2;
    in = malloc(nin * sizeof *in);
    out = malloc(nout * sizeof *out);
    smp = malloc((size_t)cap * sizeof *smp);
    if (!in || !out || !smp) {
        fprintf(stderr, "m40-soak: out of host memory\n");
        goto done;
    }
    uint32_t r = 12345;
    for (size_t i = 0; i < nin; i++) {
        r = r * 1664525u + 1013904223u;
        in[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
    }
    /* one plain run, then (GPU) the capture that later batches replay */
    int graph = 0;
    if ((st = m40_tensor_upload(ctx, tin, in, nin * 4)) != M40_OK ||
        (st = m40_graph_run(g)) != M40_OK || (st = m40_ctx_sync(ctx)) != M40_OK) {
        fprintf(stderr, "m40-soak: first run: %s\n", m40_errmsg(ctx));
        goto done;
    }
    if (info.is_gpu && !o.no_graph) {
        if ((st = m40_graph_capture(g, 1)) != M40_OK) {
            fprintf(stderr, "m40-soak: capture: %s\n", m40_errmsg(ctx));
            goto done;
        }
        graph = 1;
    }
    nvml_start(&nv, info.device);
    printf("m40-soak: ResNet (base %d, %d classes) batch %d at %dx%d %s on %s, %ld batches, "
           "%s, sample every %ld, warm-up %ld; NVML %s\n",
           ri.base, ri.classes, o.batch, o.size, o.size, o.nchw ? "NCHW" : "NHWC", info.name,
           o.batches, graph ? "CUDA graph replay" : "node by node", o.every, o.warmup,
           nv.ok ? "yes" : "no");
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "m40-soak: cannot write %s\n", o.csv);
        goto done;
    }
    if (csv) fprintf(csv, "batch,t_s,dev_used_bytes,nvml_used_bytes,rss_bytes,open_fds\n");
    double t0 = now_s();
    int base = -1; /* the first sample after the warm-up */
    for (long b = 0; b <= o.batches; b++) {
        if (b % o.every == 0 || b == o.batches) {
            m40_ctx_sync(ctx);
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
        in[(size_t)b % nin] += 1e-3f; /* each batch's input differs a little */
        if ((st = m40_tensor_upload(ctx, tin, in, nin * 4)) != M40_OK ||
            (st = m40_graph_run(g)) != M40_OK ||
            (st = m40_tensor_download(ctx, tout, out, nout * 4)) != M40_OK) {
            fprintf(stderr, "m40-soak: batch %ld: %s\n", b, m40_errmsg(ctx));
            goto done;
        }
        if (b == 0 || b + 1 == o.batches)
            for (size_t i = 0; i < nout; i++)
                if (!isfinite(out[i])) {
                    fprintf(stderr, "m40-soak: batch %ld: logit %zu is %f\n", b, i, out[i]);
                    goto done;
                }
    }
    double secs = now_s() - t0;
    /* the curve, compact: at most 20 rows */
    printf("%8s %9s %14s %14s %12s %5s\n", "batch", "t_s", "dev_used_MiB", "nvml_used_MiB",
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
    printf("drift after warm-up (max |x - x[batch %ld]|): device %s, NVML %s, RSS %.3f MiB, "
           "fds %.0f\n", smp[base].batch, ddev, dnv, dr / 1048576.0, df);
    printf("%ld batches in %.1f s (%.1f images/s)\n", o.batches, secs,
           secs > 0 ? (double)o.batches * o.batch / secs : 0.0);
    printf("flat within 1 MB after warm-up: %s\n", flat ? "yes" : "no");
    rc = flat ? 0 : 1;
done:
    if (nv.ok) m40__nvml_close(&nv.t);
    if (csv) fclose(csv);
    if (built) m40_graph_destroy(g);
    m40_st_destroy(w);
    free(in);
    free(out);
    free(smp);
    m40_ctx_destroy(ctx);
    return rc;
}
