/* Communicators (m40/comm.h): the host backend.
**
** An all-reduce is three meetings of the ranks, each one a barrier that a
** failed rank or a timeout breaks for everyone (so no rank waits forever):
**   1. each rank posts a host pointer to its part (a CPU tensor's data, or a
**      GPU tensor's copy in the rank's staging buffer) and its count;
**   2. rank r sums elements [r·n/N, (r+1)·n/N) of every part, in rank
**      order, into the shared result (every rank gets the same bits);
**   3. each rank copies the result into its tensor; after the third
**      meeting no part or result is read any more, so the next call may
**      reuse them.
** The NCCL backend (CUDA builds): libnccl.so.2 loaded at run time (dlopen:
** no build or link dependency; M40_NCCL_LIB names another file), one
** communicator per rank from ncclCommInitAll over the contexts' devices,
** ncclAllReduce in place on each rank's stream (asynchronous like a kernel,
** and capturable into a CUDA graph). The few NCCL types used are declared
** here, as lib/measure/nvml.c does for NVML (NCCL's ABI: ncclFloat32 = 7,
** ncclSum = 0, ncclSuccess = 0). */
#define _POSIX_C_SOURCE 200809L
#include "../internal.h"
#include "m40/comm.h"

#include <errno.h>
#include <pthread.h>
#ifdef M40_HAVE_CUDA
#include <dlfcn.h>
#include <stdio.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RANKS 64

struct m40_comm {
    int n;
    m40_comm_kind kind;
    m40_ctx *ctx[MAX_RANKS];
    double timeout_s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned gen;              /* meetings completed */
    int arrived;               /* ranks at the current meeting */
    int broken;                /* a rank failed or timed out: every call fails */
    const float *part[MAX_RANKS]; /* this call's parts (host) */
    int64_t count[MAX_RANKS];
    float *sum;                /* the result (host), grown under mu */
    int64_t sum_cap;
    float *stage[MAX_RANKS];   /* GPU ranks: the host copy of the part */
    int64_t stage_cap[MAX_RANKS];
    void *nccl_comm[MAX_RANKS]; /* M40_COMM_NCCL: ncclComm_t per rank */
};

#ifdef M40_HAVE_CUDA
/* ---- NCCL, loaded at run time -------------------------------------------- */
typedef int (*nccl_init_all_fn)(void **comms, int ndev, const int *devlist);
typedef int (*nccl_all_reduce_fn)(const void *send, void *recv, size_t count, int dtype, int op,
                                  void *comm, void *stream);
typedef int (*nccl_destroy_fn)(void *comm);
typedef const char *(*nccl_error_fn)(int result);
typedef int (*nccl_version_fn)(int *version);

static struct {
    pthread_once_t once;
    void *dl;
    nccl_init_all_fn init_all;
    nccl_all_reduce_fn all_reduce;
    nccl_destroy_fn destroy, abort; /* abort may be NULL (old NCCL) */
    nccl_error_fn error;
    int version;
    char why[200];
} nccl = {.once = PTHREAD_ONCE_INIT};

static void nccl_load(void) {
    const char *env = getenv("M40_NCCL_LIB");
    const char *names[3] = {env && *env ? env : "libnccl.so.2", "libnccl.so", NULL};
    for (int i = 0; names[i] && !nccl.dl; i++) nccl.dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nccl.dl) {
        snprintf(nccl.why, sizeof nccl.why, "%s could not be loaded (pip install "
                 "\"nvidia-nccl-cu11==2.21.5\" or \"nvidia-nccl-cu12<2.28\", which still carry "
                 "Maxwell code; M40_NCCL_LIB=.../libnccl.so.2)", names[0]);
        return;
    }
    *(void **)(&nccl.init_all) = dlsym(nccl.dl, "ncclCommInitAll");
    *(void **)(&nccl.all_reduce) = dlsym(nccl.dl, "ncclAllReduce");
    *(void **)(&nccl.destroy) = dlsym(nccl.dl, "ncclCommDestroy");
    *(void **)(&nccl.abort) = dlsym(nccl.dl, "ncclCommAbort");
    *(void **)(&nccl.error) = dlsym(nccl.dl, "ncclGetErrorString");
    nccl_version_fn ver;
    *(void **)(&ver) = dlsym(nccl.dl, "ncclGetVersion");
    if (!nccl.init_all || !nccl.all_reduce || !nccl.destroy || !nccl.error || !ver) {
        snprintf(nccl.why, sizeof nccl.why, "the NCCL library lacks ncclCommInitAll / "
                 "ncclAllReduce / ncclCommDestroy");
        dlclose(nccl.dl);
        nccl.dl = NULL;
        return;
    }
    ver(&nccl.version);
}

