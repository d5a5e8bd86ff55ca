/* The cuDNN conv engine on a GPU (exit 77 without one):
**  1. eager m40_conv2d with the context's engine CUDNN against the CPU
**     reference: seeded random data, odd shapes, strides, padding,
**     dilation, both layouts, every epilogue (scale, bias, residual, ReLU),
**     outputs poisoned with NaN first;
**  2. graphs with AUTO: every conv node records a choice (both engines
**     timed when cuDNN is in), runs and CUDA-graph replays match the CPU
**     graph; a graph mixing CUDNN and OURS nodes; m40_graph_tune.
** Without cuDNN built in, part 1 is skipped and part 2 checks that AUTO
** settles on ours with no error. */
#include "check.h"
#include "convnet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C, *G;
static int built_cudnn, have_cudnn; /* built in; and runs on this GPU */

/* epi bits: 1 scale, 2 bias, 4 residual, 8 ReLU */
static void eager_case(int N, int Cc, int H, int W, int K, int R, int S, int st, int pad, int dil,
                       int epi, m40_layout lay) {
    m40_conv2d_desc d = m40t_conv_desc(lay, st, pad, dil, epi & 8);
    int nhwc = lay == M40_LAYOUT_NHWC;
    int P = (H + 2 * pad - dil * (R - 1) - 1) / st + 1, Q = (W + 2 * pad - dil * (S - 1) - 1) / st + 1;
    m40_ctx *cs[2] = {G, C};
    m40_tensor *t[2][6];
    uint64_t seed = (uint64_t)(N * 131 + Cc * 17 + H * 7 + K + R * 3 + st + epi * 1000 + nhwc);
    for (int i = 0; i < 2; i++) {
        m40_ctx *c = cs[i];
        m40t_conv_tensors(c, nhwc, N, Cc, H, W, K, R, S, P, Q, t[i]);
        for (int j = 0; j < 5; j++)
            CHECK_ST(m40_fill_random(c, seed + (uint64_t)j, M40_RANDOM_UNIFORM, -1, 1, t[i][j]), M40_OK);
    }
    size_t nb = m40_tensor_get_nbytes(t[0][5]);
    float *got = malloc(nb), *ref = malloc(nb);
    m40t_poison(got, (int64_t)(nb / 4));
    CHECK_ST(m40_tensor_upload(G, t[0][5], got, nb), M40_OK);
    for (int i = 0; i < 2; i++) {
        m40_status s = m40_conv2d(cs[i], &d, t[i][0], t[i][1], epi & 1 ? t[i][2] : NULL,
                                  epi & 2 ? t[i][3] : NULL, epi & 4 ? t[i][4] : NULL, t[i][5]);
        CHECK(s == M40_OK);
        if (s != M40_OK) fprintf(stderr, "  %s: %s\n", i ? "CPU" : "cuDNN", m40_errmsg(cs[i]));
    }
    CHECK_ST(m40_tensor_download(G, t[0][5], got, nb), M40_OK);
    CHECK_ST(m40_tensor_download(C, t[1][5], ref, nb), M40_OK);
    char name[128];
    snprintf(name, sizeof name, "cuDNN conv %s N%d C%d %dx%d K%d %dx%d s%d p%d d%d epi%d",
             nhwc ? "NHWC" : "NCHW", N, Cc, H, W, K, R, S, st, pad, dil, epi);
    /* FP32 sums of C·R·S terms of magnitude <= 1 vs double. cuDNN may pick a
    ** transform algorithm (Winograd, FFT) whose rounding is a few times that
    ** of a direct sum: 4x the bound test_gpu_conv uses for ours. */
    double crs = (double)Cc * R * S;
    m40t_compare(name, got, ref, (int64_t)(nb / 4), (m40t_tol){crs * 1e-6, 4e-5, 1e-9});
    free(got);
    free(ref);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++) m40_tensor_destroy(t[i][j]);
}

/* M40_CONV_ENGINE_QUICK=1: 2 of the 7 epilogues, the graphs in NHWC only
** (compute-sanitizer's initcheck runs cuDNN's algorithm search ~100x slower) */
static int quick;

