/* Bad graphs and budgets give clear errors: cycles, dangling tensors, shape
** and dtype mismatches, over budget (before any allocation), wrong states,
** ops without kernels. CPU only. */
#include "check.h"
#include "m40/graph.h"

#include <stdint.h>
#include <string.h>

static m40_ctx *C;

static int has(const char *needle) {
    if (strstr(m40_errmsg(C), needle)) return 1;
    fprintf(stderr, "message lacks '%s': %s\n", needle, m40_errmsg(C));
    return 0;
}

static int tensor(m40_graph *g, m40_tensor_role role, const char *name, m40_dtype dt, int64_t a,
                  int64_t b) {
    int64_t shape[2] = {a, b};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, dt, 2, shape);
    int id = -1;
    CHECK_ST(m40_graph_tensor(g, role, name, &d, &id), M40_OK);
    return id;
}

static m40_status node(m40_graph *g, m40_op op, const char *name, int a, int b, int out, int *res) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.inputs[0] = a;
    nd.inputs[1] = b;
    nd.ninputs = b == M40_NO_TENSOR ? 1 : 2;
    nd.output = out;
    return m40_graph_node(g, &nd, res);
}

static void test_cycle(void) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 2, 8);
    int a = tensor(g, M40_ROLE_ACTIVATION, "a", M40_DTYPE_F32, 2, 8);
    int b = tensor(g, M40_ROLE_ACTIVATION, "b", M40_DTYPE_F32, 2, 8);
    int c = tensor(g, M40_ROLE_ACTIVATION, "c", M40_DTYPE_F32, 2, 8);
    CHECK_ST(node(g, M40_OP_ADD, "make_a", x, c, a, NULL), M40_OK); /* a = x + c */
    CHECK_ST(node(g, (m40_op)999, "", x, M40_NO_TENSOR, M40_TENSOR_NEW, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(node(g, M40_OP_SCALE, "make_b", a, M40_NO_TENSOR, b, NULL), M40_OK);
    CHECK_ST(node(g, M40_OP_SCALE, "make_c", b, M40_NO_TENSOR, c, NULL), M40_OK);
    int out = -1;
    CHECK_ST(node(g, M40_OP_SCALE, "out", c, M40_NO_TENSOR, M40_TENSOR_NEW, &out), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, out), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("cycle") && has("make_a") && has("make_b") && has("make_c"));
    printf("cycle: %s\n", m40_errmsg(C));
    CHECK_ST(m40_graph_alloc(g), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_run(g), M40_ERR_STATE);
    m40_graph_destroy(g);
}

