/* The Threads rule of m40.h: different contexts may be used at the same
** time from different threads, also on the same device. N threads each make
** their own context and run eager ops and a graph on it, several rounds,
** while the others do the same; every result must equal what one thread
** alone computed (bit for bit on the CPU; on the GPU within 1e-5, in case a
** kernel's reduction order depends on timing). Built with -pthread, so it
** runs under ThreadSanitizer too (-fsanitize=thread).
**
**   test_threads          CPU contexts
**   test_threads --gpu    GPU contexts (device i % number of GPUs, so with
**                         two GPUs the threads also switch devices); exits
**                         77 without a GPU */
#include "check.h"
#include "m40/graph.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NTHREADS = 8, ROUNDS = 3 };
enum { M = 33, K = 96, N = 47 };                    /* matmul x [M,K] · w [N,K]ᵀ */
enum { CB = 2, CC = 3, CH = 9, CK = 4 };            /* conv x [CB,CC,CH,CH], w [CK,CC,3,3] */
enum { GM = 8, GK = 16, GN = 12 };                  /* graph: softmax(relu(x·wᵀ)) */
/* floats per result: matmul, gelu(matmul), softmax(matmul), conv, graph */
#define NOUT (3 * M * N + CB * CK * CH * CH + GM * GN)

static int gpu_mode, ndev = 1;

static m40_status make_ctx(int device, m40_ctx **c) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = device;
    return m40_ctx_create(&d, c);
}

#define TRY(call)                                                                \
    do {                                                                         \
        if ((st = (call)) != M40_OK) {                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, m40_errmsg(c)); \
            goto done;                                                           \
        }                                                                        \
    } while (0)

/* Everything one worker computes with `seed` on a new context on `device`,
** into out[NOUT]. */
static m40_status work(int device, uint64_t seed, float *out) {
    m40_ctx *c = NULL;
    m40_status st = make_ctx(device, &c);
    m40_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *t = NULL;
    m40_tensor *cx = NULL, *cw = NULL, *cy = NULL, *gx = NULL;
    m40_graph *g = NULL;
    if (st != M40_OK) {
        fprintf(stderr, "context on device %d: %s\n", device, m40_errmsg(c));
        goto done;
    }
    int64_t xs[2] = {M, K}, ws[2] = {N, K}, bs[1] = {N}, ys[2] = {M, N};
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 2, xs, &x));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 2, ws, &w));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 1, bs, &b));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 2, ys, &y));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 2, ys, &t));
    TRY(m40_fill_random(c, seed, M40_RANDOM_UNIFORM, -1, 1, x));
    TRY(m40_fill_random(c, seed + 1, M40_RANDOM_UNIFORM, -1, 1, w));
    TRY(m40_fill_random(c, seed + 2, M40_RANDOM_NORMAL, 0, 1, b));
    float *o = out;
    TRY(m40_matmul(c, x, w, b, y));
    TRY(m40_tensor_download(c, y, o, sizeof(float) * M * N));
    o += M * N;
    TRY(m40_activation(c, M40_ACT_GELU, y, t));
    TRY(m40_tensor_download(c, t, o, sizeof(float) * M * N));
    o += M * N;
    TRY(m40_softmax(c, y, t));
    TRY(m40_tensor_download(c, t, o, sizeof(float) * M * N));
    o += M * N;

    int64_t cxs[4] = {CB, CC, CH, CH}, cws[4] = {CK, CC, 3, 3}, cys[4] = {CB, CK, CH, CH};
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 4, cxs, &cx));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 4, cws, &cw));
    TRY(m40_tensor_new(c, M40_DTYPE_F32, 4, cys, &cy));
    TRY(m40_fill_random(c, seed + 3, M40_RANDOM_UNIFORM, -1, 1, cx));
    TRY(m40_fill_random(c, seed + 4, M40_RANDOM_UNIFORM, -1, 1, cw));
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.pad_h = cd.pad_w = 1;
    cd.relu = 1;
    TRY(m40_conv2d(c, &cd, cx, cw, NULL, NULL, NULL, cy));
    TRY(m40_tensor_download(c, cy, o, sizeof(float) * CB * CK * CH * CH));
    o += CB * CK * CH * CH;

    float gw[GN * GK], gxh[GM * GK];
    for (int i = 0; i < GN * GK; i++) gw[i] = (float)((seed * 31 + (uint64_t)i * 7) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < GM * GK; i++) gxh[i] = (float)((seed * 13 + (uint64_t)i * 5) % 11) / 11.0f - 0.5f;
    int xi = -1, yi = -1;
    TRY(m40t_mlp_graph(c, GM, GN, GK, gw, &g, &xi, &yi));
    TRY(m40_graph_get_tensor(g, xi, &gx));
    TRY(m40_tensor_upload(c, gx, gxh, sizeof gxh));
    for (int r = 0; r < 2; r++) TRY(m40_graph_run(g)); /* runs reuse the arena */
    m40_tensor *gy = NULL;
    TRY(m40_graph_get_tensor(g, yi, &gy));
    TRY(m40_tensor_download(c, gy, o, sizeof(float) * GM * GN));
    /* every call above succeeded, so no error may be left behind */
    if (m40_errcode(c) != M40_OK || m40_errmsg(c)[0]) {
        fprintf(stderr, "an error was left behind: %s\n", m40_errmsg(c));
        st = M40_ERR_STATE;
    }