static void test_eager(void) {
    CHECK_ST(m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_CUDNN), M40_OK);
    if (m40_ctx_get_conv_engine(G) != M40_CONV_ENGINE_CUDNN) {
        fprintf(stderr, "cuDNN does not run here: %s\n", m40_errmsg(G));
        return;
    }
    static const int epis[] = {0, 1 | 2 | 4 | 8, 2 | 8, 4, 2 | 4, 1 | 2, 4 | 8};
    /* quick (the sanitizers, scripts/gpu-sanitize.sh): no epilogue and all of it */
    unsigned nepi = quick ? 2 : sizeof epis / sizeof *epis;
    for (int l = 0; l < 2; l++) {
        m40_layout lay = l ? M40_LAYOUT_NHWC : M40_LAYOUT_NCHW;
        for (unsigned e = 0; e < nepi; e++) {
            int epi = epis[e];
            eager_case(2, 64, 14, 14, 64, 3, 3, 1, 1, 1, epi, lay);  /* ResNet-like 3x3 */
            eager_case(3, 17, 9, 11, 13, 3, 3, 2, 1, 1, epi, lay);   /* odd everything */
            eager_case(1, 3, 23, 21, 16, 7, 7, 2, 3, 1, epi, lay);   /* a stem: C = 3 */
            eager_case(2, 32, 7, 7, 33, 1, 1, 1, 0, 1, epi, lay);    /* 1x1: a GEMM */
            eager_case(2, 9, 10, 12, 8, 3, 3, 1, 2, 2, epi, lay);    /* dilation 2 */
            eager_case(1, 5, 6, 5, 7, 1, 3, 2, 0, 1, epi, lay);      /* 1x3, stride 2 */
        }
    }
    eager_case(1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 2 | 8, M40_LAYOUT_NHWC); /* the smallest */
    /* a second call of the same shape takes the cached plan */
    eager_case(3, 17, 9, 11, 13, 3, 3, 2, 1, 1, 1 | 2 | 4 | 8, M40_LAYOUT_NHWC);
    CHECK_ST(m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_OURS), M40_OK);
}

/* Runs net on both contexts with the same input and compares. */
static void compare_nets(const char *what, cn_net *gn, cn_net *cnet) {
    m40_tensor *xg, *xc, *yg, *yc;
    CHECK_ST(m40_graph_get_tensor(gn->g, gn->in_id, &xg), M40_OK);
    CHECK_ST(m40_graph_get_tensor(cnet->g, cnet->in_id, &xc), M40_OK);
    CHECK_ST(m40_graph_get_tensor(gn->g, gn->out_id, &yg), M40_OK);
    CHECK_ST(m40_graph_get_tensor(cnet->g, cnet->out_id, &yc), M40_OK);
    CHECK_ST(m40_fill_random(G, 77, M40_RANDOM_UNIFORM, -1, 1, xg), M40_OK);
    CHECK_ST(m40_fill_random(C, 77, M40_RANDOM_UNIFORM, -1, 1, xc), M40_OK);
    size_t nb = m40_tensor_get_nbytes(yg);
    float *got = malloc(nb), *ref = malloc(nb);
    m40t_poison(got, (int64_t)(nb / 4));
    CHECK_ST(m40_tensor_upload(G, yg, got, nb), M40_OK);
    CHECK_ST(m40_graph_run(gn->g), M40_OK);
    CHECK_ST(m40_graph_run(cnet->g), M40_OK);
    CHECK_ST(m40_tensor_download(G, yg, got, nb), M40_OK);
    CHECK_ST(m40_tensor_download(C, yc, ref, nb), M40_OK);
    /* four convs deep, inputs and weights scaled to keep values O(1) */
    m40t_compare(what, got, ref, (int64_t)(nb / 4), (m40t_tol){2e-5, 1e-4, 1e-9});
    free(got);
    free(ref);
}

static void print_choices(m40_graph *g) {
    for (int i = 0; i < 4; i++) {
        m40_conv_choice c;
        CHECK_ST(m40_graph_get_conv_choice(g, i, &c), M40_OK);
        printf("  %-2s %-52s asked %-5s runs %-5s ours %8.4f ms  cuDNN %8.4f ms  %s%s %s\n",
               c.node_name, c.shape, m40_conv_engine_name(c.asked), m40_conv_engine_name(c.engine),
               c.ours_ms, c.cudnn_ms, c.cudnn_algo_name, c.cudnn_fused ? " (fused)" : "", c.note);
    }
}

