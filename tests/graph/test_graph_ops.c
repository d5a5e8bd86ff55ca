/* Ops through the registry (lib/ops/): LINEAR_Q runs in a graph and equals
** the eager m40_quant_linear (int8, int4 with group scales, f16 weights;
** with and without bias); the executor's L2 hint (the next node's norm
** weights); the planner sizes its split-K scratch with the
** real group; m40_node_desc.struct_size; every user-supplied int of the
** rules checked (conv, pool, attention, norms, output sizes), the context
** still usable afterwards. CPU by default; with --gpu the LINEAR_Q cases run
** on device 0 (also through a captured CUDA graph), or exit 77. */
#include "check.h"
#include "m40/graph.h"
#include "m40/quant.h"
#include "../kernels/quant_plan.h"
#include "internal.h" /* m40__graph_l2_hint */

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;  /* the CPU context (quantizer, errors) */
static m40_ctx *X;  /* where the ops run: C, or the GPU with --gpu */
static int on_gpu;

static int has(m40_ctx *ctx, const char *needle) {
    if (strstr(m40_errmsg(ctx), needle)) return 1;
    fprintf(stderr, "message lacks '%s': %s\n", needle, m40_errmsg(ctx));
    return 0;
}

/* A tensor of desc d on X's side holding `host` (d's bytes). */
static m40_tensor *on_x(const m40_tensor_desc *d, const void *host) {
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_create(X, d, on_gpu ? M40_LOC_DEVICE : M40_LOC_HOST, &t), M40_OK);
    if (t && host) CHECK_ST(m40_tensor_upload(X, t, host, m40_tensor_get_nbytes(t)), M40_OK);
    return t;
}

static void fill(float *p, int64_t n, uint32_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
}

