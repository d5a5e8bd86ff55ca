/* resnet50: ImageNet classification on the libm40 public API.
**
**   resnet50 --weights resnet50.safetensors cat.jpg dog.png   top-5 per image
**   resnet50 --random-weights [--seed N] --batch 64 --bench 20 timing
**
** Weights: a safetensors file with torchvision's state_dict names (see
** export_torchvision.py). Class names come from its "categories" metadata
** when present. Images are decoded by content (PNG, JPEG, PPM/PGM),
** preprocessed as torchvision's eval transform and run as one batch.
** The network is the library's ResNet builder, m40_resnet50_graph
** (m40/models.h): the graph m40-plan --model resnet50 plans. */
#define _POSIX_C_SOURCE 200809L
#include "image.h"
#include "resnet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: resnet50 (--weights FILE | --random-weights [--seed N]) [options] [IMAGE...]\n"
            "  --weights FILE       torchvision-layout ResNet weights (.safetensors)\n"
            "  --random-weights     seeded random weights (benchmarking; no class names)\n"
            "  --seed N             seed for --random-weights (default 0)\n"
            "  --device N | --cpu   CUDA device (default 0) or the CPU reference\n"
            "  --batch N            batch size when no images are given (default 1)\n"
            "  --bench R            time R runs after warm-up (CUDA graph replay on a GPU)\n"
            "  --card m40-12g|m40-24g  plan against a card's memory (default: this device)\n"
            "  --input-tensor FILE  take the batch from tensor \"input\" [N,3,224,224] of a\n"
            "                       .safetensors file instead of images (for comparisons)\n"
            "  --save-logits FILE   write the logits as raw little-endian float32\n"
            "  --layout nhwc|nchw   activation layout (default nhwc: convs as GEMMs on a GPU)\n"
            "  --conv ours|cudnn|auto  conv engine (auto: each conv timed once with ours and\n"
            "                       cuDNN, the faster kept); prints the per-conv table\n");
}

/* ---- --conv: the conv engine and its per-conv table (issue 5, cuDNN) ---- */
static int conv_engine_setup(m40_ctx *ctx, const char *name) {
    m40_conv_engine e = !strcmp(name, "ours")    ? M40_CONV_ENGINE_OURS
                        : !strcmp(name, "cudnn") ? M40_CONV_ENGINE_CUDNN
                        : !strcmp(name, "auto")  ? M40_CONV_ENGINE_AUTO
                                                 : M40_CONV_ENGINE_DEFAULT;
    if (e == M40_CONV_ENGINE_DEFAULT) {
        fprintf(stderr, "resnet50: --conv ours, cudnn or auto\n");
        return 2;
    }
    if (m40_ctx_set_conv_engine(ctx, e) != M40_OK) {
        fprintf(stderr, "resnet50: --conv %s: %s\n", name, m40_errmsg(ctx));
        return 1;
    }
    return 0;
}

static void conv_engine_table(m40_graph *g, FILE *f) {
    int v = m40_cudnn_version();
    fprintf(f, "conv engines (cuDNN %s):\n", v ? "built in" : "not built in");
    fprintf(f, "  %-22s %-54s %9s %9s  %-5s %s\n", "conv", "shape", "ours ms", "cuDNN ms",
            "runs", "cuDNN algorithm / note");
    double ours = 0, cudnn = 0, best = 0;
    int n = 0, ncudnn = 0, timed = 1;
    for (int i = 0; i < m40_graph_get_node_count(g); i++) {
        m40_conv_choice c;
        if (m40_graph_get_conv_choice(g, i, &c) != M40_OK) continue; /* not a conv */
        n++;
        ncudnn += c.engine == M40_CONV_ENGINE_CUDNN;
        timed &= c.ours_ms > 0 && c.cudnn_ms > 0;
        ours += c.ours_ms;
        cudnn += c.cudnn_ms;
        best += c.engine == M40_CONV_ENGINE_CUDNN ? c.cudnn_ms : c.ours_ms;
        fprintf(f, "  %-22s %-54s %9.4f %9.4f  %-5s %s%s%s%s\n", c.node_name, c.shape, c.ours_ms,
                c.cudnn_ms, m40_conv_engine_name(c.engine), c.cudnn_algo_name,
                c.cudnn_fused ? " fused" : "", c.cudnn_algo_name[0] && c.note[0] ? ", " : "",
                c.note);
    }
    if (timed && n)
        fprintf(f, "  sum over %d convs: ours %.3f ms, cuDNN %.3f ms, chosen %.3f ms "
                "(%d on cuDNN); GPU time per conv, as in a CUDA-graph replay\n",
                n, ours, cudnn, best, ncudnn);
    else
        fprintf(f, "  %d convs, %d on cuDNN\n", n, ncudnn);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Splits the newline-separated "categories" metadata into names. NULL when
** there are none or memory runs out; a missing name prints as "no class
** names", so running out here costs only the labels. */
static char **categories(m40_st_file *w, int n) {
    const char *s = w ? m40_st_get_metadata(w, "categories") : NULL;
    if (!s) return NULL;
    char **names = calloc((size_t)n, sizeof *names);
    if (!names) return NULL;
    for (int i = 0; i < n && *s; i++) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        names[i] = strndup(s, len);
        s += len + (e != NULL);
    }
    return names;
}

