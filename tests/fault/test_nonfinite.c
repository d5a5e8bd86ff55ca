/* The graph's non-finite check mode (m40_graph_set_check, issue 15).
** A five-node graph  x -> fc1 -> relu -> fc2 -> scale -> softmax  whose
** middle node fc2 gets a NaN weight through a bound tensor the test fills
** (m40_graph_set_data may refuse non-finite weights): with checks on the
** run fails with M40_ERR_FORMAT naming fc2, its op, the first bad element;
** with checks off it runs. Also: an Inf in the input caught at the first
** node; an f16 overflow caught in a CONVERT output; a finite weight
** uploaded afterwards gives a clean run. CPU always; --gpu on device 0
** (exit 77 without a GPU), where the scan is kernels/check.cu. */
#include "check.h"

#include <m40/graph.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, K = 8, H = 8, O = 4, BAD_ROW = 3, BAD_COL = 5 };

typedef struct net {
    m40_graph *g;
    m40_tensor *w2;   /* [O,H] bound, filled by the test */
    int x, y;
} net;

static float w1[H * K], b1[H], b2[O];

static int build(m40_ctx *ctx, net *n) {
    memset(n, 0, sizeof *n);
    for (int i = 0; i < H * K; i++) w1[i] = (float)((i * 7) % 11 - 5) / 8.0f;
    for (int i = 0; i < H; i++) b1[i] = 0.1f * (float)i;
    for (int i = 0; i < O; i++) b2[i] = -0.05f * (float)i;
    m40_graph *g = NULL;
    if (m40_graph_create(ctx, &g) != M40_OK) return 0;
    n->g = g;
    m40_tensor_desc d;
    int idw1, idb1, idw2, idb2, h1, r1, o2, s2;
    int64_t sx[2] = {B, K}, sw1[2] = {H, K}, sb1[1] = {H}, sw2[2] = {O, H}, sb2[1] = {O};
    int ok = 1;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, sx);
    ok &= m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &n->x) == M40_OK;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, sw1);
    ok &= m40_graph_tensor(g, M40_ROLE_WEIGHT, "w1", &d, &idw1) == M40_OK;
    ok &= m40_graph_set_data(g, idw1, w1, sizeof w1) == M40_OK;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, sb1);
    ok &= m40_graph_tensor(g, M40_ROLE_WEIGHT, "b1", &d, &idb1) == M40_OK;
    ok &= m40_graph_set_data(g, idb1, b1, sizeof b1) == M40_OK;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, sw2);
    ok &= m40_graph_tensor(g, M40_ROLE_WEIGHT, "w2", &d, &idw2) == M40_OK;
    ok &= m40_tensor_new(ctx, M40_DTYPE_F32, 2, sw2, &n->w2) == M40_OK;
    ok &= ok && m40_graph_bind(g, idw2, n->w2) == M40_OK;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, sb2);
    ok &= m40_graph_tensor(g, M40_ROLE_WEIGHT, "b2", &d, &idb2) == M40_OK;
    ok &= m40_graph_set_data(g, idb2, b2, sizeof b2) == M40_OK;
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.name = "fc1", nd.ninputs = 3, nd.inputs[0] = n->x, nd.inputs[1] = idw1, nd.inputs[2] = idb1;
    ok &= m40_graph_node(g, &nd, &h1) == M40_OK;
    m40_node_desc_init(&nd, M40_OP_ACTIVATION);
    nd.name = "relu", nd.ninputs = 1, nd.inputs[0] = h1, nd.act = M40_ACT_RELU;
    ok &= m40_graph_node(g, &nd, &r1) == M40_OK;
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.name = "fc2", nd.ninputs = 3, nd.inputs[0] = r1, nd.inputs[1] = idw2, nd.inputs[2] = idb2;
    ok &= m40_graph_node(g, &nd, &o2) == M40_OK;
    m40_node_desc_init(&nd, M40_OP_SCALE);
    nd.name = "scale", nd.ninputs = 1, nd.inputs[0] = o2, nd.alpha = 0.5f;
    ok &= m40_graph_node(g, &nd, &s2) == M40_OK;
    m40_node_desc_init(&nd, M40_OP_SOFTMAX);
    nd.name = "softmax", nd.ninputs = 1, nd.inputs[0] = s2;
    ok &= m40_graph_node(g, &nd, &n->y) == M40_OK;
    ok &= m40_graph_mark_output(g, n->y) == M40_OK;
    ok &= m40_graph_alloc(g) == M40_OK;
    if (!ok) fprintf(stderr, "build: %s\n", m40_errmsg(ctx));
    return ok;
}