static void test_dangling(void) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 2, 8);
    int ghost = tensor(g, M40_ROLE_ACTIVATION, "ghost", M40_DTYPE_F32, 2, 8);
    int y = -1;
    CHECK_ST(node(g, M40_OP_ADD, "reads_ghost", x, ghost, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("dangling tensor 'ghost'") && has("reads_ghost"));
    printf("dangling: %s\n", m40_errmsg(C));
    m40_graph_destroy(g);

    /* produced, never read, not an output */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    x = tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 2, 8);
    CHECK_ST(node(g, M40_OP_SCALE, "unused", x, M40_NO_TENSOR, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("never read"));
    /* an empty graph, bad ids, outputs that are not activations */
    m40_graph *e = NULL;
    CHECK_ST(m40_graph_create(C, &e), M40_OK);
    CHECK_ST(m40_graph_plan(e, NULL, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("no nodes"));
    m40_graph_destroy(e);
    CHECK_ST(node(g, M40_OP_SCALE, "bad_id", 99, M40_NO_TENSOR, M40_TENSOR_NEW, NULL),
             M40_ERR_INVALID_ARG);
    /* the first id past the graph's tensors (a mutation run found only 99) */
    const int past = m40_graph_get_tensor_count(g);
    CHECK_ST(node(g, M40_OP_SCALE, "id_past", past, M40_NO_TENSOR, M40_TENSOR_NEW, NULL),
             M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_mark_output(g, past), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_set_data(g, past, NULL, 0), M40_ERR_INVALID_ARG);
    CHECK(has("not in the graph"));
    CHECK_ST(m40_graph_mark_output(g, x), M40_ERR_INVALID_ARG);
    CHECK_ST(node(g, M40_OP_SCALE, "writes_input", y, M40_NO_TENSOR, x, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(node(g, M40_OP_SCALE, "writes_twice", x, M40_NO_TENSOR, y, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("already produced"));
    m40_graph_destroy(g);
}

static void test_shapes(void) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 4, 8);
    int w = tensor(g, M40_ROLE_WEIGHT, "w", M40_DTYPE_F32, 16, 9);
    int z = tensor(g, M40_ROLE_INPUT, "z", M40_DTYPE_F32, 4, 7);
    int h = tensor(g, M40_ROLE_INPUT, "h", M40_DTYPE_F16, 4, 8);
    CHECK_ST(node(g, M40_OP_LINEAR, "fc", x, w, M40_TENSOR_NEW, NULL), M40_ERR_SHAPE);
    CHECK(has("fc") && has("[4,8]") && has("[16,9]"));
    printf("shape: %s\n", m40_errmsg(C));
    CHECK_ST(node(g, M40_OP_ADD, "sum", x, z, M40_TENSOR_NEW, NULL), M40_ERR_SHAPE);
    CHECK_ST(node(g, M40_OP_ADD, "half", x, h, M40_TENSOR_NEW, NULL), M40_ERR_DTYPE);
    CHECK(has("f16"));
    /* a declared output of the wrong shape */
    int o = tensor(g, M40_ROLE_ACTIVATION, "o", M40_DTYPE_F32, 4, 9);
    CHECK_ST(node(g, M40_OP_SCALE, "mis", x, M40_NO_TENSOR, o, NULL), M40_ERR_SHAPE);
    CHECK(has("declared") && has("[4,9]"));
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.ninputs = 2;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    CHECK_ST(m40_graph_node(g, &nd, NULL), M40_ERR_SHAPE); /* 2-D input to a conv */
    /* one input more than a node holds */
    m40_node_desc_init(&nd, M40_OP_ADD);
    nd.ninputs = M40_NODE_MAX_INPUTS + 1;
    for (int i = 0; i < M40_NODE_MAX_INPUTS; i++) nd.inputs[i] = x;
    CHECK_ST(m40_graph_node(g, &nd, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("inputs (0.."));
    m40_graph_destroy(g);
}

static void test_budget_and_states(void) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 64, 1024);
    int w = tensor(g, M40_ROLE_WEIGHT, "w", M40_DTYPE_F32, 1024, 1024); /* 4 MiB */
    int y = -1;
    CHECK_ST(node(g, M40_OP_LINEAR, "fc", x, w, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    m40_budget b;
    m40_budget_bytes(3u << 20, &b); /* weights alone are 4 MiB */
    m40_plan_info pi;
    CHECK_ST(m40_graph_plan(g, &b, &pi), M40_ERR_OOM_DEVICE);
    CHECK(has("region weights") && has("short by") && has("int8"));
    printf("over budget: %s\n", m40_errmsg(C));
    CHECK(!pi.fits && pi.headroom_bytes < 0 && pi.region_bytes[M40_REGION_WEIGHTS] == 4u << 20);
    m40_budget_bytes((4u << 20) + (256u << 10), &b); /* weights fit, activations (512 KiB) do not */
    CHECK_ST(m40_graph_plan(g, &b, &pi), M40_ERR_OOM_DEVICE);
    CHECK(has("region activations") && has("batch"));
    /* exact figures: the plan needs 4.5 MiB (weights 4 MiB, arena 512 KiB);
    ** 256 KiB are left after the weights: half the arena, short by 256 KiB */
    CHECK(has("needs 4.5 MiB") && has("region activations (512.0 KiB)") &&
          has("short by 256.0 KiB") && has("50% of the activations fit"));
    /* an over-budget plan is still a plan: its tensors can be inspected */
    m40_graph_tensor_info oti;
    CHECK_ST(m40_graph_get_tensor_info(g, y, &oti), M40_OK);
    CHECK(oti.region == M40_REGION_ACTIVATIONS && m40_graph_get_step_node(g, 0) == 0);
    /* the weights fill the budget exactly: they fit, the activations are
    ** the region that crosses (none of them fits) */
    m40_budget_bytes(4u << 20, &b);
    CHECK_ST(m40_graph_plan(g, &b, &pi), M40_ERR_OOM_DEVICE);
    CHECK(has("region activations") && has("short by 512.0 KiB") &&
          has(" 0% of the activations fit"));
    m40_budget_bytes(64u << 20, &b);
    CHECK_ST(m40_graph_plan(g, &b, &pi), M40_OK);
    CHECK(pi.fits && pi.headroom_bytes > 0);
    /* planned but not allocated: no tensors to hand out, nothing to capture */
    m40_tensor *tt = NULL;
    CHECK_ST(m40_graph_get_tensor(g, y, &tt), M40_ERR_STATE);
    CHECK_ST(m40_graph_capture(g, 1), M40_ERR_STATE);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, m40_graph_get_tensor_count(g), &tt), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_get_tensor(g, -1, &tt), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_alloc(g), M40_ERR_STATE);
    m40_tensor_desc late;
    m40_tensor_desc_make(&late, M40_DTYPE_F32, 0, NULL);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "late", &late, NULL), M40_ERR_STATE);
    CHECK_ST(m40_graph_capture(g, 1), M40_ERR_NO_DEVICE);
    CHECK_ST(m40_graph_capture(g, 0), M40_OK);
    CHECK(m40_graph_get_launch_count(g) == -1 && m40_graph_get_launch_count(NULL) == -1);
    /* the attention key bound: a hint, any time; negative refused */
    CHECK_ST(m40_graph_set_attention_keys(NULL, 512), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_set_attention_keys(g, -1), M40_ERR_INVALID_ARG);
    CHECK(has("keys -1"));
    CHECK_ST(m40_graph_set_attention_keys(g, 512), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_graph_set_attention_keys(g, 0), M40_OK);
    m40_budget dev;
    CHECK_ST(m40_budget_device(C, &dev), M40_ERR_NO_DEVICE);
    m40_graph_destroy(g);

    /* ops the planner sizes but nothing runs yet */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int64_t s4[4] = {1, 3, 8, 8}, sw[4] = {4, 3, 3, 3};
    m40_tensor_desc d4, dw;
    m40_tensor_desc_make(&d4, M40_DTYPE_F32, 4, s4);
    m40_tensor_desc_make(&dw, M40_DTYPE_F32, 4, sw);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "img", &d4, &x), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "k", &dw, &w), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.name = "conv";
    nd.ninputs = 2;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.pad[0] = nd.pad[1] = 1;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    /* NCHW runs the direct kernel: no workspace */
    CHECK(pi.region_bytes[M40_REGION_WORKSPACE] == 0);
    /* conv2d runs (m40_conv2d): the graph's result equals the eager op's */
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    m40_tensor *gx, *gw, *gy, *ey;
    CHECK_ST(m40_graph_get_tensor(g, x, &gx), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, w, &gw), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, y, &gy), M40_OK);
    CHECK_ST(m40_fill_random(C, 5, M40_RANDOM_UNIFORM, -1, 1, gx), M40_OK);
    CHECK_ST(m40_fill_random(C, 6, M40_RANDOM_UNIFORM, -1, 1, gw), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    int64_t s44[4] = {1, 4, 8, 8};
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 4, s44, &ey), M40_OK);
    m40_conv2d_desc cdesc;
    m40_conv2d_desc_init(&cdesc);
    cdesc.pad_h = cdesc.pad_w = 1;
    CHECK_ST(m40_conv2d(C, &cdesc, gx, gw, NULL, NULL, NULL, ey), M40_OK);
    CHECK(memcmp(m40_tensor_get_data(gy), m40_tensor_get_data(ey), m40_tensor_get_nbytes(ey)) == 0);
    m40_tensor_destroy(ey);
    m40_graph_destroy(g);

    /* an op the planner sizes but nothing runs yet: refused at alloc */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int64_t sr[2] = {2, 8}, sn[1] = {8};
    m40_tensor_desc dr, dn;
    m40_tensor_desc_make(&dr, M40_DTYPE_F32, 2, sr);
    m40_tensor_desc_make(&dn, M40_DTYPE_F32, 1, sn);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "h", &dr, &x), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "g", &dn, &w), M40_OK);
    m40_node_desc_init(&nd, M40_OP_LAYERNORM);
    nd.name = "norm";
    nd.ninputs = 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = w;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_ERR_UNSUPPORTED);
    CHECK(has("norm") && has("no kernel"));
    m40_graph_destroy(g);
    m40_graph_destroy(NULL);
}

