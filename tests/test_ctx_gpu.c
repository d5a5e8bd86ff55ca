/* The rules of m40.h on a GPU: every call makes its context's device
** current (contexts on two GPUs used in turn from one thread); ops refuse
** another context's tensors; a workspace that cannot grow is a logged,
** counted fallback, not an error; a call that succeeds leaves no error; a
** context destroyed before its device tensors and graphs stays until they
** go. Exits 77 without a GPU. */
#include "check.h"
/* built only with CUDA (tests/tests.cmake); the library's definition does not
** reach test targets, and internal.h declares m40__cuda_scratch under it */
#ifndef M40_HAVE_CUDA
#define M40_HAVE_CUDA 1
#endif
#include "internal.h"
#include "m40/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const m40t_tol TOL = {1e-4, 1e-4, 1e-8};

static int warns;
static char warn_msg[512];
static void on_log(void *user, m40_log_level lv, const char *msg) {
    (void)user;
    if (lv == M40_LOG_WARN) {
        warns++;
        snprintf(warn_msg, sizeof warn_msg, "%s", msg);
    }
}

static m40_ctx *make_ctx(int device) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = device;
    d.log = on_log;
    d.log_level = M40_LOG_WARN;
    m40_ctx *c = NULL;
    if (m40_ctx_create(&d, &c) != M40_OK) {
        m40_ctx_destroy(c);
        return NULL;
    }
    return c;
}

static int no_error(m40_ctx *c) { return m40_errcode(c) == M40_OK && m40_errmsg(c)[0] == '\0'; }

/* y = x·wᵀ on c with seeded inputs, downloaded into out[m*n]. */
static m40_status matmul_on(m40_ctx *c, int m, int n, int k, uint64_t seed, float *out) {
    int64_t xs[2] = {m, k}, ws[2] = {n, k}, ys[2] = {m, n};
    m40_tensor *x = NULL, *w = NULL, *y = NULL;
    m40_status st = m40_tensor_new(c, M40_DTYPE_F32, 2, xs, &x);
    if (st == M40_OK) st = m40_tensor_new(c, M40_DTYPE_F32, 2, ws, &w);
    if (st == M40_OK) st = m40_tensor_new(c, M40_DTYPE_F32, 2, ys, &y);
    if (st == M40_OK) st = m40_fill_random(c, seed, M40_RANDOM_UNIFORM, -1, 1, x);
    if (st == M40_OK) st = m40_fill_random(c, seed + 1, M40_RANDOM_UNIFORM, -1, 1, w);
    if (st == M40_OK) st = m40_matmul(c, x, w, NULL, y);
    if (st == M40_OK) st = m40_tensor_download(c, y, out, sizeof(float) * (size_t)m * (size_t)n);
    if (st != M40_OK) fprintf(stderr, "matmul_on: %s\n", m40_errmsg(c));
    m40_tensor_destroy(x);
    m40_tensor_destroy(w);
    m40_tensor_destroy(y);
    return st;
}

/* Two GPUs used in turn from one thread (before this rule, the second
** context's creation left its device current and the first one's launches
** went to the wrong GPU). */
static void test_devices(m40_ctx *cpu) {
    m40_ctx *a = make_ctx(0), *b = make_ctx(1);
    if (!b) {
        printf("devices: one GPU; the two-GPU part is skipped\n");
        b = make_ctx(0); /* still: two contexts on one device, in turn */
    }
    enum { m = 37, n = 45, k = 300 };
    static float ref[m * n], got[m * n];
    CHECK_ST(matmul_on(cpu, m, n, k, 5, ref), M40_OK);
    for (int round = 0; round < 3; round++) {
        CHECK_ST(matmul_on(a, m, n, k, 5, got), M40_OK);
        CHECK(m40t_compare("matmul, context A", got, ref, m * n, TOL));
        CHECK_ST(matmul_on(b, m, n, k, 5, got), M40_OK);
        CHECK(m40t_compare("matmul, context B", got, ref, m * n, TOL));
    }
    m40_device_info ia, ib;
    CHECK_ST(m40_ctx_get_info(a, &ia), M40_OK);
    CHECK_ST(m40_ctx_get_info(b, &ib), M40_OK);
    printf("devices: A on %d, B on %d\n", ia.device, ib.device);

    /* another context's device tensor: refused by ops and by copy */
    int64_t s[1] = {64};
    m40_tensor *ta = NULL, *tb = NULL, *th = NULL;
    CHECK_ST(m40_tensor_new(a, M40_DTYPE_F32, 1, s, &ta), M40_OK);
    CHECK_ST(m40_tensor_new(b, M40_DTYPE_F32, 1, s, &tb), M40_OK);
    CHECK_ST(m40_tensor_new(cpu, M40_DTYPE_F32, 1, s, &th), M40_OK);
    CHECK_ST(m40_fill_random(cpu, 3, M40_RANDOM_UNIFORM, 0, 1, th), M40_OK);
    CHECK_ST(m40_scale(b, 2.0f, ta, tb), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(b), "another context") != NULL);
    CHECK_ST(m40_tensor_copy(b, tb, ta), M40_ERR_INVALID_ARG);
    /* host tensors cross contexts through m40_tensor_copy */
    CHECK_ST(m40_tensor_copy(a, ta, th), M40_OK);
    CHECK(no_error(a));
    float back[64], want[64];
    CHECK_ST(m40_tensor_download(a, ta, back, sizeof back), M40_OK);
    CHECK_ST(m40_tensor_download(cpu, th, want, sizeof want), M40_OK);
    CHECK(memcmp(back, want, sizeof back) == 0);
    m40_tensor_destroy(ta);
    m40_tensor_destroy(tb);
    m40_tensor_destroy(th);
    m40_ctx_destroy(a);
    m40_ctx_destroy(b);
}