static void set_w2(m40_ctx *ctx, net *n, float bad) {
    float w2[O * H];
    for (int i = 0; i < O * H; i++) w2[i] = (float)((i * 5) % 9 - 4) / 6.0f;
    w2[BAD_ROW * H + BAD_COL] = bad;
    CHECK_ST(m40_tensor_upload(ctx, n->w2, w2, sizeof w2), M40_OK);
}

static void set_x(m40_ctx *ctx, net *n, float first) {
    float x[B * K];
    for (int i = 0; i < B * K; i++) x[i] = (float)(i % 5) / 4.0f - 0.3f;
    x[0] = first;
    m40_tensor *t = NULL;
    CHECK_ST(m40_graph_get_tensor(n->g, n->x, &t), M40_OK);
    CHECK_ST(m40_tensor_upload(ctx, t, x, sizeof x), M40_OK);
}

/* Expects the run to stop at `node` with the bad element `index`. */
static void expect_stop(m40_ctx *ctx, net *n, const char *node, const char *op, int64_t index,
                        int64_t count, int is_nan) {
    m40_status st = m40_graph_run(n->g);
    const char *msg = m40_errmsg(ctx);
    printf("  run: %s: %s\n", m40_status_str(st), msg);
    CHECK_ST(st, M40_ERR_FORMAT);
    char want[64];
    snprintf(want, sizeof want, "node '%s' (%s", node, op);
    CHECK(strstr(msg, want) != NULL);
    snprintf(want, sizeof want, "element %lld ", (long long)index);
    CHECK(strstr(msg, want) != NULL);
    CHECK(strstr(msg, is_nan ? "is nan" : "inf") != NULL);
    m40_check_report r;
    CHECK_ST(m40_graph_get_check_report(n->g, &r), M40_OK);
    CHECK(r.found == 1 && !strcmp(r.node_name, node) && r.index == index && r.count == count);
    CHECK(r.node == m40_graph_get_step_node(n->g, r.step) && !strcmp(node, "fc2") == (r.step == 2));
    CHECK(is_nan ? isnan(r.value) : isinf(r.value));
    CHECK(!strcmp(m40_op_name(r.op), op));
}