/* NULL when NCCL is there, else why not. */
static const char *nccl_missing(void) {
    pthread_once(&nccl.once, nccl_load);
    return nccl.dl ? NULL : nccl.why;
}
#endif

static void mark_broken(m40_comm *c) {
    pthread_mutex_lock(&c->mu);
    c->broken = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* A meeting of every rank. M40_OK when all came; M40_ERR_STATE when the
** communicator is (or becomes) broken, or the others did not come in time. */
static m40_status meet(m40_comm *c, m40_ctx *ctx, const char *fn) {
    pthread_mutex_lock(&c->mu);
    if (c->broken) {
        pthread_mutex_unlock(&c->mu);
        return m40__err(ctx, M40_ERR_STATE, "%s: the communicator is broken (another rank "
                        "failed or did not come in time): make a new one", fn);
    }
    unsigned g = c->gen;
    if (++c->arrived == c->n) {
        c->arrived = 0;
        c->gen++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        return M40_OK;
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double end = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + c->timeout_s;
    dl.tv_sec = (time_t)end;
    dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
    int timed_out = 0;
    while (c->gen == g && !c->broken)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT && c->gen == g) {
            timed_out = 1;
            c->broken = 1;
            pthread_cond_broadcast(&c->cv);
        }
    int came = c->gen != g;
    pthread_mutex_unlock(&c->mu);
    if (came) return M40_OK;
    if (timed_out)
        return m40__err(ctx, M40_ERR_STATE, "%s: the other ranks did not come within %g s (is "
                        "every rank's call made, each from its own thread?); the communicator is "
                        "broken", fn, c->timeout_s);
    return m40__err(ctx, M40_ERR_STATE, "%s: another rank failed; the communicator is broken", fn);
}

m40_status m40_comm_create(m40_ctx *const *ctxs, int n, m40_comm_kind kind, m40_comm **out) {
    const char *fn = "m40_comm_create";
    if (out) *out = NULL;
    m40_ctx *c0 = ctxs && n >= 1 ? ctxs[0] : NULL;
    if (!ctxs || !out || n < 1 || n > MAX_RANKS)
        return c0 ? m40__err(c0, M40_ERR_INVALID_ARG, "%s: NULL, or %d ranks (1..%d)", fn, n,
                             MAX_RANKS)
                  : M40_ERR_INVALID_ARG;
    m40_status st;
    for (int i = 0; i < n; i++) {
        if (!ctxs[i]) return c0 ? m40__err(c0, M40_ERR_INVALID_ARG, "%s: context %d is NULL", fn, i)
                                : M40_ERR_INVALID_ARG;
        if ((st = m40__ctx_check(ctxs[i])) != M40_OK) return st;
        for (int j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i])
                return m40__err(c0, M40_ERR_INVALID_ARG, "%s: context %d is context %d again "
                                "(one context per rank)", fn, i, j);
        if (ctxs[i]->is_gpu != c0->is_gpu)
            return m40__err(c0, M40_ERR_INVALID_ARG, "%s: contexts 0 and %d: one on the CPU, "
                            "one on a GPU (all ranks on one side)", fn, i);
    }
    if ((int)kind < 0 || kind > M40_COMM_NCCL)
        return m40__err(c0, M40_ERR_INVALID_ARG, "%s: unknown kind %d", fn, (int)kind);
    /* NCCL: GPU contexts on distinct devices, the library loadable */
    const char *no_nccl = NULL;
#ifdef M40_HAVE_CUDA
    if (!c0->is_gpu) no_nccl = "the contexts are CPU contexts";
    for (int i = 0; !no_nccl && i < n; i++)
        for (int j = 0; j < i; j++)
            if (ctxs[i]->desc.device == ctxs[j]->desc.device)
                no_nccl = "two ranks on one device (NCCL needs a device per rank; the host "
                          "backend does not)";
    if (!no_nccl) no_nccl = nccl_missing();
#else
    no_nccl = "this libm40 was built without CUDA";
#endif
    if (kind == M40_COMM_NCCL && no_nccl)
        return m40__err(c0, M40_ERR_UNSUPPORTED, "%s: no NCCL: %s", fn, no_nccl);
    m40_comm *c = calloc(1, sizeof *c);
    if (!c) return m40__err(c0, M40_ERR_OOM_HOST, "%s: out of host memory", fn);
    c->n = n;
    c->kind = no_nccl || kind == M40_COMM_HOST ? M40_COMM_HOST : M40_COMM_NCCL;
#ifdef M40_HAVE_CUDA
    if (c->kind == M40_COMM_NCCL) {
        int devs[MAX_RANKS];
        for (int i = 0; i < n; i++) devs[i] = ctxs[i]->desc.device;
        int r = nccl.init_all(c->nccl_comm, n, devs);
        if (r != 0) {
            free(c);
            return m40__err(c0, M40_ERR_CUDA, "%s: ncclCommInitAll: %s (NCCL %d)", fn, nccl.error(r),
                            nccl.version);
        }
    }
#endif
    c->timeout_s = 60.0;
    for (int i = 0; i < n; i++) c->ctx[i] = ctxs[i];
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    *out = c;
    return M40_OK;
}