/* y = x·Wᵀ + bias with W in format f: the graph (optionally captured)
** against the eager op on X, bit for bit. */
static void qlinear_case(m40_quant_format f, int64_t M, int64_t N, int64_t K, int bias,
                         int capture) {
    const int f16 = f.wtype == M40_DTYPE_F16;
    m40_tensor_desc dd, ds, dw, dx, dy, db;
    int64_t sw[2] = {N, K}, sx[2] = {M, K}, sy[2] = {M, N}, sb[1] = {N};
    CHECK_ST(m40_quant_descs(&f, N, K, &dd, &ds), M40_OK);
    m40_tensor_desc_make(&dw, M40_DTYPE_F32, 2, sw);
    m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, sx);
    m40_tensor_desc_make(&dy, M40_DTYPE_F32, 2, sy);
    m40_tensor_desc_make(&db, M40_DTYPE_F32, 1, sb);
    /* W quantized on the host */
    m40_tensor *w, *hd, *hs = NULL;
    CHECK_ST(m40_tensor_create(C, &dw, M40_LOC_HOST, &w), M40_OK);
    CHECK_ST(m40_tensor_create(C, &dd, M40_LOC_HOST, &hd), M40_OK);
    if (!f16) CHECK_ST(m40_tensor_create(C, &ds, M40_LOC_HOST, &hs), M40_OK);
    fill(m40_tensor_get_data(w), N * K, 11);
    CHECK_ST(m40_quantize(C, &f, w, hd, hs), M40_OK);
    float *x = malloc((size_t)(M * K) * 4), *b = malloc((size_t)N * 4);
    float *ye = malloc((size_t)(M * N) * 4), *yg = malloc((size_t)(M * N) * 4);
    fill(x, M * K, 12);
    fill(b, N, 13);
    /* eager */
    m40_tensor *tx = on_x(&dx, x), *ty = on_x(&dy, NULL), *tb = on_x(&db, b);
    m40_tensor *td = on_x(&dd, m40_tensor_get_data(hd)), *ts = f16 ? NULL : on_x(&ds, m40_tensor_get_data(hs));
    m40_qweight qw = {f, N, K, td, ts};
    CHECK_ST(m40_quant_linear(X, tx, &qw, bias ? tb : NULL, ty), M40_OK);
    CHECK_ST(m40_tensor_download(X, ty, ye, (size_t)(M * N) * 4), M40_OK);
    /* the graph */
    m40_graph *g = NULL;
    int ix, iw, is = M40_NO_TENSOR, ib = M40_NO_TENSOR, iy;
    CHECK_ST(m40_graph_create(X, &g), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &ix), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "wq", &dd, &iw), M40_OK);
    CHECK_ST(m40_graph_set_data(g, iw, m40_tensor_get_data(hd), m40_tensor_get_nbytes(hd)), M40_OK);
    if (!f16) {
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "scale", &ds, &is), M40_OK);
        CHECK_ST(m40_graph_set_data(g, is, m40_tensor_get_data(hs), m40_tensor_get_nbytes(hs)), M40_OK);
    }
    if (bias) {
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "bias", &db, &ib), M40_OK);
        CHECK_ST(m40_graph_set_data(g, ib, b, (size_t)N * 4), M40_OK);
    }
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
    nd.name = "qlin";
    nd.bits = f16 ? 16 : f.wtype == M40_DTYPE_Q4 ? 4 : 8;
    nd.group = f.group;
    nd.ninputs = bias ? 4 : 3;
    nd.inputs[0] = ix, nd.inputs[1] = iw, nd.inputs[2] = is, nd.inputs[3] = ib;
    CHECK_ST(m40_graph_node(g, &nd, &iy), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, iy), M40_OK);
    m40_tensor *gx, *gy;
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, ix, &gx), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, iy, &gy), M40_OK);
    CHECK_ST(m40_tensor_upload(X, gx, x, (size_t)(M * K) * 4), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    if (capture) {
        CHECK(m40_graph_get_launch_count(g) == -1); /* not captured yet */
        CHECK_ST(m40_graph_capture(g, 1), M40_OK);
        CHECK(m40_graph_get_launch_count(g) >= 1); /* at least the node's kernel */
        float *poison = malloc((size_t)(M * N) * 4);
        m40t_poison(poison, M * N);
        CHECK_ST(m40_tensor_upload(X, gy, poison, (size_t)(M * N) * 4), M40_OK);
        free(poison);
        CHECK_ST(m40_graph_run(g), M40_OK); /* a replay */
    }
    CHECK_ST(m40_tensor_download(X, gy, yg, (size_t)(M * N) * 4), M40_OK);
    char name[96];
    snprintf(name, sizeof name, "linear_q %s M%lld N%lld K%lld%s%s graph vs eager",
             m40_quant_format_name(&f), (long long)M, (long long)N, (long long)K,
             bias ? " bias" : "", capture ? " captured" : "");
    CHECK(m40t_compare(name, yg, ye, M * N, (m40t_tol){0, 0, 0}));
    m40_graph_destroy(g);
    m40_tensor *ts_[] = {w, hd, hs, tx, ty, tb, td, ts};
    for (size_t i = 0; i < sizeof ts_ / sizeof ts_[0]; i++) m40_tensor_destroy(ts_[i]);
    free(x), free(b), free(ye), free(yg);
}

static void test_linear_q(void) {
    const int cap = on_gpu;
    qlinear_case((m40_quant_format){M40_DTYPE_Q8, 0, M40_DTYPE_F16}, 3, 40, 64, 1, 0);
    qlinear_case((m40_quant_format){M40_DTYPE_Q4, 32, M40_DTYPE_F32}, 1, 33, 96, 0, cap);
    qlinear_case((m40_quant_format){M40_DTYPE_Q4, 0, M40_DTYPE_F16}, 2, 17, 7, 1, 0); /* odd K */
    qlinear_case((m40_quant_format){M40_DTYPE_Q8, 64, M40_DTYPE_F16}, 12, 24, 200, 1, cap);
    qlinear_case((m40_quant_format){M40_DTYPE_F16, 0, M40_DTYPE_F16}, 5, 16, 48, 1, 0);
    /* large enough for split-K on the GPU (batch <= 8, K past 48 KB of x, N >= 4608);
    ** the CPU reference takes a narrower W */
    qlinear_case((m40_quant_format){M40_DTYPE_Q8, 0, M40_DTYPE_F16}, 7, on_gpu ? 4608 : 64, 8192,
                 1, cap);
    CHECK(m40_op_runs(M40_OP_LINEAR_Q) == 1 && m40_op_runs(M40_OP_ATTENTION) == 1);
}

