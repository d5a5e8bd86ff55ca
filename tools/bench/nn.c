/* m40-bench's neural-network workloads: ResNet-50's convolutions one by one
** (vs a GEMM of the same FLOPs) and the whole ResNet-50 graph (images/s). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "m40/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int run_conv(bench_env *e) {
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
                      m40_fill_random(e->ctx, 1, M40_RANDOM_UNIFORM, -1, 1, a.x) == M40_OK &&
                      m40_fill_random(e->ctx, 2, M40_RANDOM_UNIFORM, -1, 1, a.w) == M40_OK &&
                      m40_fill_random(e->ctx, 3, M40_RANDOM_UNIFORM, -1, 1, a.b) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gas, &a.ga) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gbs, &a.gb) == M40_OK &&
                      m40_tensor_new(e->ctx, M40_DTYPE_F32, 2, gcs, &a.gc) == M40_OK &&
                      m40_fill_random(e->ctx, 4, M40_RANDOM_UNIFORM, -1, 1, a.ga) == M40_OK &&
                      m40_fill_random(e->ctx, 5, M40_RANDOM_UNIFORM, -1, 1, a.gb) == M40_OK;
            int64_t xns[4] = {N, H, H, C}, wns[4] = {K, R, R, C}, yns[4] = {N, P, P, K};
            ok = ok && m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, xns, &a.xn) == M40_OK &&
                 m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, wns, &a.wn) == M40_OK &&
                 m40_tensor_new(e->ctx, M40_DTYPE_F32, 4, yns, &a.yn) == M40_OK &&
                 m40_fill_random(e->ctx, 1, M40_RANDOM_UNIFORM, -1, 1, a.xn) == M40_OK &&
                 m40_fill_random(e->ctx, 2, M40_RANDOM_UNIFORM, -1, 1, a.wn) == M40_OK;
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
            m40_tensor_destroy(a.x); m40_tensor_destroy(a.w); m40_tensor_destroy(a.b); m40_tensor_destroy(a.y);
            m40_tensor_destroy(a.xn); m40_tensor_destroy(a.wn); m40_tensor_destroy(a.yn);
            m40_tensor_destroy(a.ga); m40_tensor_destroy(a.gb); m40_tensor_destroy(a.gc);
        }
    return 0;
}

/* ---- resnet50: the library's ResNet-50 graph (what examples/resnet50 runs), images/s ------------------------------------ */

#ifdef M40B_HAVE_RESNET
static m40_status resnet_op(bench_env *e, void *arg) {
    (void)e;
    return m40_graph_run((m40_graph *)arg);
}

int run_resnet50(bench_env *e) {
    int64_t sz[M40B_MAX_SIZES][3];
    int ns = parse_sizes(e->o->sizes, sz, M40B_MAX_SIZES);
    if (ns <= 0) {
        fprintf(stderr, "m40-bench resnet50: --sizes takes batch sizes, e.g. 1,8,64\n");
        return 2;
    }
    for (int i = 0; i < ns; i++)
        for (int l = 1; l >= 0; l--) { /* NHWC (the fast path), then NCHW (direct kernel) */
            if (!(e->o->layouts & (1 << l))) continue;
            char label[32], impl[40];
            int N = (int)sz[i][0];
            snprintf(label, sizeof label, "batch %d", N);
            /* the library's ResNet-50, seeded random weights (seed 1) */
            m40_resnet50_desc rd;
            m40_resnet50_desc_init(&rd);
            rd.batch = N;
            rd.layout = (m40_layout)l;
            rd.random_weights = 1;
            rd.seed = 1;
            m40_graph *g = NULL;
            m40_resnet50_info net;
            if (m40_resnet50_graph(e->ctx, &rd, NULL, &g, &net) != M40_OK) {
                fprintf(stderr, "m40-bench resnet50 %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                continue;
            }
            m40_tensor *in;
            if (m40_graph_get_tensor(g, net.input, &in) != M40_OK ||
                m40_fill_random(e->ctx, 9, M40_RANDOM_NORMAL, 0, 1, in) != M40_OK ||
                m40_graph_run(g) != M40_OK || m40_ctx_sync(e->ctx) != M40_OK) {
                fprintf(stderr, "m40-bench resnet50 %s: %s\n", label, m40_errmsg(e->ctx));
                e->failed = 1;
                m40_graph_destroy(g);
                continue;
            }
            int graph = e->info.is_gpu && m40_graph_capture(g, 1) == M40_OK;
            snprintf(impl, sizeof impl, "m40 %s%s", l ? "NHWC" : "NCHW", graph ? " (CUDA graph)" : "");
            m40__bench_result *r = new_result(e, "resnet50", impl, label, "GFLOP/s");
            if (r) {
                r->batch = N;
                r->work = 8.18e9 * N; /* 8.18 GFLOP per 224x224 image */
                if (measure(e, resnet_op, g, r) != 0) e->failed = 1;
                if (e->text) {
                    print_result(r);
                    printf("      = %.1f images/s (8.18 GFLOP/image); PyTorch side: "
                           "bench/bench_torch.py resnet50\n", r->value / 8.18);
                }
            }
            m40_graph_destroy(g);
        }
    return 0;
}
#endif

/* ---- the command table ------------------------------------------------------ */
