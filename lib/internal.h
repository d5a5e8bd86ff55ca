/* Private definitions shared by the library's C files. Not installed. */
#ifndef M40_INTERNAL_H
#define M40_INTERNAL_H

#include "m40/m40.h"

#include <stdarg.h>
#include <stdbool.h>

#define M40__ERRMSG_MAX 512

struct m40_ctx {
    m40_ctx_desc desc;
    bool is_gpu;
    bool usable;        /* false if creation failed: only errmsg/destroy work */
    bool lost;          /* a sticky CUDA error happened: every op now fails */
    m40_status last_status;
    char errmsg[M40__ERRMSG_MAX];
    void *stream;       /* cudaStream_t */
    void *cublas;       /* cublasHandle_t, created lazily */
    void *ws;           /* device scratch (split-K partial sums), grown on need */
    size_t ws_bytes;
    int cc_major, cc_minor, sm_count;
    int smem_per_sm;    /* shared memory bytes per SM (attention's split rule) */
    bool matmul_cublas; /* desc.matmul (or M40_MATMUL=cublas): m40_matmul runs cuBLAS */
    char device_name[256];
    m40_conv_engine conv_engine; /* m40_ctx_set_conv_engine (lib/conv_engine/) */
    int64_t attn_keys;  /* the running graph's m40_graph_set_attention_keys (0: none) */
    /* While a graph runs a node: what the next node would like to find in
    ** L2 (its op's l2_hint; NULL none). lib/graph/exec.c sets it,
    ** LINEAR_Q's GPU run passes it to its kernel. */
    const void *l2_hint;
    int64_t l2_hint_bytes;
    void *cudnn;        /* cuDNN handle + eager plan cache, created on first use */
    /* Lifetime (core.c): children hold the context; m40_ctx_destroy with live
    ** children only closes it, the last child's release frees it. */
    int64_t live_tensors, live_graphs;
    bool closing;
    uint64_t workspace_fallbacks; /* m40_ctx_stats */
    /* The index guard (kernels/guard.h): device words, and whether a
    ** guarded kernel ran since the last check (lib/cuda/backend.c). */
    unsigned *guard;
    bool guard_armed;
    /* The sync words (kernels/guard.h): counters kernels leave at zero, right
    ** after the guard's words; NULL until the guard is made. */
    unsigned *sync;
    /* Teardown hooks of upper layers (the conv engine's cuDNN state), run
    ** newest first before the CUDA stream is destroyed. */
    void (*fini[4])(m40_ctx *ctx);
    int nfini;
};

struct m40_tensor {
    m40_tensor_desc desc;
    m40_location loc;
    m40_ctx *ctx;
    void *base;         /* start of the storage (what free() releases) */
    void *data;         /* first element */
    size_t storage_bytes; /* bytes of storage from `base` */
    bool owns;          /* base was allocated by the library */
};