/* The executor's L2 hint (m40__graph_l2_hint): three f16 LINEAR_Q steps,
** the middle one with norm weights; step 0 is handed those weights (their
** data, all their bytes), steps 1 and 2 nothing (no norm after them, no
** step after the last); on X's side (the rule is the same on any device). */
static void test_l2_hint(void) {
    const int64_t K = 64, sx[2] = {1, K}, sw[2] = {K, K}, sn[1] = {K};
    m40_tensor_desc dx, dw, dn;
    m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, sx);
    m40_tensor_desc_make(&dw, M40_DTYPE_F16, 2, sw);
    m40_tensor_desc_make(&dn, M40_DTYPE_F16, 1, sn);
    m40_graph *g = NULL;
    int ix, iw, in, ih[3];
    CHECK_ST(m40_graph_create(X, &g), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &ix), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &dw, &iw), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "norm_w", &dn, &in), M40_OK);
    for (int s = 0; s < 3; s++) {
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.name = s == 0 ? "a" : s == 1 ? "b" : "c";
        nd.bits = 16;
        nd.ninputs = s == 1 ? 5 : 2;
        nd.inputs[0] = s ? ih[s - 1] : ix, nd.inputs[1] = iw;
        nd.inputs[2] = nd.inputs[3] = M40_NO_TENSOR;
        nd.inputs[4] = in;
        CHECK_ST(m40_graph_node(g, &nd, &ih[s]), M40_OK);
    }
    CHECK_ST(m40_graph_mark_output(g, ih[2]), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    m40_tensor *tn = NULL;
    CHECK_ST(m40_graph_get_tensor(g, in, &tn), M40_OK);
    int64_t bytes = -1;
    CHECK(tn && m40__graph_l2_hint(g, 0, &bytes) == m40_tensor_get_data(tn) && bytes == 2 * K);
    CHECK(m40__graph_l2_hint(g, 1, &bytes) == NULL && bytes == 0);
    CHECK(m40__graph_l2_hint(g, 2, &bytes) == NULL && bytes == 0);
    CHECK(m40__graph_l2_hint(g, -1, &bytes) == NULL && bytes == 0);
    m40__l2_hint = 0; /* the knob's "none" */
    CHECK(m40__graph_l2_hint(g, 0, &bytes) == NULL && bytes == 0);
    m40__l2_hint = 1;
    m40_graph_destroy(g);
}

/* A graph with x [a,b,c,d] and a weight of wd; one node of op with nd's
** parameters; returns m40_graph_node's status. */
static m40_status one_node(m40_node_desc *nd, m40_dtype xdt, const int64_t *xs, int xn,
                           const int64_t *ws, int wn, m40_dtype wdt) {
    m40_graph *g = NULL;
    m40_tensor_desc dx, dw;
    int ix, iw, y;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK_ST(m40_tensor_desc_make(&dx, xdt, xn, xs), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &ix), M40_OK);
    nd->inputs[0] = ix;
    if (ws) {
        CHECK_ST(m40_tensor_desc_make(&dw, wdt, wn, ws), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &dw, &iw), M40_OK);
        nd->inputs[1] = iw;
    }
    m40_status st = m40_graph_node(g, nd, &y);
    m40_graph_destroy(g);
    return st;
}