static void run_case(m40_ctx *ctx, const char *label) {
    printf("%s:\n", label);
    net n;
    int ok = build(ctx, &n);
    CHECK(ok);
    if (!ok) goto out;
    /* bad arguments */
    CHECK_ST(m40_graph_set_check(NULL, M40_CHECK_NONFINITE), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_set_check(n.g, 0x10), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "unknown check bits") != NULL);
    CHECK_ST(m40_graph_get_check_report(n.g, NULL), M40_ERR_INVALID_ARG);
    m40_check_report r;
    CHECK_ST(m40_graph_get_check_report(n.g, &r), M40_OK);
    CHECK(r.found == 0 && r.node == -1);

    set_x(ctx, &n, 0.25f);
    set_w2(ctx, &n, NAN);
    /* checks off: the NaN goes through unnoticed */
    CHECK_ST(m40_graph_run(n.g), M40_OK);
    CHECK_ST(m40_ctx_sync(ctx), M40_OK);
    /* on: fc2 (step 2) is named; row BAD_ROW of w2 makes column BAD_ROW of
    ** y NaN for both batch rows: first element BAD_ROW, count B */
    CHECK_ST(m40_graph_set_check(n.g, M40_CHECK_NONFINITE), M40_OK);
    expect_stop(ctx, &n, "fc2", "linear", BAD_ROW, B, 1);
    CHECK(strstr(m40_errmsg(ctx), "[0,3] of [2,4]") != NULL);
    CHECK(strstr(m40_errmsg(ctx), "step 2") != NULL);
    /* an Inf weight: fc2 again, and an infinite value */
    set_w2(ctx, &n, INFINITY);
    expect_stop(ctx, &n, "fc2", "linear", BAD_ROW, B, 0);
    /* finite again: a clean run forgets the finding */
    set_w2(ctx, &n, 0.5f);
    CHECK_ST(m40_graph_run(n.g), M40_OK);
    CHECK_ST(m40_graph_get_check_report(n.g, &r), M40_OK);
    CHECK(r.found == 0 && r.node == -1);
    float y[B * O];
    m40_tensor *ty = NULL;
    CHECK_ST(m40_graph_get_tensor(n.g, n.y, &ty), M40_OK);
    CHECK_ST(m40_tensor_download(ctx, ty, y, sizeof y), M40_OK);
    for (int i = 0; i < B * O; i++) CHECK(isfinite(y[i]));
    /* an Inf in the input: the first node already produces non-finite values */
    set_x(ctx, &n, INFINITY);
    m40_status st = m40_graph_run(n.g);
    CHECK_ST(st, M40_ERR_FORMAT);
    CHECK(strstr(m40_errmsg(ctx), "node 'fc1' (linear, step 0)") != NULL);
    printf("  run: %s: %s\n", m40_status_str(st), m40_errmsg(ctx));
    /* off again: runs */
    CHECK_ST(m40_graph_set_check(n.g, M40_CHECK_NONE), M40_OK);
    CHECK_ST(m40_graph_run(n.g), M40_OK);
    CHECK_ST(m40_ctx_sync(ctx), M40_OK);
    /* f32: 3e38 (exponent 0xFD) is finite: not flagged */
    {
        m40_graph *g2 = NULL;
        int64_t s4[1] = {4};
        m40_tensor_desc d4;
        m40_tensor_desc_make(&d4, M40_DTYPE_F32, 1, s4);
        int xi, yi;
        CHECK_ST(m40_graph_create(ctx, &g2), M40_OK);
        CHECK_ST(m40_graph_tensor(g2, M40_ROLE_INPUT, "big", &d4, &xi), M40_OK);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_SCALE);
        nd.name = "one", nd.ninputs = 1, nd.inputs[0] = xi, nd.alpha = 1.0f;
        CHECK_ST(m40_graph_node(g2, &nd, &yi), M40_OK);
        CHECK_ST(m40_graph_mark_output(g2, yi), M40_OK);
        CHECK_ST(m40_graph_alloc(g2), M40_OK);
        CHECK_ST(m40_graph_set_check(g2, M40_CHECK_NONFINITE), M40_OK);
        float v[4] = {3e38f, -3e38f, 1.7e38f, 1.0f};
        m40_tensor *tv = NULL;
        CHECK_ST(m40_graph_get_tensor(g2, xi, &tv), M40_OK);
        CHECK_ST(m40_tensor_upload(ctx, tv, v, sizeof v), M40_OK);
        CHECK_ST(m40_graph_run(g2), M40_OK);
        m40_graph_destroy(g2);
    }
out:
    m40_graph_destroy(n.g);
    m40_tensor_destroy(n.w2);
}

