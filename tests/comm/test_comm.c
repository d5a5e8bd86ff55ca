/* Communicators (m40/comm.h) and the ALLREDUCE node: 2 and 3 ranks, each
** in its own thread, on CPU contexts (or, with --gpu, GPU contexts on one
** device through the host backend: two contexts standing in for two
** cards). Sums equal the rank-order sum bit for bit on odd sizes; a rank
** that fails, gives another size, or never comes breaks the communicator
** and no other rank hangs; the create refusals; the graph node (in place,
** its rule, CUDA-graph capture refused on the host backend). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "m40/comm.h"
#include "m40/graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 3

static int gpu;
static m40_ctx *ctxs[MAXR];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float val(int rank, int64_t i) { /* exact in f32, distinct per rank */
    return (float)((i * 37 + rank * 101) % 1013) / 64.0f - 7.5f + (float)rank;
}

typedef struct job {
    m40_comm *comm;
    int rank;
    int64_t n;          /* elements (the rank's own) */
    int bad_dtype;      /* give an i32 tensor: a failed part */
    int skip;           /* do not call at all */
    m40_status st;
    float *out;         /* [n] after the call */
    double took;
    m40_graph *g;       /* graph mode: run g (its input filled) instead */
    int gin, gout;
} job;

static void *run(void *arg) {
    job *j = arg;
    m40_ctx *ctx = ctxs[j->rank];
    j->st = M40_OK;
    if (j->skip) return NULL;
    double t0 = now();
    if (j->g) {
        j->st = m40_graph_run(j->g);
        m40_tensor *t;
        if (j->st == M40_OK && m40_graph_get_tensor(j->g, j->gout, &t) == M40_OK)
            j->st = m40_tensor_download(ctx, t, j->out, (size_t)j->n * 4);
        j->took = now() - t0;
        return NULL;
    }
    const int64_t s[1] = {j->n};
    m40_tensor *x = NULL;
    if (m40_tensor_new(ctx, j->bad_dtype ? M40_DTYPE_I32 : M40_DTYPE_F32, 1, s, &x) != M40_OK) {
        j->st = M40_ERR_OOM_HOST;
        return NULL;
    }
    for (int64_t i = 0; i < j->n; i++) j->out[i] = val(j->rank, i);
    m40_tensor_upload(ctx, x, j->out, (size_t)j->n * 4);
    j->st = m40_allreduce(j->comm, j->rank, x);
    if (j->st == M40_OK) m40_tensor_download(ctx, x, j->out, (size_t)j->n * 4);
    j->took = now() - t0;
    m40_tensor_destroy(x);
    return NULL;
}

/* Runs the jobs of ranks 0..R-1 at once. */
static void together(job *js, int R) {
    pthread_t th[MAXR];
    for (int r = 0; r < R; r++) pthread_create(&th[r], NULL, run, &js[r]);
    for (int r = 0; r < R; r++) pthread_join(th[r], NULL);
}

/* Every rank ran, and holds the rank-order sum of the parts, bit for bit. */
static int rank_sums(const job *js, int R, int64_t n) {
    int ok = 1;
    for (int r = 0; r < R; r++) {
        CHECK_ST(js[r].st, M40_OK);
        for (int64_t i = 0; i < n && ok; i++) {
            float s = val(0, i);
            for (int k = 1; k < R; k++) s += val(k, i);
            ok = js[r].out[i] == s;
        }
    }
    return ok;
}

static m40_comm *make(int R) {
    m40_comm *c = NULL;
    CHECK_ST(m40_comm_create(ctxs, R, M40_COMM_AUTO, &c), M40_OK);
    if (c) CHECK(m40_comm_get_kind(c) == M40_COMM_HOST && m40_comm_size(c) == R);
    return c;
}