static void test_graph_auto(m40_layout lay) {
    const char *ln = lay == M40_LAYOUT_NHWC ? "NHWC" : "NCHW";
    cn_net gn, cnet;
    cn_build(G, lay, 3, 16, &gn);
    cn_build(C, lay, 3, 16, &cnet);
    CHECK(gn.st == M40_OK && cnet.st == M40_OK);
    if (gn.st || cnet.st) return;
    CHECK_ST(m40_graph_set_conv_engine(gn.g, -1, M40_CONV_ENGINE_AUTO), M40_OK);
    CHECK_ST(m40_graph_alloc(gn.g), M40_OK);
    CHECK_ST(m40_graph_alloc(cnet.g), M40_OK);
    cn_free_host(&gn);
    cn_free_host(&cnet);
    printf("auto, %s:\n", ln);
    print_choices(gn.g);
    for (int i = 0; i < 4; i++) {
        m40_conv_choice c;
        m40_graph_get_conv_choice(gn.g, i, &c);
        CHECK(c.asked == M40_CONV_ENGINE_AUTO);
        CHECK(c.engine == M40_CONV_ENGINE_OURS || c.engine == M40_CONV_ENGINE_CUDNN);
        if (have_cudnn) {
            CHECK(c.ours_ms > 0 && c.cudnn_ms > 0); /* both timed */
            CHECK(c.cudnn_algo >= 0);
            CHECK(c.engine == (c.cudnn_ms < c.ours_ms ? M40_CONV_ENGINE_CUDNN : M40_CONV_ENGINE_OURS));
        } else { /* ours, and a note that says why */
            CHECK(c.engine == M40_CONV_ENGINE_OURS && c.note[0]);
            if (!built_cudnn) CHECK(strstr(c.note, "not built in") != NULL);
        }
    }
    char what[64];
    snprintf(what, sizeof what, "auto graph %s, run", ln);
    compare_nets(what, &gn, &cnet);
    CHECK_ST(m40_graph_capture(gn.g, 1), M40_OK);
    snprintf(what, sizeof what, "auto graph %s, CUDA graph replay", ln);
    compare_nets(what, &gn, &cnet);
    CHECK_ST(m40_graph_tune(gn.g), M40_OK); /* drops the capture, times again */
    for (int i = 0; i < 4; i++) {
        m40_conv_choice c;
        CHECK_ST(m40_graph_get_conv_choice(gn.g, i, &c), M40_OK);
        CHECK(c.asked == M40_CONV_ENGINE_AUTO);
        if (have_cudnn) CHECK(c.ours_ms > 0 && c.cudnn_ms > 0);
    }
    snprintf(what, sizeof what, "auto graph %s, after m40_graph_tune", ln);
    compare_nets(what, &gn, &cnet);
    cn_free(&gn);

    if (!have_cudnn) {
        cn_free(&cnet);
        return;
    }
    /* explicit per node: cuDNN for a, c; ours for b; d inherits the context's (ours) */
    cn_build(G, lay, 3, 16, &gn);
    CHECK_ST(m40_graph_set_conv_engine(gn.g, 0, M40_CONV_ENGINE_CUDNN), M40_OK);
    CHECK_ST(m40_graph_set_conv_engine(gn.g, 1, M40_CONV_ENGINE_OURS), M40_OK);
    CHECK_ST(m40_graph_set_conv_engine(gn.g, 2, M40_CONV_ENGINE_CUDNN), M40_OK);
    CHECK_ST(m40_graph_alloc(gn.g), M40_OK);
    cn_free_host(&gn);
    printf("mixed, %s:\n", ln);
    print_choices(gn.g);
    static const m40_conv_engine want[4] = {M40_CONV_ENGINE_CUDNN, M40_CONV_ENGINE_OURS,
                                            M40_CONV_ENGINE_CUDNN, M40_CONV_ENGINE_OURS};
    for (int i = 0; i < 4; i++) {
        m40_conv_choice c;
        CHECK_ST(m40_graph_get_conv_choice(gn.g, i, &c), M40_OK);
        CHECK(c.engine == want[i] && c.asked == want[i]);
        CHECK(c.ours_ms == 0 && c.cudnn_ms == 0); /* nothing timed */
    }
    snprintf(what, sizeof what, "mixed graph %s, run", ln);
    compare_nets(what, &gn, &cnet);
    CHECK_ST(m40_graph_capture(gn.g, 1), M40_OK);
    snprintf(what, sizeof what, "mixed graph %s, CUDA graph replay", ln);
    compare_nets(what, &gn, &cnet);
    cn_free(&gn);

    /* the context's engine is the graphs' default: CUDNN everywhere */
    CHECK_ST(m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_CUDNN), M40_OK);
    cn_build(G, lay, 3, 16, &gn);
    CHECK_ST(m40_graph_alloc(gn.g), M40_OK);
    cn_free_host(&gn);
    for (int i = 0; i < 4; i++) {
        m40_conv_choice c;
        CHECK_ST(m40_graph_get_conv_choice(gn.g, i, &c), M40_OK);
        CHECK(c.engine == M40_CONV_ENGINE_CUDNN);
    }
    snprintf(what, sizeof what, "cuDNN-only graph %s (context default)", ln);
    compare_nets(what, &gn, &cnet);
    cn_free(&gn);
    CHECK_ST(m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_DEFAULT), M40_OK);
    cn_free(&cnet);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    quick = getenv("M40_CONV_ENGINE_QUICK") != NULL;
    G = m40t_gpu_ctx_or_skip("test_gpu_conv_engine");
    if (!G) {
        m40_ctx_destroy(C);
        return M40T_SKIP;
    }
    int v = m40_cudnn_version();
    built_cudnn = have_cudnn = v != 0;
    printf("cuDNN: %s (cudnnGetVersion %d)\n", have_cudnn ? "built in" : "not built in", v);
    if (have_cudnn) {
        test_eager();
        have_cudnn = m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_CUDNN) == M40_OK;
        m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_OURS);
    } else {
        CHECK_ST(m40_ctx_set_conv_engine(G, M40_CONV_ENGINE_CUDNN), M40_ERR_UNSUPPORTED);
        CHECK(strstr(m40_errmsg(G), "cuDNN: not built in") != NULL);
        printf("eager cuDNN cases skipped: %s\n", m40_errmsg(G));
    }
    test_graph_auto(M40_LAYOUT_NHWC);
    if (!quick) test_graph_auto(M40_LAYOUT_NCHW);
    m40_ctx_destroy(G);
    m40_ctx_destroy(C);
    return m40t_finish("test_gpu_conv_engine");
}