done:
    m40_graph_destroy(g);
    m40_tensor *ts[] = {x, w, b, y, t, cx, cw, cy};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) m40_tensor_destroy(ts[i]);
    m40_ctx_destroy(c);
    return st;
}

static float ref[NTHREADS][NOUT];

typedef struct job {
    int id;
    int bad;        /* rounds whose result differed */
    m40_status st;  /* first failing status */
    float got[NOUT];
} job;

static int device_of(int id) { return gpu_mode ? id % ndev : M40_DEVICE_CPU; }

static int same(const float *a, const float *b) {
    if (!gpu_mode) return memcmp(a, b, sizeof(float) * NOUT) == 0;
    for (int i = 0; i < NOUT; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-5f * fabsf(b[i]))) return 0;
    return 1;
}

static void *worker(void *arg) {
    job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        m40_status st = work(device_of(j->id), 1000 + (uint64_t)j->id, j->got);
        if (st != M40_OK && j->st == M40_OK) j->st = st;
        if (st == M40_OK && !same(j->got, ref[j->id])) j->bad++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    gpu_mode = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    if (gpu_mode) {
        m40_ctx *c = NULL;
        if (make_ctx(0, &c) != M40_OK) {
            printf("test_threads --gpu: skipped (%s)\n", m40_errmsg(c));
            m40_ctx_destroy(c);
            return M40T_SKIP;
        }
        m40_ctx_destroy(c);
        for (ndev = 1; ndev < 8; ndev++) { /* count the GPUs the library can use */
            c = NULL;
            m40_status st = make_ctx(ndev, &c);
            m40_ctx_destroy(c);
            if (st != M40_OK) break;
        }
        printf("GPU contexts on %d device%s\n", ndev, ndev == 1 ? "" : "s");
    }
    /* one thread alone: the reference */
    for (int i = 0; i < NTHREADS; i++) {
        m40_status st = work(device_of(i), 1000 + (uint64_t)i, ref[i]);
        CHECK_ST(st, M40_OK);
        if (st != M40_OK) return m40t_finish("test_threads");
    }
    /* N threads at once, each on its own context */
    static job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    int started = 0;
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i].id = i;
        if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0) break;
        started++;
    }
    CHECK(started == NTHREADS);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < started; i++) {
        CHECK_ST(jobs[i].st, M40_OK);
        CHECK(jobs[i].bad == 0);
        if (jobs[i].bad)
            fprintf(stderr, "thread %d: %d of %d rounds differ from the single-thread result\n",
                    i, jobs[i].bad, ROUNDS);
    }
    printf("%d threads x %d rounds on %s contexts\n", started, ROUNDS, gpu_mode ? "GPU" : "CPU");
    return m40t_finish("test_threads");
}