static void test_struct_size(void) {
    m40_node_desc nd;
    int64_t s[2] = {2, 3};
    m40_node_desc_init(&nd, M40_OP_SCALE);
    CHECK(nd.struct_size == sizeof nd);
    nd.ninputs = 1;
    CHECK_ST(one_node(&nd, M40_DTYPE_F32, s, 2, NULL, 0, 0), M40_OK);
    nd.struct_size = sizeof nd - sizeof(int);
    CHECK_ST(one_node(&nd, M40_DTYPE_F32, s, 2, NULL, 0, 0), M40_ERR_INVALID_ARG);
    CHECK(has(C, "struct_size"));
    nd.struct_size = 0;
    CHECK_ST(one_node(&nd, M40_DTYPE_F32, s, 2, NULL, 0, 0), M40_ERR_INVALID_ARG);
}

static void test_conv_pool_ints(void) {
    const int64_t xs[4] = {1, 3, 8, 8}, ws[4] = {4, 3, 3, 3};
    m40_node_desc nd;
    const int bad[][7] = { /* stride h, w, pad h, w, dilation h, w, groups */
        {0, 1, 0, 0, 1, 1, 1},        {1, 1, INT_MAX, 0, 1, 1, 1}, {1, 1, 0, -1, 1, 1, 1},
        {1, INT_MAX, 0, 0, 1, 1, 1},  {1, 1, 0, 0, INT_MAX, 1, 1}, {1, 1, 0, 0, 1, 0, 1},
        {1, 1, 0, 0, 1, 1, INT_MAX},  {1, 1, 0, 0, 1, 1, 0},       {1, 1, 1 << 21, 0, 1, 1, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m40_node_desc_init(&nd, M40_OP_CONV2D);
        nd.ninputs = 2;
        nd.stride[0] = bad[i][0], nd.stride[1] = bad[i][1], nd.pad[0] = bad[i][2];
        nd.pad[1] = bad[i][3], nd.dilation[0] = bad[i][4], nd.dilation[1] = bad[i][5];
        nd.groups = bad[i][6];
        CHECK_ST(one_node(&nd, M40_DTYPE_F32, xs, 4, ws, 4, M40_DTYPE_F32), M40_ERR_INVALID_ARG);
    }
    /* a dilated window larger than the padded input, with no int wrap */
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.ninputs = 2;
    nd.dilation[0] = 1 << 20;
    CHECK_ST(one_node(&nd, M40_DTYPE_F32, xs, 4, ws, 4, M40_DTYPE_F32), M40_ERR_SHAPE);
    /* the largest pads and dilation the rule takes: sizes computed in int64 */
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.ninputs = 2;
    nd.pad[0] = nd.pad[1] = 1 << 20;
    nd.dilation[0] = nd.dilation[1] = 1 << 20;
    CHECK_ST(one_node(&nd, M40_DTYPE_F32, xs, 4, ws, 4, M40_DTYPE_F32), M40_OK);
    /* pools */
    const int pbad[][6] = { /* kernel h, w, stride h, w, pad h, w */
        {INT_MAX, 1, 1, 1, 0, 0}, {3, 3, 0, 1, 0, 0}, {3, 3, 1, 1, INT_MAX, 0},
        {3, 3, 1, 1, 2, 0},       {0, 3, 1, 1, 0, 0}, {3, 3, 1, INT_MAX, 0, 0}};
    for (size_t i = 0; i < sizeof pbad / sizeof pbad[0]; i++) {
        m40_node_desc_init(&nd, M40_OP_POOL2D);
        nd.ninputs = 1;
        nd.pool = M40_POOL_MAX;
        nd.kernel[0] = pbad[i][0], nd.kernel[1] = pbad[i][1], nd.stride[0] = pbad[i][2];
        nd.stride[1] = pbad[i][3], nd.pad[0] = pbad[i][4], nd.pad[1] = pbad[i][5];
        CHECK_ST(one_node(&nd, M40_DTYPE_F32, xs, 4, NULL, 0, 0), M40_ERR_INVALID_ARG);
    }
    /* eager: the same rules, and the context is usable afterwards */
    m40_tensor *x = m40t_f32(C, 4, 1, 3, 8, 8), *w = m40t_f32(C, 4, 4, 3, 3, 3);
    m40_tensor *y = m40t_f32(C, 4, 1, 4, 6, 6), *p = m40t_f32(C, 4, 1, 3, 4, 4);
    CHECK_ST(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, -1, 1, x), M40_OK);
    CHECK_ST(m40_fill_random(C, 2, M40_RANDOM_UNIFORM, -1, 1, w), M40_OK);
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.pad_h = INT_MAX;
    CHECK_ST(m40_conv2d(C, &cd, x, w, NULL, NULL, NULL, y), M40_ERR_INVALID_ARG);
    CHECK(has(C, "pad"));
    m40_conv2d_desc_init(&cd);
    cd.dilation_w = INT_MAX;
    CHECK_ST(m40_conv2d(C, &cd, x, w, NULL, NULL, NULL, y), M40_ERR_INVALID_ARG);
    m40_conv2d_desc_init(&cd);
    CHECK_ST(m40_conv2d(C, &cd, x, w, NULL, NULL, NULL, y), M40_OK);
    CHECK_ST(m40t_pool2d(C, M40_POOL_MAX, INT_MAX, 2, 2, 2, 0, 0, x, p, M40_LAYOUT_NCHW),
             M40_ERR_INVALID_ARG);
    CHECK_ST(m40t_pool2d(C, M40_POOL_AVG, 2, 2, 2, 2, INT_MAX, 0, x, p, M40_LAYOUT_NCHW),
             M40_ERR_INVALID_ARG);
    CHECK_ST(m40t_pool2d(C, M40_POOL_MAX, 2, 2, 2, 2, 0, 0, x, p, M40_LAYOUT_NCHW), M40_OK);
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(y), m40_tensor_destroy(p);
}

