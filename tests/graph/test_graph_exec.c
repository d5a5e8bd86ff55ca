/* The executor on the CPU reference: a transformer layer run as a planned
** graph gives the eager ops' results bit for bit, run after run; bound
** inputs and outputs; weights uploaded from host data. */
#include "check.h"
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

static void test_layer(int64_t T, int64_t Cm, int64_t D, int64_t F) {
    fx_layer l;
    CHECK(fx_layer_init(&l, T, Cm, D, F, 42 + (uint64_t)T));
    size_t n = (size_t)(T * Cm);
    float *ye = malloc(n * 4), *yg = malloc(n * 4);
    uint16_t *he = malloc(n * 2), *hg = malloc(n * 2);
    CHECK_ST(fx_layer_eager(C, &l, ye, he), M40_OK);
    m40_graph *g = NULL;
    int x, y, y16;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK_ST(fx_layer_build(g, &l, &x, &y, &y16), M40_OK);
    m40_plan_info pi;
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    CHECK(pi.inplace >= 3); /* scale, softmax, gelu, the second add */
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    m40_tensor *tx, *ty, *ty16;
    CHECK_ST(m40_graph_get_tensor(g, x, &tx), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, y, &ty), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, y16, &ty16), M40_OK);
    CHECK_ST(m40_tensor_upload(C, tx, l.x, n * 4), M40_OK);
    for (int run = 0; run < 2; run++) { /* inputs are kept across runs */
        memset(yg, 0xff, n * 4);
        CHECK_ST(m40_graph_run(g), M40_OK);
        CHECK_ST(m40_tensor_download(C, ty, yg, n * 4), M40_OK);
        CHECK_ST(m40_tensor_download(C, ty16, hg, n * 2), M40_OK);
        CHECK(memcmp(yg, ye, n * 4) == 0);
        CHECK(memcmp(hg, he, n * 2) == 0);
    }
    printf("layer T%lld C%lld D%lld F%lld: graph == eager (bitwise), arena %.1f KiB vs "
           "lower bound %.1f KiB, %d in place\n", (long long)T, (long long)Cm, (long long)D,
           (long long)F, (double)pi.region_bytes[M40_REGION_ACTIVATIONS] / 1024.0,
           (double)pi.arena_lower_bound / 1024.0, pi.inplace);
    m40_graph_destroy(g);

    /* the same with caller-bound input and output */
    m40_tensor *bx = NULL, *by = NULL;
    int64_t shape[2] = {T, Cm};
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, shape, &bx), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 2, shape, &by), M40_OK);
    CHECK_ST(m40_tensor_upload(C, bx, l.x, n * 4), M40_OK);
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK_ST(fx_layer_build(g, &l, &x, &y, &y16), M40_OK);
    CHECK_ST(m40_graph_bind(g, x, bx), M40_OK);
    CHECK_ST(m40_graph_bind(g, y, by), M40_OK);
    CHECK_ST(m40_graph_bind(g, y16, by), M40_ERR_DTYPE);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    CHECK(pi.external_bytes == 2 * n * 4);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_tensor_download(C, by, yg, n * 4), M40_OK);
    CHECK(memcmp(yg, ye, n * 4) == 0);
    m40_graph_destroy(g);
    m40_tensor_destroy(bx);
    m40_tensor_destroy(by);
    free(ye), free(yg), free(he), free(hg);
    fx_layer_free(&l);
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) return 1;
    test_layer(1, 8, 4, 16);
    test_layer(17, 40, 12, 96);
    test_layer(64, 128, 32, 512);
    m40_ctx_destroy(C);
    return m40t_finish("test_graph_exec");
}