void m40_comm_destroy(m40_comm *c) {
    if (!c) return;
#ifdef M40_HAVE_CUDA
    for (int i = 0; c->kind == M40_COMM_NCCL && i < c->n; i++)
        if (c->nccl_comm[i]) nccl.destroy(c->nccl_comm[i]);
#endif
    for (int i = 0; i < c->n; i++) free(c->stage[i]);
    free(c->sum);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

int m40_comm_size(const m40_comm *c) { return c ? c->n : 0; }

void m40_comm_abort(m40_comm *c) {
    if (!c) return;
    mark_broken(c);
#ifdef M40_HAVE_CUDA
    for (int i = 0; c->kind == M40_COMM_NCCL && nccl.abort && i < c->n; i++)
        if (c->nccl_comm[i]) {
            nccl.abort(c->nccl_comm[i]); /* frees it: nothing left to destroy */
            c->nccl_comm[i] = NULL;
        }
#endif
}
m40_comm_kind m40_comm_get_kind(const m40_comm *c) { return c ? c->kind : M40_COMM_AUTO; }

m40_status m40_comm_set_timeout(m40_comm *c, double seconds) {
    if (!c || !(seconds > 0 && seconds <= 1e6)) return M40_ERR_INVALID_ARG;
    c->timeout_s = seconds;
    return M40_OK;
}

/* Grows *buf to n floats (keeps nothing). */
static int grow(float **buf, int64_t *cap, int64_t n) {
    if (n <= *cap) return 0;
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) return -1;
    free(*buf);
    *buf = p;
    *cap = n;
    return 0;
}