static void test_plan_only_ints(void) {
    /* attention: qkv [1,1,(H+2G)·D], caches [1,1024,G,D] (STATE), pos [1,1] */
    const struct { int H, G, D; m40_status want; } cases[] = {
        {4, 2, 8, M40_OK},
        {INT_MAX, 1, INT_MAX, M40_ERR_INVALID_ARG}, /* (H+2G)·D would wrap an int */
        {3, 2, 8, M40_ERR_INVALID_ARG},  /* heads % kv_heads */
        {4, 0, 8, M40_ERR_INVALID_ARG},  {4, 2, 0, M40_ERR_INVALID_ARG},
        {4, 2, 300, M40_ERR_INVALID_ARG}, /* head_dim past 256 */
        {-4, 2, 8, M40_ERR_INVALID_ARG}, {4, -2, 8, M40_ERR_INVALID_ARG}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m40_graph *g = NULL;
        CHECK_ST(m40_graph_create(C, &g), M40_OK);
        int64_t q[3] = {1, 1, 64}, kv[4] = {1, 1024, 2, 8}, one[2] = {1, 1};
        m40_tensor_desc dq, dk, dp;
        m40_tensor_desc_make(&dq, M40_DTYPE_F32, 3, q);
        m40_tensor_desc_make(&dk, M40_DTYPE_F16, 4, kv);
        m40_tensor_desc_make(&dp, M40_DTYPE_I32, 2, one);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        nd.ninputs = 4;
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "qkv", &dq, &nd.inputs[0]), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_STATE, "k", &dk, &nd.inputs[1]), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_STATE, "v", &dk, &nd.inputs[2]), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "pos", &dp, &nd.inputs[3]), M40_OK);
        nd.heads = cases[i].H, nd.kv_heads = cases[i].G, nd.head_dim = cases[i].D;
        int y;
        CHECK_ST(m40_graph_node(g, &nd, &y), cases[i].want);
        if (cases[i].want == M40_OK) {
            /* decode scratch (kernels/attention.h): B·T·H·splits·(D+2) floats,
            ** splits = min(640 slots / (B·G·1 tile), L / 64) = 16: 2560 B */
            m40_plan_info pi;
            CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
            CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
            CHECK(pi.region_bytes[M40_REGION_WORKSPACE] == 2560);
        }
        m40_graph_destroy(g);
    }
    /* norms: eps NaN, Inf, 0 */
    const float eps[] = {NAN, INFINITY, 0.0f, -1.0f};
    int64_t xs[2] = {2, 8}, ws[1] = {8};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_RMSNORM);
        nd.ninputs = 2;
        nd.eps = eps[i];
        CHECK_ST(one_node(&nd, M40_DTYPE_F32, xs, 2, ws, 1, M40_DTYPE_F32), M40_ERR_INVALID_ARG);
    }
    /* an output whose bytes would pass 2^62: ids [2^20, 2^20], table [1, 2^30] */
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_EMBEDDING);
    nd.ninputs = 2;
    int64_t ids[2] = {(int64_t)1 << 20, (int64_t)1 << 20}, tab[2] = {1, (int64_t)1 << 30};
    m40_status st = one_node(&nd, M40_DTYPE_I32, ids, 2, tab, 2, M40_DTYPE_F16);
    CHECK(st == M40_ERR_SHAPE);
    /* linear_q parameters */
    int64_t x[2] = {2, 64}, w[2] = {16, 64};
    const int qbad[][2] = {{5, 0}, {8, 48}, {8, -32}, {0, 0}};
    for (size_t i = 0; i < sizeof qbad / sizeof qbad[0]; i++) {
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.ninputs = 2;
        nd.bits = qbad[i][0], nd.group = qbad[i][1];
        CHECK_ST(one_node(&nd, M40_DTYPE_F32, x, 2, w, 2, M40_DTYPE_I8), M40_ERR_INVALID_ARG);
    }
}