/* f16: a CONVERT of 70000 (above f16's 65504) gives +Inf in the f16 output. */
static void run_f16(m40_ctx *ctx) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    if (!g) return;
    int64_t s[2] = {3, 5};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    int x, y;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &x), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONVERT);
    nd.name = "to_f16", nd.ninputs = 1, nd.inputs[0] = x, nd.out_dtype = M40_DTYPE_F16;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_set_check(g, M40_CHECK_NONFINITE), M40_OK);
    float h[15];
    for (int i = 0; i < 15; i++) h[i] = (float)i;
    m40_tensor *t = NULL;
    CHECK_ST(m40_graph_get_tensor(g, x, &t), M40_OK);
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    /* large finite f16 values are not flagged: 65504 (the largest) and -40000 */
    h[3] = 65504.0f;
    h[4] = -40000.0f;
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    /* -inf is named so; a later clean run of this one-node graph forgets
    ** it, and so does m40_graph_set_check */
    h[5] = -70000.0f;
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_ERR_FORMAT);
    CHECK(strstr(m40_errmsg(ctx), "element 5 [1,0] of [3,5] is -inf (1 non-finite)") != NULL);
    m40_check_report r;
    h[5] = 5.0f;
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_graph_get_check_report(g, &r), M40_OK);
    CHECK(r.found == 0 && r.node == -1);
    h[5] = -70000.0f;
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_ERR_FORMAT);
    CHECK_ST(m40_graph_set_check(g, M40_CHECK_NONFINITE), M40_OK);
    CHECK_ST(m40_graph_get_check_report(g, &r), M40_OK);
    CHECK(r.found == 0 && r.node == -1);
    h[5] = 5.0f;
    h[7] = 70000.0f;
    h[11] = -1e30f;
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_ERR_FORMAT);
    printf("  f16 run: %s\n", m40_errmsg(ctx));
    CHECK(strstr(m40_errmsg(ctx), "element 7 [1,2] of [3,5] is inf (2 non-finite)") != NULL);
    m40_graph_destroy(g);
}

/* The report names the node by its index, not its step: node 2 ("make_b")
** runs at step 1, before node 1 ("late") that reads its output, and its
** alpha of 1e30 takes 1e20 past f32's range. */
static void run_order(m40_ctx *ctx) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    if (!g) return;
    int64_t s[1] = {6};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, s);
    int x, b, a, y, mk;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &x), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_ACTIVATION, "b", &d, &b), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SCALE);
    nd.name = "a", nd.ninputs = 1, nd.inputs[0] = x, nd.alpha = 1.0f;
    CHECK_ST(m40_graph_node(g, &nd, &a), M40_OK);
    m40_node_desc_init(&nd, M40_OP_ADD);
    nd.name = "late", nd.ninputs = 2, nd.inputs[0] = a, nd.inputs[1] = b;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    m40_node_desc_init(&nd, M40_OP_SCALE);
    nd.name = "make_b", nd.ninputs = 1, nd.inputs[0] = a, nd.alpha = 1e30f, nd.output = b;
    CHECK_ST(m40_graph_node(g, &nd, &mk), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK(m40_graph_get_step_node(g, 1) == 2 && m40_graph_get_step_node(g, 2) == 1);
    CHECK_ST(m40_graph_set_check(g, M40_CHECK_NONFINITE), M40_OK);
    float h[6] = {1, 2, 3, 1e20f, 5, 6};
    m40_tensor *t = NULL;
    CHECK_ST(m40_graph_get_tensor(g, x, &t), M40_OK);
    CHECK_ST(m40_tensor_upload(ctx, t, h, sizeof h), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_ERR_FORMAT);
    printf("  order run: %s\n", m40_errmsg(ctx));
    m40_check_report r;
    CHECK_ST(m40_graph_get_check_report(g, &r), M40_OK);
    if (r.node != 2 || r.step != 1)
        fprintf(stderr, "FAIL: report node %d step %d, want node 2 at step 1\n", r.node, r.step);
    CHECK(r.found == 1 && r.node == 2 && r.step == 1 && !strcmp(r.node_name, "make_b") && r.index == 3);
    m40_graph_destroy(g);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--gpu")) {
        m40_ctx *ctx = m40t_gpu_ctx_or_skip("test_gpu_nonfinite");
        if (!ctx) return M40T_SKIP;
        run_case(ctx, "GPU");
        run_f16(ctx);
        run_order(ctx);
        m40_ctx_destroy(ctx);
        return m40t_finish("test_gpu_nonfinite");
    }
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    m40_ctx *ctx = NULL;
    if (m40_ctx_create(&cd, &ctx) != M40_OK) return 1;
    run_case(ctx, "CPU");
    run_f16(ctx);
    run_order(ctx);
    m40_ctx_destroy(ctx);
    return m40t_finish("test_nonfinite");
}