/* Prints one image's top-5 (softmax percentages). Returns 0, or -1 without
** a table when a logit is NaN or infinite: the softmax would print "-nan%". */
static int print_top5(const char *image, const float *l, int classes, char **names) {
    printf("%s:\n", image);
    for (int c = 0; c < classes; c++)
        if (!isfinite(l[c])) {
            printf("  no top-5: logit %d is %s (the network produced non-finite values)\n", c,
                   isnan(l[c]) ? "NaN" : "infinite");
            return -1;
        }
    double mx = l[0], z = 0;
    for (int c = 1; c < classes; c++) mx = l[c] > mx ? l[c] : mx;
    for (int c = 0; c < classes; c++) z += exp(l[c] - mx);
    int top[5] = {-1, -1, -1, -1, -1};
    for (int k = 0; k < 5 && k < classes; k++)
        for (int c = 0; c < classes; c++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= top[j] == c;
            if (!taken && (top[k] < 0 || l[c] > l[top[k]])) top[k] = c;
        }
    for (int k = 0; k < 5 && top[k] >= 0; k++)
        printf("  %6.2f%%  %4d  %s\n", 100.0 * exp(l[top[k]] - mx) / z, top[k],
               names && names[top[k]] ? names[top[k]] : "(no class names in the weights file)");
    return 0;
}