m40_status m40_allreduce(m40_comm *c, int rank, m40_tensor *x) {
    const char *fn = "m40_allreduce";
    if (!c || rank < 0 || rank >= c->n) return M40_ERR_INVALID_ARG;
    m40_ctx *ctx = c->ctx[rank];
    m40_status st = M40_OK;
    int64_t n = 0;
    if (!x || x->ctx != ctx)
        st = m40__err(ctx, M40_ERR_INVALID_ARG, "%s: rank %d: %s", fn, rank,
                      x ? "the tensor is not on this rank's context" : "NULL tensor");
    else if (x->desc.dtype != M40_DTYPE_F32)
        st = m40__err(ctx, M40_ERR_DTYPE, "%s: rank %d: the tensor is %s, expected f32", fn, rank,
                      m40_dtype_name(x->desc.dtype));
    else if (!m40_tensor_desc_is_contiguous(&x->desc))
        st = m40__err(ctx, M40_ERR_SHAPE, "%s: rank %d: the tensor must be contiguous", fn, rank);
    else if ((n = m40_tensor_desc_numel(&x->desc)) < 0 || n > ((int64_t)1 << 40))
        st = m40__err(ctx, M40_ERR_SHAPE, "%s: rank %d: %lld elements", fn, rank, (long long)n);
    if (st == M40_OK && c->n == 1 && c->kind == M40_COMM_HOST) return M40_OK;
#ifdef M40_HAVE_CUDA
    if (c->kind == M40_COMM_NCCL) { /* in place on the rank's stream */
        if (st == M40_OK && (c->broken || !c->nccl_comm[rank]))
            st = m40__err(ctx, M40_ERR_STATE, "%s: the communicator was aborted", fn);
        if (st == M40_OK && (st = m40__ctx_check(ctx)) == M40_OK) {
            int r = nccl.all_reduce(x->data, x->data, (size_t)n, 7 /* ncclFloat32 */,
                                    0 /* ncclSum */, c->nccl_comm[rank], ctx->stream);
            if (r != 0)
                st = m40__err(ctx, M40_ERR_CUDA, "%s: rank %d: ncclAllReduce: %s", fn, rank,
                              nccl.error(r));
        }
        return st;
    }
#endif
    const float *mine = NULL;
    if (st == M40_OK && ctx->is_gpu) { /* through the host */
        if (grow(&c->stage[rank], &c->stage_cap[rank], n))
            st = m40__err(ctx, M40_ERR_OOM_HOST, "%s: rank %d: out of host memory", fn, rank);
        else if ((st = m40_tensor_download(ctx, x, c->stage[rank], (size_t)n * 4)) == M40_OK)
            mine = c->stage[rank];
    } else if (st == M40_OK) {
        mine = x->data;
    }
    if (st != M40_OK) { /* the others must not wait for this rank */
        mark_broken(c);
        return st;
    }
    /* 1: the parts (and a result large enough for the largest) */
    pthread_mutex_lock(&c->mu);
    c->part[rank] = mine;
    c->count[rank] = n;
    int oom = grow(&c->sum, &c->sum_cap, n);
    pthread_mutex_unlock(&c->mu);
    if (oom) {
        mark_broken(c);
        return m40__err(ctx, M40_ERR_OOM_HOST, "%s: rank %d: out of host memory", fn, rank);
    }
    if ((st = meet(c, ctx, fn)) != M40_OK) return st;
    for (int k = 0; k < c->n; k++)
        if (c->count[k] != n) {
            mark_broken(c);
            return m40__err(ctx, M40_ERR_SHAPE, "%s: rank %d has %lld elements, rank %d %lld",
                            fn, rank, (long long)n, k, (long long)c->count[k]);
        }
    /* 2: this rank's slice of the sum, in rank order */
    int64_t lo = n * rank / c->n, hi = n * (rank + 1) / c->n;
    for (int64_t i = lo; i < hi; i++) {
        float s = c->part[0][i];
        for (int k = 1; k < c->n; k++) s += c->part[k][i];
        c->sum[i] = s;
    }
    if ((st = meet(c, ctx, fn)) != M40_OK) return st;
    /* 3: the result into this rank's tensor */
    if (ctx->is_gpu) st = m40_tensor_upload(ctx, x, c->sum, (size_t)n * 4);
    else memcpy(x->data, c->sum, (size_t)n * 4);
    if (st != M40_OK) {
        mark_broken(c);
        return st;
    }
    return meet(c, ctx, fn);
}