/* Issue 15: hostile sizes and values at the graph API. */
static void test_hostile(void) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    /* declared shapes: a wrapping product and one over 2^62 bytes are refused */
    int64_t wrap[2] = {(int64_t)1 << 32, ((int64_t)1 << 32) + 1}, big[1] = {((int64_t)1 << 60) + 1};
    m40_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = M40_DTYPE_F32;
    d.ndim = 2;
    memcpy(d.shape, wrap, sizeof wrap);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "wrap", &d, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("'wrap'") && has("2^62"));
    d.ndim = 1;
    d.shape[0] = big[0];
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "big", &d, NULL), M40_ERR_INVALID_ARG);
    d.shape[0] = -1;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "neg", &d, NULL), M40_ERR_INVALID_ARG);
    CHECK(has("negative"));
    d.shape[0] = 4;
    d.stride[0] = INT64_MIN; /* strides of declared tensors are ignored */
    int w = -1, w16 = -1;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &d, &w), M40_OK);
    d.dtype = M40_DTYPE_F16;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w16", &d, &w16), M40_OK);
    /* set_data: a wrong size, however large, is refused before reading */
    float wv[4] = {1, 2, 3, 4};
    CHECK_ST(m40_graph_set_data(g, w, wv, SIZE_MAX), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_set_data(g, w, wv, 15), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_graph_set_data(g, w, wv, sizeof wv), M40_OK);
    /* NaN and Inf weights: named, with the first bad element */
    wv[2] = 0.0f / 0.0f;
    wv[3] = 1.0f / 0.0f;
    CHECK_ST(m40_graph_set_data(g, w, wv, sizeof wv), M40_ERR_FORMAT);
    CHECK(has("'w'") && has("[2]") && has("non-finite"));
    printf("NaN weight: %s\n", m40_errmsg(C));
    uint16_t hv[4] = {0x3C00, 0x3C00, 0x3C00, 0x7C00}; /* 1, 1, 1, +inf */
    CHECK_ST(m40_graph_set_data(g, w16, hv, sizeof hv), M40_ERR_FORMAT);
    CHECK(has("'w16'") && has("[3]"));
    hv[3] = 0x7BFF; /* 65504, the largest finite f16 */
    CHECK_ST(m40_graph_set_data(g, w16, hv, sizeof hv), M40_OK);
    /* misaligned host data (a safetensors mapping) is read safely */
    unsigned char raw[sizeof wv + 1];
    float ok4[4] = {1, 2, 3, 4};
    memcpy(raw + 1, ok4, sizeof ok4);
    CHECK_ST(m40_graph_set_data(g, w, raw + 1, sizeof ok4), M40_OK);
    m40_graph_destroy(g);

    /* planner sums: each tensor within 2^62 bytes, their sum not */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int64_t q[1] = {(int64_t)1 << 59}; /* 2^61 bytes of f32 each */
    m40_tensor_desc dq;
    m40_tensor_desc_make(&dq, M40_DTYPE_F32, 1, q);
    int x = -1, y = -1;
    for (int i = 0; i < 4; i++) CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, NULL, &dq, NULL), M40_OK);
    int64_t one[1] = {1};
    m40_tensor_desc d1;
    m40_tensor_desc_make(&d1, M40_DTYPE_F32, 1, one);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d1, &x), M40_OK);
    CHECK_ST(node(g, M40_OP_SCALE, "s", x, M40_NO_TENSOR, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    m40_plan_info pi;
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_ERR_INVALID_ARG);
    CHECK(has("weights") && has("2^62"));
    m40_graph_destroy(g);
    /* two activation blocks of 2^61 + 4 bytes each, both live: over 2^62 */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int64_t q1[1] = {((int64_t)1 << 59) + 1};
    m40_tensor_desc dq1;
    m40_tensor_desc_make(&dq1, M40_DTYPE_F32, 1, q1);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "big", &dq1, &x), M40_OK);
    CHECK_ST(node(g, M40_OP_SCALE, "s", x, M40_NO_TENSOR, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_ERR_INVALID_ARG);
    CHECK(has("activations") && has("2^62"));
    m40_graph_destroy(g);

    /* headroom: exact, never a wrapped sign, for any budget */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d1, &x), M40_OK);
    CHECK_ST(node(g, M40_OP_SCALE, "s", x, M40_NO_TENSOR, M40_TENSOR_NEW, &y), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    m40_budget b;
    const uint64_t budgets[] = {UINT64_MAX, (uint64_t)1e19, ((uint64_t)1 << 63) + 5, 0, 511, 512};
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        m40_budget_bytes(budgets[i], &b);
        m40_status st = m40_graph_plan(g, &b, &pi);
        CHECK(st == (pi.fits ? M40_OK : M40_ERR_OOM_DEVICE));
        CHECK(pi.fits == (pi.total_bytes <= budgets[i]));
        CHECK(pi.fits ? pi.headroom_bytes >= 0 : pi.headroom_bytes < 0);
        if (pi.fits) { /* usable - total, or INT64_MAX when that does not fit */
            uint64_t h = budgets[i] - pi.total_bytes;
            CHECK(pi.headroom_bytes == (h > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)h));
        } else {
            CHECK(pi.headroom_bytes == -(int64_t)(pi.total_bytes - budgets[i]));
        }
    }
    m40_graph_destroy(g);
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) return 1;
    test_cycle();
    test_dangling();
    test_shapes();
    test_budget_and_states();
    test_hostile();
    m40_ctx_destroy(C);
    return m40t_finish("test_graph_errors");
}