int main(int argc, char **argv) {
    const char *wpath = NULL, *card = NULL, *in_path = NULL, *logits_path = NULL;
    const char *conv = NULL; /* --conv */
    int random = 0, device = 0, batch = 1, bench = 0;
    m40_layout layout = M40_LAYOUT_NHWC;
    uint64_t seed = 0;
    /* Everything main owns, NULL until made, freed once at `done` on every
    ** exit (all destroy functions and free() take NULL). */
    int rc = 1; /* exit status: 0 ok, 1 failure, 2 usage */
    const char **images = NULL;
    m40_st_file *inf = NULL, *w = NULL;
    float *input = NULL, *staged = NULL, *logits = NULL; /* [N,3,224,224] NCHW, staged NHWC */
    double *t = NULL;                                    /* [bench] seconds */
    char **names = NULL;                                 /* [classes] or NULL */
    rn_image img = {0};
    m40_ctx *ctx = NULL;
    m40_graph *g = NULL;
    m40_resnet50_info net = {0};
    int nimg = 0;

    images = calloc((size_t)argc, sizeof *images);
    if (!images) { fprintf(stderr, "resnet50: out of memory\n"); goto done; }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--weights") && v) wpath = argv[++i];
        else if (!strcmp(a, "--random-weights")) random = 1;
        else if (!strcmp(a, "--seed") && v) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--device") && v) device = atoi(argv[++i]);
        else if (!strcmp(a, "--cpu")) device = M40_DEVICE_CPU;
        else if (!strcmp(a, "--batch") && v) batch = atoi(argv[++i]);
        else if (!strcmp(a, "--bench") && v) bench = atoi(argv[++i]);
        else if (!strcmp(a, "--card") && v) card = argv[++i];
        else if (!strcmp(a, "--input-tensor") && v) in_path = argv[++i];
        else if (!strcmp(a, "--save-logits") && v) logits_path = argv[++i];
        else if (!strcmp(a, "--conv") && v) conv = argv[++i];
        else if (!strcmp(a, "--layout") && v) {
            const char *l = argv[++i];
            if (!strcmp(l, "nhwc")) layout = M40_LAYOUT_NHWC;
            else if (!strcmp(l, "nchw")) layout = M40_LAYOUT_NCHW;
            else { fprintf(stderr, "resnet50: --layout nhwc or nchw\n"); rc = 2; goto done; }
        }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); rc = 0; goto done; }
        else if (a[0] == '-') {
            fprintf(stderr, "resnet50: unknown option '%s'\n", a);
            usage(stderr);
            rc = 2;
            goto done;
        }
        else images[nimg++] = a;
    }
    if (!wpath == !random) {
        fprintf(stderr, "resnet50: give --weights FILE (export one with export_torchvision.py) "
                        "or --random-weights\n");
        usage(stderr);
        rc = 2;
        goto done;
    }
    if (batch < 1 || bench < 0) { fprintf(stderr, "resnet50: bad --batch or --bench\n"); rc = 2; goto done; }
    if (nimg && in_path) { fprintf(stderr, "resnet50: images or --input-tensor, not both\n"); rc = 2; goto done; }
    if (nimg) batch = nimg;
    const m40_st_tensor *int_t = NULL;
    if (in_path) {
        if (m40_st_open(in_path, &inf) != M40_OK) {
            fprintf(stderr, "resnet50: %s\n", m40_st_errmsg(inf));
            goto done;
        }
        int_t = m40_st_find(inf, "input");
        if (!int_t || int_t->dtype != M40_DTYPE_F32 || int_t->ndim != 4 || int_t->shape[1] != 3 ||
            int_t->shape[2] != 224 || int_t->shape[3] != 224) {
            fprintf(stderr, "resnet50: %s: need an f32 tensor \"input\" [N,3,224,224]\n", in_path);
            goto done;
        }
        batch = (int)int_t->shape[0];
    }

    char err[1024];
    if (wpath && m40_st_open(wpath, &w) != M40_OK) {
        fprintf(stderr, "resnet50: %s\n", m40_st_errmsg(w));
        goto done;
    }

    /* images first: a bad one is reported before the GPU is touched */
    input = malloc((size_t)batch * 3 * 224 * 224 * sizeof(float));
    if (!input) {
        fprintf(stderr, "resnet50: out of memory for a batch of %d input images\n", batch);
        goto done;
    }
    for (int i = 0; i < nimg; i++) {
        if (rn_image_load(images[i], &img, err, sizeof err) != 0) {
            fprintf(stderr, "resnet50: %s: %s\n", images[i], err);
            goto done;
        }
        if (rn_preprocess(&img, 256, 224, input + (size_t)i * 3 * 224 * 224) != 0) {
            fprintf(stderr, "resnet50: %s: out of memory preprocessing the image\n", images[i]);
            goto done;
        }
        rn_image_free(&img);
    }

    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = device;
    if (m40_ctx_create(&d, &ctx) != M40_OK) {
        fprintf(stderr, "resnet50: %s\n", m40_errmsg(ctx));
        if (device != M40_DEVICE_CPU) fprintf(stderr, "resnet50: use --cpu for the CPU reference\n");
        goto done;
    }
    int crc = conv ? conv_engine_setup(ctx, conv) : 0;
    if (crc) { rc = crc; goto done; }
    m40_device_info info;
    m40_ctx_get_info(ctx, &info);
    m40_budget budget, *bp = NULL;
    if (card) {
        if (m40_budget_preset(card, &budget) != M40_OK) {
            fprintf(stderr, "resnet50: unknown card '%s' (m40-12g, m40-24g)\n", card);
            rc = 2;
            goto done;
        }
        bp = &budget;
    } else if (info.is_gpu && m40_budget_device(ctx, &budget) == M40_OK) {
        bp = &budget;
    }
    /* the library's ResNet builder: architecture from the file, BN folded,
    ** planned against the budget and allocated */
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = batch;
    rd.layout = layout;
    rd.random_weights = random;
    rd.seed = seed;
    rd.budget = bp;
    m40_status st = m40_resnet50_graph(ctx, &rd, w, &g, &net);
    if (st != M40_OK) {
        fprintf(stderr, "resnet50: %s: %s\n", m40_status_str(st), m40_errmsg(ctx));
        goto done;
    }
    if (conv) conv_engine_table(g, stderr);
    fprintf(stderr, "resnet50: %s, batch %d, %s, planned %.1f MiB (weights %.1f, activations %.1f)\n",
            info.name, batch, layout == M40_LAYOUT_NHWC ? "NHWC" : "NCHW", net.plan.total_bytes / 1048576.0,
            net.plan.region_bytes[M40_REGION_WEIGHTS] / 1048576.0,
            net.plan.region_bytes[M40_REGION_ACTIVATIONS] / 1048576.0);

    m40_tensor *tin, *tout;
    m40_graph_get_tensor(g, net.input, &tin);
    m40_graph_get_tensor(g, net.logits, &tout);
    const float *host_in = int_t ? m40_st_get_data(inf, int_t) : nimg ? input : NULL; /* NCHW */
    if (host_in && layout == M40_LAYOUT_NHWC) {
        staged = malloc(m40_tensor_get_nbytes(tin));
        if (!staged) {
            fprintf(stderr, "resnet50: out of memory staging the input as NHWC\n");
            goto done;
        }
        rn_nchw_to_nhwc(host_in, staged, batch, 3, 224, 224);
        host_in = staged;
    }
    size_t nlog = (size_t)batch * net.classes;
    logits = malloc(nlog * sizeof(float));
    if (!logits) {
        fprintf(stderr, "resnet50: out of memory for %zu logits\n", nlog);
        goto done;
    }
    if (host_in) st = m40_tensor_upload(ctx, tin, host_in, m40_tensor_get_nbytes(tin));
    else st = m40_fill_random(ctx, seed + 7, M40_RANDOM_NORMAL, 0, 1, tin);
    if (st == M40_OK) st = m40_graph_run(g);
    if (st == M40_OK) st = m40_tensor_download(ctx, tout, logits, nlog * sizeof(float));
    if (st != M40_OK) {
        fprintf(stderr, "resnet50: %s\n", m40_errmsg(ctx));
        goto done;
    }
    if (logits_path) {
        FILE *lf = fopen(logits_path, "wb");
        int wrote = lf && fwrite(logits, sizeof(float), nlog, lf) == nlog;
        if (lf && fclose(lf) != 0) wrote = 0; /* a full disk can show only at close */
        if (!wrote) {
            fprintf(stderr, "resnet50: cannot write %s\n", logits_path);
            goto done;
        }
    }
    names = categories(w, net.classes);
    int nonfinite = 0;
    for (int i = 0; i < nimg; i++)
        nonfinite += print_top5(images[i], logits + (size_t)i * net.classes, net.classes, names) != 0;
    if (nonfinite) {
        /* NaN/Inf logits are a wrong answer, not a prediction: fail the run */
        fprintf(stderr, "resnet50: non-finite logits for %d of %d images\n", nonfinite, nimg);
        goto done;
    }
    if (bench) {
        int graph = info.is_gpu && m40_graph_capture(g, 1) == M40_OK;
        t = malloc((size_t)bench * sizeof(double));
        if (!t) { fprintf(stderr, "resnet50: out of memory for %d timings\n", bench); goto done; }
        for (int r = -3; r < bench; r++) {
            double t0 = now_s();
            st = m40_graph_run(g);
            if (st == M40_OK) st = m40_ctx_sync(ctx);
            if (st != M40_OK) { fprintf(stderr, "resnet50: %s\n", m40_errmsg(ctx)); goto done; }
            if (r >= 0) t[r] = now_s() - t0;
        }
        qsort(t, (size_t)bench, sizeof *t, cmp_d);
        double med = t[bench / 2];
        printf("bench: batch %d, %s%s: median %.3f ms over %d runs, %.1f images/s, %.1f GFLOP/s "
               "(8.18 GFLOP/image at 224x224)\n", batch, info.name,
               graph ? " (CUDA graph replay)" : "", med * 1e3, bench, batch / med,
               batch * 8.18 / med);
    }
    rc = 0;

done:
    if (names) for (int c = 0; c < net.classes; c++) free(names[c]);
    free(names);
    free(t);
    free(logits);
    free(staged);
    free(input);
    rn_image_free(&img);
    free(images);
    m40_graph_destroy(g);
    m40_ctx_destroy(ctx);
    m40_st_destroy(w);
    m40_st_destroy(inf);
    return rc;
}