static void sums(int R, int64_t n) {
    m40_comm *c = make(R);
    if (!c) return;
    job js[MAXR];
    memset(js, 0, sizeof js);
    for (int r = 0; r < R; r++) {
        js[r] = (job){.comm = c, .rank = r, .n = n};
        js[r].out = malloc((size_t)n * 4);
    }
    for (int round = 0; round < 3; round++) { /* the same communicator again */
        together(js, R);
        int ok = rank_sums(js, R, n);
        CHECK(ok);
        if (round == 0) printf("%s %d ranks, %lld floats: %s\n", gpu ? "gpu" : "cpu", R,
                               (long long)n, ok ? "ok" : "FAIL");
    }
    for (int r = 0; r < R; r++) free(js[r].out);
    m40_comm_destroy(c);
}

/* kind 0: rank 1 gives an i32 tensor; 1: rank 1 has one more element;
** 2: rank 1 never calls (timeout 0.3 s). No rank may hang, each gets an
** error, and the communicator stays broken. */
static void breaks(int R, int kind) {
    m40_comm *c = make(R);
    if (!c) return;
    CHECK_ST(m40_comm_set_timeout(c, kind == 2 ? 0.3 : 20.0), M40_OK);
    job js[MAXR];
    memset(js, 0, sizeof js);
    for (int r = 0; r < R; r++) {
        js[r] = (job){.comm = c, .rank = r, .n = 100 + (kind == 1 && r == 1)};
        js[r].out = malloc(101 * 4);
    }
    js[1].bad_dtype = kind == 0;
    js[1].skip = kind == 2;
    together(js, R);
    static const char *const what[3] = {"a rank's part fails", "sizes differ", "a rank never comes"};
    int none_ok = 1, fast = 1;
    for (int r = 0; r < R; r++) {
        if (kind == 2 && r == 1) continue;
        none_ok &= js[r].st != M40_OK;
        fast &= js[r].took < (kind == 2 ? 5.0 : 2.0);
    }
    CHECK(none_ok);
    CHECK(fast);
    CHECK(js[0].st == (kind == 1 ? M40_ERR_SHAPE : M40_ERR_STATE) || js[0].st == M40_ERR_STATE);
    if (kind == 0) CHECK_ST(js[1].st, M40_ERR_DTYPE);
    if (kind == 2) { /* the rank that waited out the timeout says so */
        int said = 0;
        for (int r = 0; r < R; r++)
            if (r != 1) said |= strstr(m40_errmsg(ctxs[r]), "did not come within") != NULL;
        CHECK(said);
    }
    printf("%d ranks, %s: every rank an error (rank 0: %s: %.60s), none waits: %s\n", R,
           what[kind], m40_status_str(js[0].st), m40_errmsg(ctxs[0]), none_ok && fast ? "ok" : "FAIL");
    /* broken for good: a correct call now fails at once */
    js[1].bad_dtype = 0;
    js[1].skip = 0;
    js[1].n = 100;
    together(js, R);
    for (int r = 0; r < R; r++) CHECK_ST(js[r].st, M40_ERR_STATE);
    for (int r = 0; r < R; r++) free(js[r].out);
    m40_comm_destroy(c);
}