/* Records status and a printf-style message on ctx; returns status so a
** call site reads `return m40__err(ctx, M40_ERR_SHAPE, "...")`. */
m40_status m40__err(m40_ctx *ctx, m40_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void m40__log(m40_ctx *ctx, m40_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Common checks at the top of each public call on a context: usable, not
** lost, not closing. On success it clears the last error (a call that
** succeeds leaves none behind) and makes a GPU context's device current. */
m40_status m40__ctx_check(m40_ctx *ctx);
/* Makes ctx's device current without other checks (for destroy paths). */
void m40__ctx_enter(m40_ctx *ctx);
/* Lifetime: a tensor or graph made on ctx holds it (what is a tensor or a
** graph, the M40__CHILD_* kind). Release may free a closing context, so it
** is the last thing a destroy function does with ctx. */
enum { M40__CHILD_TENSOR = 0, M40__CHILD_GRAPH = 1 };
void m40__ctx_hold(m40_ctx *ctx, int kind);
void m40__ctx_release(m40_ctx *ctx, int kind);
/* Registers fn to run at the context's teardown, before the CUDA stream
** goes (at most 4; a hook already registered is not added again). */
void m40__ctx_on_fini(m40_ctx *ctx, void (*fn)(m40_ctx *ctx));
/* Checks that t is non-NULL, belongs to ctx and lives on the context's
** side. `what` names the argument in the message. */
m40_status m40__check_tensor(m40_ctx *ctx, const m40_tensor *t, const char *what);
m40_status m40__check_desc(m40_ctx *ctx, const m40_tensor_desc *d);
bool m40__same_shape(const m40_tensor_desc *a, const m40_tensor_desc *b);
/* Writes "[2,3,4]" into buf: the desc's shape, or ndim dims of shape. */
const char *m40__shape_str(const m40_tensor_desc *d, char *buf, size_t n);
const char *m40__dims_str(int ndim, const int64_t *shape, char *buf, size_t n);
/* Element offset of the i-th element in row-major order of the shape. */
int64_t m40__elem_offset(const m40_tensor_desc *d, int64_t i);

/* ---- CUDA backend (lib/cuda/backend.c), only with M40_HAVE_CUDA ---------- */
#ifdef M40_HAVE_CUDA
m40_status m40__cuda_ctx_init(m40_ctx *ctx);
void m40__cuda_ctx_fini(m40_ctx *ctx);
m40_status m40__cuda_info(m40_ctx *ctx, m40_device_info *info);
m40_status m40__cuda_sync(m40_ctx *ctx);
/* Makes ctx's device current in this thread (cudaSetDevice only when
** another device is current). */
m40_status m40__cuda_enter(m40_ctx *ctx);
m40_status m40__cuda_malloc(m40_ctx *ctx, size_t bytes, void **p);
void m40__cuda_free(m40_ctx *ctx, void *p);
/* kind: 0 = H2D, 1 = D2H, 2 = D2D. Synchronous for H2D/D2H. */
m40_status m40__cuda_memcpy(m40_ctx *ctx, void *dst, const void *src,
                            size_t bytes, int kind);
/* Turns a cudaError_t (as int) from `what` into a status + message;
** marks the context lost on a sticky error. */
m40_status m40__cuda_check(m40_ctx *ctx, int err, const char *what);
/* The context's cuBLAS handle, created on first use (pedantic FP32 math). */
/* "CUBLAS_STATUS_..." for a cublasStatus_t (as int); "cuBLAS error" else. */
const char *m40__cublas_status_str(int status);
m40_status m40__cuda_cublas(m40_ctx *ctx, void **handle);
/* The context's device scratch, grown to at least `bytes` (synchronizes the
** stream when it must grow). */
m40_status m40__cuda_workspace(m40_ctx *ctx, size_t bytes, void **p);
/* An optional scratch (split-K partial sums) in the context workspace: *p
** gets at least *bytes, or NULL with *bytes = 0 when the workspace cannot
** grow (the caller then runs a kernel without it; that fallback is logged
** at WARN and counted, and leaves no error behind). Fails only with
** M40_ERR_DEVICE_LOST. */
m40_status m40__cuda_scratch(m40_ctx *ctx, size_t *bytes, void **p);
m40_status m40__cuda_copy_strided(m40_ctx *ctx, m40_tensor *dst, const m40_tensor *src);
/* After the stream is idle: when a guarded kernel ran since the last check
** (ctx->guard_armed), reads the index guard; a bad index recorded there is
** returned as M40_ERR_INVALID_ARG, "fn: <what> <value> out of range ..."
** and the guard is cleared. */
m40_status m40__cuda_guard_check(m40_ctx *ctx, const char *fn);
/* cudaMemsetAsync on the context's stream. */
m40_status m40__cuda_memset(m40_ctx *ctx, void *p, int value, size_t bytes);
#endif

/* lib/models/chatglm2.c: which fusions the ChatGLM2 graphs use (bits;
** default all): M40__FUSE_ROPE, RoPE inside the attention node (turned as
** K and V are appended) instead of a ROPE node; M40__FUSE_NORM, each
** RMSNorm inside the LINEAR_Q that follows it and each residual add in the
** epilogue of the LINEAR_Q before it (the stream an activation, no STATE
** "hidden"; f16/int8/int4 weights on one GPU); M40__FUSE_GLU (with
** M40__FUSE_NORM), a decode graph's SwiGLU inside dense_h_to_4h's LINEAR_Q
** (glu) instead of a SWIGLU node. Tests and m40-bench clear bits to compare
** (M40_BENCH_GLM_FUSE); set before the graphs are built. */
#define M40__FUSE_ROPE 1u
#define M40__FUSE_NORM 2u
#define M40__FUSE_GLU 4u
extern unsigned m40__chatglm2_fuse;

/* lib/ops/attention.c: which decode attention kernel runs (0 the default:
** the tile kernel, or v5 / v6 by attn_bound; kernels/attention.h lists the
** others); tests and m40-bench set it to compare them */
extern int m40__attn_decode_variant;
extern int m40__attn_prefill_splits; /* prefill key shares: 0 the rule (lib/ops/attention.c) */
/* lib/ops/attention.c: 1 (default) decode v6 where the default decode kernel
** would be the tile kernel at T 1, f16, D 128 (attn_bound); 0 keeps the
** tile kernel there (m40-bench's A/B) */
extern int m40__attn_v6;
extern int m40__attn_decode_max_splits;
extern int m40__attn_v5_ways; /* decode v5's ways: -1 the rule (lib/ops/attention.c) */
extern int m40__attn_v5_ways_keys; /* v5's ways under key bounds <= n, also past v5's edge: 0 the rule (lib/ops/attention.c) */
extern int m40__attn_v5_wsplits; /* decode v5's ways' splits of the keys: -1 the rule, 0/1 none, n > 1 n (lib/ops/attention.c) */
extern int m40__attn_short_keys; /* v5 under key bounds <= n: 0 the device's (lib/ops/attention.c) */
struct m40k_attn_shape;
/* the decode kernel attn_bound picks for s on ctx (its cc_major, sm_count,
** attn_keys) under the knobs: sets s->decode_variant, keys, v5_ways */
void m40__attn_bound(const m40_ctx *ctx, struct m40k_attn_shape *s);
/* The hints m40__graph_l2_hint gives (an A/B knob, M40_BENCH_GLM_L2HINT):
** 0 none, 1 (default) the ops' own. Two more were measured and taken out
** (bench/NOTES.md, session 37): the attention's first K rows asked by qkv's
** warps (+0.05%), and the norms' weights asked by the grid's last warps
** instead of its first (a tie). */
extern int m40__l2_hint;
/* What an allocated graph's step s + 1 would like to find in L2 (its op's
** l2_hint): the data and *bytes, or NULL and 0 (lib/graph/exec.c; a graph
** run hands it to step s on a GPU as ctx->l2_hint) */
struct m40_graph;
const void *m40__graph_l2_hint(const struct m40_graph *g, int s, int64_t *bytes);

#endif /* M40_INTERNAL_H */