/* The planner's split-K scratch for LINEAR_Q comes from the launcher's rule
** with the node's real group: at batch 7, int8 with group scales keeps one
** chunk in flight (D = 1), so K = 3072 splits in 2, not 3. */
static void test_linear_q_workspace(void) {
    const int64_t M = 7, N = 64, K = 3072;
    for (int group = 0; group <= 32; group += 32) {
        m40_graph *g = NULL;
        CHECK_ST(m40_graph_create(C, &g), M40_OK);
        int64_t sx[2] = {M, K}, sw[2] = {N, K}, ss[2] = {N, K / 32};
        m40_tensor_desc dx, dw, ds;
        m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, sx);
        m40_tensor_desc_make(&dw, M40_DTYPE_I8, 2, sw);
        m40_tensor_desc_make(&ds, M40_DTYPE_F16, group ? 2 : 1, ss);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.bits = 8;
        nd.group = group;
        nd.ninputs = 3;
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &nd.inputs[0]), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &dw, &nd.inputs[1]), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "s", &ds, &nd.inputs[2]), M40_OK);
        int y;
        CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
        CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
        m40_plan_info pi;
        CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
        uint64_t want = m40k_qgemv_split_bytes(0, (int)M, (int)N, (int)K, group != 0);
        want = (want + 255) / 256 * 256;
        CHECK(pi.region_bytes[M40_REGION_WORKSPACE] == want);
        CHECK(want == (group ? 2u : 3u) * M * N * 4);
        m40_graph_destroy(g);
    }
}

int main(int argc, char **argv) {
    const int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) {
        fprintf(stderr, "CPU context: %s\n", m40_errmsg(C));
        return 1;
    }
    X = C;
    if (gpu && !(X = m40t_gpu_ctx_or_skip("test_graph_ops"))) {
        m40_ctx_destroy(C);
        return M40T_SKIP;
    }
    on_gpu = gpu;
    test_linear_q();
    test_l2_hint();
    if (!gpu) {
        test_struct_size();
        test_conv_pool_ints();
        test_plan_only_ints();
        test_linear_q_workspace();
    }
    if (X != C) m40_ctx_destroy(X);
    m40_ctx_destroy(C);
    return m40t_finish(gpu ? "test_graph_ops --gpu" : "test_graph_ops");
}