static void refusals(void) {
    m40_comm *c = (m40_comm *)&c;
    CHECK(m40_comm_create(NULL, 2, M40_COMM_AUTO, &c) == M40_ERR_INVALID_ARG && c == NULL);
    CHECK_ST(m40_comm_create(ctxs, 0, M40_COMM_AUTO, &c), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_comm_create(ctxs, 65, M40_COMM_AUTO, &c), M40_ERR_INVALID_ARG);
    m40_ctx *twice[2] = {ctxs[0], ctxs[0]};
    CHECK_ST(m40_comm_create(twice, 2, M40_COMM_AUTO, &c), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctxs[0]), "again") != NULL);
    CHECK_ST(m40_comm_create(ctxs, 2, (m40_comm_kind)7, &c), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_comm_create(ctxs, 2, (m40_comm_kind)-1, &c), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctxs[0]), "unknown kind -1") != NULL);
    CHECK_ST(m40_comm_create(ctxs, 2, M40_COMM_NCCL, &c), M40_ERR_UNSUPPORTED);
    CHECK(strstr(m40_errmsg(ctxs[0]), "NCCL") != NULL);
    m40_comm_destroy(NULL);
    CHECK(m40_comm_size(NULL) == 0);
    CHECK_ST(m40_comm_create(ctxs, 1, M40_COMM_HOST, &c), M40_OK);
    const int64_t s[1] = {4};
    m40_tensor *x = NULL, *y = NULL;
    float v[4] = {1, 2, 3, 4}, w[4];
    CHECK_ST(m40_tensor_new(ctxs[0], M40_DTYPE_F32, 1, s, &x), M40_OK);
    CHECK_ST(m40_tensor_new(ctxs[1], M40_DTYPE_F32, 1, s, &y), M40_OK);
    m40_tensor_upload(ctxs[0], x, v, sizeof v);
    CHECK_ST(m40_allreduce(c, 0, x), M40_OK); /* one rank: itself */
    m40_tensor_download(ctxs[0], x, w, sizeof w);
    CHECK(!memcmp(v, w, sizeof v));
    CHECK_ST(m40_allreduce(c, 1, x), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_allreduce(c, 0, y), M40_ERR_INVALID_ARG); /* another context's tensor */
    CHECK_ST(m40_allreduce(NULL, 0, x), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_comm_set_timeout(c, 0), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_comm_set_timeout(c, 2e6), M40_ERR_INVALID_ARG); /* (0, 1e6] */
    CHECK_ST(m40_comm_set_timeout(c, 1e6), M40_OK);
    m40_tensor_destroy(x);
    m40_tensor_destroy(y);
    m40_comm_destroy(c);
}

/* Rank r's graph: x (input) -> ALLREDUCE -> y (output). */
static m40_graph *node_graph(m40_comm *c, int r, int64_t n, int *gin, int *gout) {
    m40_graph *g = NULL;
    m40_tensor_desc d;
    const int64_t s[2] = {n / 4, 4};
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ALLREDUCE);
    nd.ninputs = 1;
    nd.comm = c;
    nd.rank = r;
    if (m40_graph_create(ctxs[r], &g) != M40_OK || m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, gin) ||
        (nd.inputs[0] = *gin, m40_graph_node(g, &nd, gout)) || m40_graph_mark_output(g, *gout) ||
        m40_graph_plan(g, NULL, NULL) || m40_graph_alloc(g)) {
        fprintf(stderr, "node graph: %s\n", m40_errmsg(ctxs[r]));
        m40_graph_destroy(g);
        return NULL;
    }
    return g;
}

static void graphs(int R) {
    const int64_t n = 4 * 257;
    m40_comm *c = make(R);
    if (!c) return;
    job js[MAXR];
    memset(js, 0, sizeof js);
    int built = 1;
    for (int r = 0; r < R; r++) {
        js[r] = (job){.comm = c, .rank = r, .n = n};
        js[r].out = malloc((size_t)n * 4);
        js[r].g = node_graph(c, r, n, &js[r].gin, &js[r].gout);
        built &= js[r].g != NULL;
        m40_tensor *t;
        for (int64_t i = 0; i < n; i++) js[r].out[i] = val(r, i);
        if (js[r].g && m40_graph_get_tensor(js[r].g, js[r].gin, &t) == M40_OK)
            m40_tensor_upload(ctxs[r], t, js[r].out, (size_t)n * 4);
    }
    CHECK(built);
    if (built) {
        together(js, R);
        int ok = rank_sums(js, R, n);
        CHECK(ok);
        printf("%d graphs with an ALLREDUCE node: %s\n", R, ok ? "ok" : "FAIL");
        if (gpu) { /* the host backend cannot live in a CUDA graph */
            CHECK_ST(m40_graph_capture(js[0].g, 1), M40_ERR_UNSUPPORTED);
            CHECK(strstr(m40_errmsg(ctxs[0]), "host communicator") != NULL);
        }
    }
    /* the rule: no communicator, a rank outside it */
    m40_graph *g = NULL;
    int in, out;
    m40_tensor_desc d;
    const int64_t s[1] = {8};
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, s);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ALLREDUCE);
    nd.ninputs = 1;
    if (m40_graph_create(ctxs[0], &g) == M40_OK && m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &in) == M40_OK) {
        nd.inputs[0] = in;
        CHECK_ST(m40_graph_node(g, &nd, &out), M40_ERR_INVALID_ARG);
        nd.comm = c;
        nd.rank = R;
        CHECK_ST(m40_graph_node(g, &nd, &out), M40_ERR_INVALID_ARG);
        nd.rank = 0;
        CHECK_ST(m40_graph_node(g, &nd, &out), M40_OK);
    }
    m40_graph_destroy(g);
    for (int r = 0; r < R; r++) {
        m40_graph_destroy(js[r].g);
        free(js[r].out);
    }
    m40_comm_destroy(c);
}