/* The workspace cannot grow: the op runs without scratch, logs a WARN,
** counts it, and leaves no error. */
static void test_workspace_fallback(m40_ctx *cpu) {
    m40_ctx *g = make_ctx(0);
    if (!g) return;
    warns = 0;
    m40_ctx_stats s0 = {.struct_size = sizeof s0}, s1 = {.struct_size = sizeof s1};
    CHECK_ST(m40_ctx_get_stats(g, &s0), M40_OK);
    size_t bytes = (size_t)1 << 50; /* 1 PiB: no device has it */
    void *p = (void *)1;
    CHECK_ST(m40__cuda_scratch(g, &bytes, &p), M40_OK);
    CHECK(p == NULL && bytes == 0);
    CHECK(no_error(g));
    CHECK(warns == 1 && strstr(warn_msg, "scratch") != NULL);
    printf("fallback warning: %s\n", warn_msg);
    CHECK_ST(m40_ctx_get_stats(g, &s1), M40_OK);
    CHECK(s1.workspace_fallbacks == s0.workspace_fallbacks + 1);
    /* a split-K matmul (few output tiles, long K) still gives the right result */
    enum { m = 64, n = 64, k = 8192 };
    static float ref[m * n], got[m * n];
    CHECK_ST(matmul_on(cpu, m, n, k, 9, ref), M40_OK);
    CHECK_ST(matmul_on(g, m, n, k, 9, got), M40_OK);
    CHECK(m40t_compare("split-K matmul after a fallback", got, ref, m * n, TOL));
    CHECK(no_error(g));
    m40_ctx_destroy(g);
}

/* A failed call's error stays until the next call, which clears it. */
static void test_error_reset(void) {
    m40_ctx *g = make_ctx(0);
    if (!g) return;
    int64_t huge[2] = {1 << 20, 1 << 28}, s[1] = {8};
    m40_tensor *big = NULL, *t = NULL;
    CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 2, huge, &big), M40_ERR_OOM_DEVICE);
    CHECK(m40_errcode(g) == M40_ERR_OOM_DEVICE && m40_errmsg(g)[0]);
    CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 1, s, &t), M40_OK);
    CHECK(no_error(g));
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, 0, 1, t), M40_OK);
    CHECK_ST(m40_ctx_sync(g), M40_OK);
    CHECK(no_error(g));
    m40_tensor_destroy(t);
    m40_ctx_destroy(g);
}

/* The context goes first; its device tensors and an allocated graph after. */
static void test_lifetime(void) {
    for (int order = 0; order < 2; order++) {
        m40_ctx *g = make_ctx(0);
        if (!g) return;
        int64_t s[2] = {16, 32};
        m40_tensor *t = NULL, *v = NULL;
        CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 2, s, &t), M40_OK);
        m40_tensor_desc row = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {32}, .stride = {1}};
        CHECK_ST(m40_tensor_view(g, t, &row, 32, &v), M40_OK);
        m40_graph *gr = NULL;
        CHECK_ST(m40_graph_create(g, &gr), M40_OK);
        m40_tensor_desc d;
        m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
        int x = -1, y = -1;
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_SOFTMAX);
        CHECK_ST(m40_graph_tensor(gr, M40_ROLE_INPUT, "x", &d, &x), M40_OK);
        nd.ninputs = 1;
        nd.inputs[0] = x;
        CHECK_ST(m40_graph_node(gr, &nd, &y), M40_OK);
        CHECK_ST(m40_graph_mark_output(gr, y), M40_OK);
        CHECK_ST(m40_graph_alloc(gr), M40_OK);
        m40_tensor *xt = NULL;
        CHECK_ST(m40_graph_get_tensor(gr, x, &xt), M40_OK);
        if (xt) CHECK_ST(m40_fill_random(g, 5, M40_RANDOM_UNIFORM, -1, 1, xt), M40_OK);
        CHECK_ST(m40_graph_run(gr), M40_OK); /* queued: m40_ctx_destroy waits */
        m40_ctx_destroy(g);
        if (order == 0) {
            m40_graph_destroy(gr);
            m40_tensor_destroy(v);
            m40_tensor_destroy(t);
        } else {
            m40_tensor_destroy(t);
            m40_tensor_destroy(v);
            m40_graph_destroy(gr);
        }
    }
    /* the device still works for a new context */
    m40_ctx *g = make_ctx(0);
    CHECK(g != NULL);
    int64_t s[1] = {4};
    m40_tensor *t = NULL;
    if (g) CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 1, s, &t), M40_OK);
    m40_tensor_destroy(t);
    m40_ctx_destroy(g);
}

int main(void) {
    m40_ctx *g = m40t_gpu_ctx_or_skip("test_ctx_gpu");
    if (!g) return M40T_SKIP;
    m40_ctx_destroy(g);
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *cpu = NULL;
    if (m40_ctx_create(&d, &cpu) != M40_OK) return 1;
    test_devices(cpu);
    test_workspace_fallback(cpu);
    test_error_reset();
    test_lifetime();
    m40_ctx_destroy(cpu);
    return m40t_finish("test_ctx_gpu");
}
