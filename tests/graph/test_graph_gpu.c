/* The executor on CUDA: the transformer layer and random DAGs as planned
** graphs on the GPU equal the GPU's eager ops bit for bit and the CPU graph
** within FP32 tolerance, with and without CUDA-graph capture (replayed
** twice, and after a new input). Exits 77 without a GPU. */
#include "check.h"
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

static m40_ctx *G, *C;

/* Runs the layer graph on ctx; capture: 0 none, 1 capture then replay. */
static int run_layer(m40_ctx *ctx, const fx_layer *l, int capture, const float *x2, float *y,
                     float *y_second) {
    size_t n = (size_t)(l->T * l->C);
    m40_graph *g = NULL;
    int x, yi, y16;
    m40_tensor *tx, *ty;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    CHECK_ST(fx_layer_build(g, l, &x, &yi, &y16), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, x, &tx), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, yi, &ty), M40_OK);
    CHECK_ST(m40_tensor_upload(ctx, tx, l->x, n * 4), M40_OK);
    if (capture) {
        CHECK_ST(m40_graph_run(g), M40_OK); /* warm: kernels loaded before capture */
        CHECK_ST(m40_graph_capture(g, 1), M40_OK);
        float *poison = malloc(n * 4);
        m40t_poison(poison, (int64_t)n);
        CHECK_ST(m40_tensor_upload(ctx, ty, poison, n * 4), M40_OK);
        free(poison);
        CHECK_ST(m40_graph_run(g), M40_OK); /* replay 1 */
    }
    CHECK_ST(m40_graph_run(g), M40_OK);     /* plain run, or replay 2 */
    CHECK_ST(m40_tensor_download(ctx, ty, y, n * 4), M40_OK);
    /* a new input, same graph (replayed when captured) */
    CHECK_ST(m40_tensor_upload(ctx, tx, x2, n * 4), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_tensor_download(ctx, ty, y_second, n * 4), M40_OK);
    m40_graph_destroy(g);
    return 1;
}

static void test_layer(int64_t T, int64_t Cm, int64_t D, int64_t F) {
    fx_layer l, l2;
    CHECK(fx_layer_init(&l, T, Cm, D, F, 9 + (uint64_t)T));
    CHECK(fx_layer_init(&l2, T, Cm, D, F, 1009 + (uint64_t)T)); /* l2.x: the second input */
    size_t n = (size_t)(T * Cm);
    float *ye = malloc(n * 4), *ye2 = malloc(n * 4), *yc = malloc(n * 4), *yc2 = malloc(n * 4);
    float *yg = malloc(n * 4), *yg2 = malloc(n * 4);
    uint16_t *h = malloc(n * 2);
    fx_layer lx2 = l;
    lx2.x = l2.x;
    CHECK_ST(fx_layer_eager(G, &l, ye, h), M40_OK);
    CHECK_ST(fx_layer_eager(G, &lx2, ye2, h), M40_OK);
    run_layer(C, &l, 0, l2.x, yc, yc2);
    /* cuBLAS vs the double-accumulating reference: FP32 rounding only */
    m40t_tol tol = {1e-4, 1e-4, 1e-9};
    for (int cap = 0; cap <= 1; cap++) {
        char name[96];
        run_layer(G, &l, cap, l2.x, yg, yg2);
        snprintf(name, sizeof name, "layer T%lld C%lld %s: gpu graph vs gpu eager",
                 (long long)T, (long long)Cm, cap ? "captured" : "plain");
        CHECK(m40t_compare(name, yg, ye, (int64_t)n, (m40t_tol){0, 0, 0}));
        snprintf(name, sizeof name, "layer T%lld C%lld %s: new input vs eager", (long long)T,
                 (long long)Cm, cap ? "captured" : "plain");
        CHECK(m40t_compare(name, yg2, ye2, (int64_t)n, (m40t_tol){0, 0, 0}));
        snprintf(name, sizeof name, "layer T%lld C%lld %s: gpu graph vs cpu graph",
                 (long long)T, (long long)Cm, cap ? "captured" : "plain");
        CHECK(m40t_compare(name, yg, yc, (int64_t)n, tol));
        CHECK(m40t_compare(name, yg2, yc2, (int64_t)n, tol));
    }
    free(ye), free(ye2), free(yc), free(yc2), free(yg), free(yg2), free(h);
    fx_layer_free(&l);
    fx_layer_free(&l2);
}

static void test_dags(void) {
    int bad = 0;
    for (int k = 0; k < 40; k++) {
        fx_dag *d = fx_dag_new(0xd0d0ull + (uint64_t)k, 4 + k, k % 2 ? 300 : 48, k % 2);
        m40_graph *g = NULL;
        CHECK_ST(m40_graph_create(G, &g), M40_OK);
        CHECK_ST(fx_dag_build(d, g), M40_OK);
        CHECK_ST(m40_graph_alloc(g), M40_OK);
        bad += fx_dag_check_outputs(d, G, g);
        m40_graph_destroy(g);
        fx_dag_free(d);
    }
    CHECK(bad == 0);
    printf("40 random DAGs on the GPU: %d mismatches against eager GPU ops\n", bad);
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_graph_gpu");
    if (!G) return M40T_SKIP;
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) return 1;
    test_layer(1, 64, 16, 256);
    test_layer(77, 200, 40, 600);
    test_dags();
    m40_budget b;
    CHECK_ST(m40_budget_device(G, &b), M40_OK);
    printf("device budget: %.2f GiB usable of %.2f GiB\n", (double)b.usable_bytes / (1 << 30),
           (double)b.board_bytes / (1 << 30));
    m40_ctx_destroy(C);
    m40_ctx_destroy(G);
    return m40t_finish("test_graph_gpu");
}