/* NCCL on one GPU: ranks on one device are refused; one rank runs (where
** libnccl.so.2 loads: M40_NCCL_LIB), in place, also captured in a CUDA graph. */
static void nccl_one(void) {
    m40_comm *c = NULL;
    CHECK_ST(m40_comm_create(ctxs, 2, M40_COMM_NCCL, &c), M40_ERR_UNSUPPORTED);
    CHECK(strstr(m40_errmsg(ctxs[0]), "one device") != NULL);
    m40_status st = m40_comm_create(ctxs, 1, M40_COMM_NCCL, &c);
    if (st == M40_ERR_UNSUPPORTED) {
        printf("note: NCCL not loaded, its one-rank check skipped: %s\n", m40_errmsg(ctxs[0]));
        return;
    }
    CHECK_ST(st, M40_OK);
    if (!c) return;
    CHECK(m40_comm_get_kind(c) == M40_COMM_NCCL);
    int in, out;
    m40_graph *g = node_graph(c, 0, 64, &in, &out);
    float v[64], w[64];
    for (int i = 0; i < 64; i++) v[i] = val(0, i);
    m40_tensor *t;
    if (g && m40_graph_get_tensor(g, in, &t) == M40_OK) {
        m40_tensor_upload(ctxs[0], t, v, sizeof v);
        CHECK_ST(m40_graph_run(g), M40_OK);
        CHECK_ST(m40_graph_capture(g, 1), M40_OK); /* NCCL lives in a CUDA graph */
        CHECK_ST(m40_graph_run(g), M40_OK);
        m40_graph_get_tensor(g, out, &t);
        CHECK_ST(m40_tensor_download(ctxs[0], t, w, sizeof w), M40_OK);
        CHECK(!memcmp(v, w, sizeof v));
        printf("NCCL, one rank: run and captured: %s\n", !memcmp(v, w, sizeof v) ? "ok" : "FAIL");
    }
    m40_graph_destroy(g);
    m40_comm_destroy(c);
}

int main(int argc, char **argv) {
    if (m40t_side(argc, argv, &gpu)) return M40T_SKIP;
    for (int r = 0; r < MAXR; r++)
        if (!(ctxs[r] = m40t_ctx(gpu))) {
            fprintf(stderr, "no context %d\n", r);
            return 1;
        }
    refusals();
    if (gpu) nccl_one();
    for (int R = 2; R <= 3; R++) {
        static const int64_t sizes[4] = {1, 2, 7, 40961};
        for (int k = 0; k < 4; k++) sums(R, sizes[k]);
        for (int kind = 0; kind < 3; kind++) breaks(R, kind);
        graphs(R);
    }
    for (int r = 0; r < MAXR; r++) m40_ctx_destroy(ctxs[r]);
    return m40t_finish(argv[0]);
}
