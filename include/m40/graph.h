/*
** libm40 static graphs, the device-memory planner and the graph executor.
**
** A model is a static graph: op nodes over tensor descriptors. The planner
** sizes all of its device memory before anything is allocated, in four
** regions, each one allocation:
**
**   weights      every WEIGHT tensor, persistent, read-only
**   kv           every STATE tensor (the KV cache, a residual stream),
**                persistent, read-write, zeroed by m40_graph_alloc
**   workspace    scratch of the op that needs most (ops run one at a time)
**   activations  one arena for INPUT and ACTIVATION tensors; offsets by
**                liveness over the execution order, best fit, in-place
**                reuse where the op allows it, 256-byte aligned
**
** The sum must fit a budget: a card preset (m40-12g, m40-24g: board memory
** less ECC, driver and CUDA-context reserve; see docs/planner.md), the free
** memory of a live device, or an explicit byte count. Over budget,
** m40_graph_plan fails with M40_ERR_OOM_DEVICE before anything is
** allocated, naming the region, the shortfall and what would fit.
**
** Life of a graph:
**   m40_graph_create -> m40_graph_tensor / m40_graph_node ... (build)
**   -> m40_graph_plan (validate, order, plan; no allocation)
**   -> m40_graph_alloc (one allocation per region, weights uploaded)
**   -> m40_graph_run ... (no allocation, no synchronization)
**   -> m40_graph_destroy
** Sizes are planned for the CUDA executor whatever the context, so a CPU
** context can plan for a card it does not have (m40-plan does this).
**
** Errors are recorded on the graph's context: read m40_errmsg(ctx).
*/
#ifndef M40_GRAPH_H
#define M40_GRAPH_H

#include "m40/m40.h"
#include "m40/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40_graph m40_graph;

/* Every region offset and size is a multiple of this. */
#define M40_GRAPH_ALIGN 256
#define M40_NODE_MAX_INPUTS 6
/* m40_node_desc.output: let the node create its output tensor with the
** inferred descriptor. */
#define M40_TENSOR_NEW (-1)
/* m40_node_desc.inputs[i]: an optional input that is absent (a bias). */
#define M40_NO_TENSOR (-1)

typedef enum m40_tensor_role {
    M40_ROLE_WEIGHT = 0,     /* persistent, read-only; weights region */
    M40_ROLE_INPUT = 1,      /* written by the caller; kept across runs */
    M40_ROLE_ACTIVATION = 2, /* produced by exactly one node */
    M40_ROLE_STATE = 3       /* persistent, read-write by its op (KV cache) */
} m40_tensor_role;

/* Op kinds, with their inputs and output. Kinds marked "plan" are sized
** by the planner (shapes, workspace) but have no kernel yet:
** m40_graph_alloc refuses a graph that holds one with M40_ERR_UNSUPPORTED
** (m40_op_runs says which run). m40_op_inplace says whether the output
** may share storage with input 0.
**
**   op              inputs                               output
**   ADD, MUL        a, b (b = a's shape or its trailing dims)  a's shape
**   SCALE           x (alpha)                            x's shape
**   ACTIVATION      x (act)                              x's shape
**   SOFTMAX         x (over the last dim)                x's shape
**   CONVERT         x (out_dtype)                        x's shape
**   LINEAR          x [...,K], w [N,K], bias [N]?        [...,N]
**                   (runs with f32 weights: m40_matmul)
**   LINEAR_Q        x [...,K]; wq i8 [N,K] (bits 8) or [N,(K+1)/2] (bits
**                   4, two per byte), or f16 [N,K] (bits 16); scale f16 or
**                   f32 [N] (group 0) or [N,ceil(K/group)] (group 32, 64,
**                   128), absent for bits 16; bias [N]?; norm_w [K] f16/f32?
**                   (x is first rmsnorm(x)·norm_w, eps); residual
**                   f32 [...,N]? (added to y)              [...,N]
**                   (m40_quant_linear; formats in m40/quant.h)
**   CONV2D          x [N,C,H,W], w [K,C/groups,R,S], bias [K]?, residual
**                   [N,K,P,Q]?, scale [K]? (stride, pad, dilation,
**                   fuse_relu)                              [N,K,P,Q]
**                   NHWC (layout): x [N,H,W,C], w [K,R,S,C], [N,P,Q,K]
**                   (runs with groups 1 and f32 weights: m40_conv2d)
**   POOL2D          x [N,C,H,W] (pool, kernel, stride, pad) [N,C,P,Q];
**                   NHWC: [N,H,W,C] -> [N,P,Q,C];
**                   GLOBAL_AVG gives [N,C]
**   RMSNORM         x [...,C], w [C], residual [...,C]? (eps; m40_rmsnorm)
**                   x's shape. With a residual, x must be a STATE tensor
**                   (the residual stream) and the node first updates it:
**                   alpha 1: x += residual; alpha 0: x = residual (the
**                   first layer); then y = norm(x)·w
**   LAYERNORM plan  x [...,C], w [C], b [C] (eps)        x's shape
**   EMBEDDING       ids i32 [...], table [V,C] f32/f16   [...,C] f32
**   SWIGLU          x [...,2F]: silu(x[:F]) * x[F:]      [...,F]
**   ATTENTION       qkv [B,T,(H+2G)·D], k_cache, v_cache [S,L,G,D] f16/f32
**                   (STATE), pos i32 [B,T], slot i32 [B]? (heads H,
**                   kv_heads G, head_dim D, attn_scale): appends qkv's K
**                   and V at pos (m40_kv_append), then causal attention
**                   of its Q over the caches (m40_attention)  [B,T,H·D];
**                   rope_dims > 0 (rope_pairs, rope_theta, rope_scale):
**                   Q and K turned first as ROPE turns them (qkv itself
**                   is not written). The rows of one run should name
**                   different slots: a decode step (T 1) may append and
**                   attend in one kernel, so a row's attention need not
**                   see another row's key appended in the same run
**   TAKE_LAST       x [B,T,C]: the last position         [B,1,C]
**   ROPE            x [...,W], pos i32 (one per row) (heads, head_dim,
**                   rope_dims, rope_pairs, rope_theta, rope_scale;
**                   m40_rope): the first heads·head_dim values of each row
**                   rotated                               x's shape
**   SAMPLE          logits [B,V], history i32 [B,W]?, pos i32 [B]?
**                   (sampler; m40_sample)                 [B,2] f32: id, p
**   ALLREDUCE       x f32 [...] (comm, rank; m40_allreduce): the sum of x
**                   over every rank's graph, which run at the same time
**                   (tensor parallelism)                  x's shape, in place
**
** The parameters of the transformer's ops are those of m40/transformer.h.
*/
#define M40_OP_TABLE(X)              \
    X(M40_OP_ADD, add)               \
    X(M40_OP_MUL, mul)               \
    X(M40_OP_SCALE, scale)           \
    X(M40_OP_ACTIVATION, activation) \
    X(M40_OP_SOFTMAX, softmax)       \
    X(M40_OP_CONVERT, convert)       \
    X(M40_OP_LINEAR, linear)         \
    X(M40_OP_LINEAR_Q, linear_q)     \
    X(M40_OP_CONV2D, conv2d)         \
    X(M40_OP_POOL2D, pool2d)         \
    X(M40_OP_RMSNORM, rmsnorm)       \
    X(M40_OP_LAYERNORM, layernorm)   \
    X(M40_OP_EMBEDDING, embedding)   \
    X(M40_OP_SWIGLU, swiglu)         \
    X(M40_OP_ATTENTION, attention)   \
    X(M40_OP_TAKE_LAST, take_last)   \
    X(M40_OP_ROPE, rope)             \
    X(M40_OP_SAMPLE, sample)         \
    X(M40_OP_ALLREDUCE, allreduce)
/* columns: enum, name (m40_op_name gives it as a string; the library
** finds each kind's implementation by it) */

typedef enum m40_op {
#define M40__OP_ENUM(e, name) e,
    M40_OP_TABLE(M40__OP_ENUM)
#undef M40__OP_ENUM
    M40_OP_COUNT
} m40_op;

/* "add", "conv2d", ...; "?" for an unknown value. */
M40_API const char *m40_op_name(m40_op op);
/* 1 if the op's output may reuse input 0's storage. */
M40_API int m40_op_inplace(m40_op op);
/* 1 if the executor can run the op today. */
M40_API int m40_op_runs(m40_op op);

/* m40_pool (MAX, AVG, GLOBAL_AVG) is defined in m40/m40.h with the eager
** pooling ops (m40_pool2d, m40_global_avgpool); m40_conv2d is there too. */

/* A node. Versioned: struct_size (set by m40_node_desc_init) lets the
** struct grow; m40_graph_node refuses a smaller one than this version's
** with M40_ERR_INVALID_ARG. Always start from m40_node_desc_init. */
typedef struct m40_node_desc {
    size_t struct_size;                /* sizeof(m40_node_desc) */
    m40_op op;
    const char *name;                  /* optional, copied; for messages */
    int ninputs;
    int inputs[M40_NODE_MAX_INPUTS];   /* tensor ids, or M40_NO_TENSOR */
    int output;                        /* tensor id, or M40_TENSOR_NEW */
    /* Parameters; each op reads only its own. Every int is checked (bounds
    ** in the op's rule; strides, pads, dilations, windows at most 2^20). */
    m40_dtype out_dtype;   /* CONVERT */
    float alpha;           /* SCALE; RMSNORM with a residual: 1 (x += r) or 0 (x = r) */
    m40_act act;           /* ACTIVATION */
    float eps;             /* RMSNORM, LAYERNORM, LINEAR_Q with norm_w: finite, > 0 */
    int kernel[2], stride[2], pad[2], groups; /* CONV2D (kernel from w), POOL2D */
    m40_pool pool;         /* POOL2D */
    int heads, kv_heads, head_dim, rope_dims; /* ATTENTION (heads, kv_heads,
                           ** head_dim; rope_dims 0 or RoPE's), ROPE (heads,
                           ** head_dim, rope_dims) */
    int bits;              /* LINEAR_Q: 8, 4 or 16 (f16 weights) */
    m40_layout layout;     /* CONV2D, POOL2D: NCHW (0, default) or NHWC */
    int fuse_relu;         /* CONV2D: ReLU in the conv's epilogue */
    int dilation[2];       /* CONV2D (default 1) */
    int group;             /* LINEAR_Q: 0 = one scale per row; 32, 64, 128 =
                           ** per K-group (the scale dtype is the scale tensor's) */
    m40_rope_pairs rope_pairs; /* ROPE, ATTENTION: ADJACENT (default) or HALF */
    float rope_theta;      /* ROPE, ATTENTION: base (default 10000) */
    float rope_scale;      /* ROPE, ATTENTION: m40_rope_desc.pos_scale (default 1) */
    float attn_scale;      /* ATTENTION: 0 (default) = 1/sqrt(head_dim) */
    m40_sampler_desc sampler; /* SAMPLE (default: m40_sampler_desc_init) */
    struct m40_comm *comm; /* ALLREDUCE: the communicator (m40/comm.h), not owned */
    int rank;              /* ALLREDUCE: this graph's rank in it */
    int glu;               /* LINEAR_Q: 1 = y [...,N/2] = swiglu(x·Wᵀ + bias), silu of
                           ** the first N/2 outputs times the last N/2 (SWIGLU fused;
                           ** N even, no residual); 0 (default) = y [...,N] */
} m40_node_desc;

/* Zeroes nd, then sets struct_size, op, output = M40_TENSOR_NEW, every
** input M40_NO_TENSOR, out_dtype F32, alpha 1, groups 1, strides and
** dilations 1, eps 1e-5, rope_theta 10000, rope_scale 1, the sampler's
** defaults. */
M40_API void m40_node_desc_init(m40_node_desc *nd, m40_op op);

/* Creates an empty graph whose ops will run on ctx (CPU or GPU).
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_STATE (unusable ctx),
** M40_ERR_OOM_HOST. */
M40_API m40_status m40_graph_create(m40_ctx *ctx, m40_graph **out);

/* Frees the graph, its regions and its CUDA graph. NULL is a no-op; a
** second destroy is undefined. Bound tensors stay the caller's. Valid after
** m40_ctx_destroy of its context (see Lifetime in m40.h). */
M40_API void m40_graph_destroy(m40_graph *g);

/* Declares a tensor; its desc's strides are ignored (graph tensors are
** contiguous). *id receives its id (0, 1, 2 ... in declaration order).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, bad role, bad ndim, negative
** extent, or over the size rule of m40.h: M40_MAX_TENSOR_BYTES), M40_ERR_DTYPE,
** M40_ERR_STATE (graph already allocated), M40_ERR_OOM_HOST. */
M40_API m40_status m40_graph_tensor(m40_graph *g, m40_tensor_role role,
                                    const char *name, const m40_tensor_desc *desc,
                                    int *id);

/* Gives a WEIGHT (or STATE) tensor its initial contents: m40_graph_alloc
** copies `nbytes` (= the tensor's bytes) from `host` into its region. The
** pointer must stay valid until m40_graph_alloc returns. Without data a
** weight is left uninitialized (planning needs none). The values of an F32
** or F16 WEIGHT are read once here: a NaN or Inf is refused.
** Returns M40_OK, M40_ERR_INVALID_ARG (bad id, size, role), M40_ERR_STATE,
** M40_ERR_FORMAT (a non-finite weight: the message names the tensor and
** the index of its first non-finite element). */
M40_API m40_status m40_graph_set_data(m40_graph *g, int id, const void *host,
                                      size_t nbytes);

/* Binds caller-owned storage to a tensor (any role): the graph reads or
** writes `t` instead of planning room for it; its bytes are reported as
** external. t must match the tensor's dtype and shape, be contiguous, sit
** on the context's side and outlive the graph.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_SHAPE, M40_ERR_DTYPE,
** M40_ERR_LOCATION, M40_ERR_UNSUPPORTED (strided), M40_ERR_STATE. */
M40_API m40_status m40_graph_bind(m40_graph *g, int id, m40_tensor *t);

/* Marks an ACTIVATION as a graph output: it stays live to the end of the
** run, so the caller can read it after m40_graph_run.
** Returns M40_OK, M40_ERR_INVALID_ARG (bad id or not an ACTIVATION),
** M40_ERR_STATE. */
M40_API m40_status m40_graph_mark_output(m40_graph *g, int id);

/* Adds a node. Inputs may be any declared tensors, including ones produced
** by nodes added later (execution order is a topological sort, ties broken
** by insertion order). The output's desc is inferred from the inputs; with
** output = M40_TENSOR_NEW an ACTIVATION of that desc is declared (named
** after the node) and its id stored in *out (out may be NULL), else the
** declared output must be an ACTIVATION with exactly the inferred desc.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG  NULL, struct_size too small, unknown op, bad
**                        tensor id, wrong number of inputs, bad parameter, output not an ACTIVATION
**   M40_ERR_SHAPE        inputs that do not fit the op's shape rule, or a
**                        declared output of another shape
**   M40_ERR_DTYPE        a dtype the op does not take
**   M40_ERR_STATE        the graph is already allocated
**   M40_ERR_OOM_HOST */
M40_API m40_status m40_graph_node(m40_graph *g, const m40_node_desc *nd, int *out);

/* Looks a tensor up by name (the first one declared with it).
** Returns M40_OK or M40_ERR_INVALID_ARG (none, or NULL arguments). */
M40_API m40_status m40_graph_find(const m40_graph *g, const char *name, int *id);

M40_API int m40_graph_get_tensor_count(const m40_graph *g);
M40_API int m40_graph_get_node_count(const m40_graph *g);

/* ------------------------------------------------------------------ */
/* Budgets                                                             */

typedef struct m40_budget {
    char name[32];           /* "m40-12g", "m40-24g", "device 0", "explicit" */
    uint64_t board_bytes;    /* memory on the board (0 if not known) */
    uint64_t reserved_bytes; /* ECC, driver, CUDA context and library handles */
    uint64_t usable_bytes;   /* what the planned regions may take */
} m40_budget;

/* Fills b for "m40-12g" or "m40-24g" (docs/planner.md derives them).
** Returns M40_OK or M40_ERR_INVALID_ARG (NULL or unknown name). */
M40_API m40_status m40_budget_preset(const char *name, m40_budget *b);
/* An explicit usable byte count; any value is safe (a plan's headroom is
** clamped, never wrapped). Parse user text with care: m40-plan refuses NaN,
** fractions of a byte and values under 1 MiB or over 2^62. b NULL does
** nothing. */
M40_API void m40_budget_bytes(uint64_t usable_bytes, m40_budget *b);
/* The current free memory of ctx's device less a 64 MiB margin (the
** context and its handles already exist, so they are already subtracted).
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_NO_DEVICE (CPU context),
** M40_ERR_CUDA, M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_budget_device(m40_ctx *ctx, m40_budget *b);

/* ------------------------------------------------------------------ */
/* Planning                                                            */

typedef enum m40_region {
    M40_REGION_WEIGHTS = 0,
    M40_REGION_KV = 1,
    M40_REGION_WORKSPACE = 2,
    M40_REGION_ACTIVATIONS = 3,
    M40_REGION_COUNT
} m40_region;

/* "weights", "kv_cache", "workspace", "activations"; "?" otherwise. */
M40_API const char *m40_region_name(m40_region r);

typedef struct m40_plan_info {
    uint64_t region_bytes[M40_REGION_COUNT];
    uint64_t total_bytes;       /* sum of the regions */
    uint64_t external_bytes;    /* bound tensors: the caller's, not counted */
    uint64_t arena_lower_bound; /* max over steps of live activation bytes */
    int peak_step;              /* a step where that maximum is reached */
    uint64_t usable_bytes;      /* the budget's (UINT64_MAX without one) */
    int64_t headroom_bytes;     /* usable - total; negative when over; clamped
                                ** to INT64_MAX (-INT64_MAX) if it does not fit */
    int fits;                   /* total <= usable */
    int nodes, tensors, inplace; /* counts; inplace = outputs sharing input 0 */
} m40_plan_info;

/* Validates the graph (no cycle; every ACTIVATION produced exactly once;
** every tensor used or an output), orders it, computes liveness and all
** offsets, and checks the total against `budget` (NULL = no limit). Fills
** *info (may be NULL) even when over budget. Allocates no device memory.
** Planning twice gives the same result (deterministic).
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   NULL graph, an empty graph, a dangling tensor
**                         (used but never produced, or produced but never
**                         used and not an output), a cycle (named), a
**                         region or total over 2^62 bytes (M40_MAX_TENSOR_BYTES;
**                         every sum is checked, none wraps)
**   M40_ERR_OOM_DEVICE    over budget: the message names the region that
**                         does not fit, the shortfall and what would fit
**   M40_ERR_STATE         already allocated
**   M40_ERR_OOM_HOST */
M40_API m40_status m40_graph_plan(m40_graph *g, const m40_budget *budget,
                                  m40_plan_info *info);

typedef struct m40_graph_tensor_info {
    const char *name;       /* owned by the graph */
    m40_tensor_role role;
    m40_tensor_desc desc;
    uint64_t bytes;         /* contiguous bytes */
    int bound;              /* 1 if caller storage was bound */
    int is_output;
    int region;             /* m40_region, or -1 (bound) */
    uint64_t offset;        /* in the region */
    uint64_t size;          /* planned bytes (aligned) */
    int first_step, last_step; /* live interval, ACTIVATION/INPUT only */
    int shares_with;        /* id of the tensor whose storage it reuses, or -1 */
} m40_graph_tensor_info;

/* Details of tensor `id` after m40_graph_plan.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_STATE (not planned). */
M40_API m40_status m40_graph_get_tensor_info(const m40_graph *g, int id,
                                             m40_graph_tensor_info *ti);

/* The node index run at `step` (0 .. nodes-1) after m40_graph_plan, or -1. */
M40_API int m40_graph_get_step_node(const m40_graph *g, int step);

/* ------------------------------------------------------------------ */
/* Execution                                                           */

/* Plans (without a budget) if needed, then allocates each region once on
** the context's side and uploads weight data. Afterwards the graph cannot
** change. On a GPU context it also creates the cuBLAS handle, so runs
** allocate nothing.
** Returns M40_OK, M40_ERR_UNSUPPORTED (an op without a kernel yet, or an
** op/dtype the executor does not take; named), the statuses of
** m40_graph_plan, M40_ERR_OOM_DEVICE, M40_ERR_OOM_HOST, M40_ERR_CUDA,
** M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_graph_alloc(m40_graph *g);

/* The tensor behind graph tensor `id` (an arena view or the bound one),
** for m40_tensor_upload / download. Owned by the graph.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_STATE (not allocated). */
M40_API m40_status m40_graph_get_tensor(m40_graph *g, int id, m40_tensor **t);

/* Runs every node in order (or replays the captured CUDA graph). On a GPU
** the work is queued on the context's stream and the call returns before
** it finishes; nothing is allocated and nothing synchronizes.
** Returns M40_OK, M40_ERR_STATE (not allocated), the first failing op's
** status (its message names the node), M40_ERR_CUDA, M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_graph_run(m40_graph *g);

/* enable = 1: records one whole run into a CUDA graph, which later
** m40_graph_run calls replay with one launch (the capture itself does not
** execute; run once before capturing so lazily loaded kernels are ready).
** enable = 0 drops the CUDA graph. Capturing allocates; replays do not.
** Returns M40_OK, M40_ERR_STATE (not allocated), M40_ERR_NO_DEVICE (CPU
** context or built without CUDA), M40_ERR_CUDA, the op statuses. */
M40_API m40_status m40_graph_capture(m40_graph *g, int enable);

/* A performance hint for the ATTENTION nodes of decode steps (T <= 8): the
** caller promises every query row's key count (its position + 1) stays at
** most `keys` until the bound changes, so a kernel for short contexts may
** run (libm40 takes decode v5, a warp a query row, at keys <= 512 on f16
** caches with D 128, at keys <= 128 on a cc 5.x card: ChatGLM2-6B int4 +2.3%
** a token at context 128 and +1.9% at 512 on an H200, session 18; past it
** decode v6, as without a bound, its rows a lane chosen by the bound instead
** of the cache length).
** 0 (the default): no bound. Results
** never depend on it: past the bound the same values come back, slower.
** It takes effect at the next run or capture; a change drops a captured
** CUDA graph (capture again). Returns M40_OK, M40_ERR_INVALID_ARG (keys <
** 0). */
M40_API m40_status m40_graph_set_attention_keys(m40_graph *g, int64_t keys);

/* The operations in the captured CUDA graph (kernel launches, copies,
** memsets: what one replay runs; a decode step's "launches per token"),
** -1 when none is captured. */
M40_API int m40_graph_get_launch_count(const m40_graph *g);

/* ------------------------------------------------------------------ */
/* Convolution engines per node (ours, cuDNN, auto-tuned)               */
/*
** Each CONV2D node runs with libm40's kernels or cuDNN (m40_conv_engine in
** m40/m40.h). A node's setting is its own, else the graph's (node -1), else
** the context's (m40_ctx_set_conv_engine), else OURS. m40_graph_alloc
** settles every conv node: CUDNN nodes get their cuDNN algorithm (measured
** with cudnnFindConvolutionForwardAlgorithmEx); AUTO nodes are timed once
** with both engines (GPU time of a few runs, as in a CUDA-graph replay) and
** keep the faster. The choice is part of the allocated graph: every run and
** every captured CUDA graph uses it; m40_graph_get_conv_choice reports it.
** Without cuDNN (not built in, a CPU context, or cuDNN failing on this
** device) AUTO nodes run ours, without an error: the note says why.
** cuDNN's algorithm scratch lives in the context's workspace; the chosen
** algorithms may take up to max(the graph's own workspace, 64 MiB), which
** the planner's budget does not include.
*/

/* Sets the engine of conv node `node` (0-based, in m40_graph_node order),
** or with node = -1 the graph's default. Before m40_graph_alloc only.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   NULL graph, node out of range or not a CONV2D,
**                         e not an m40_conv_engine value
**   M40_ERR_UNSUPPORTED   CUDNN and this libm40 has no cuDNN ("cuDNN: not
**                         built in"), or the graph's context is a CPU one
**   M40_ERR_STATE         the graph is already allocated */
M40_API m40_status m40_graph_set_conv_engine(m40_graph *g, int node, m40_conv_engine e);

/* The index of the node named `name` (the first one added with it).
** Returns M40_OK or M40_ERR_INVALID_ARG (none, or NULL arguments). */
M40_API m40_status m40_graph_find_node(const m40_graph *g, const char *name, int *node);

/* What a conv node runs after m40_graph_alloc. */
typedef struct m40_conv_choice {
    const char *node_name;     /* owned by the graph */
    char shape[96];            /* "N64 C64 56x56 -> K256 56x56, 1x1 s1 p0" */
    m40_conv_engine asked;     /* the setting after inheritance: OURS, CUDNN or AUTO */
    m40_conv_engine engine;    /* what runs: OURS or CUDNN */
    double ours_ms, cudnn_ms;  /* AUTO on a GPU: median GPU time of one conv with
                               ** each engine; 0 where not timed */
    int cudnn_algo;            /* cudnnConvolutionFwdAlgo_t of the cuDNN plan, -1: none */
    const char *cudnn_algo_name; /* "IMPLICIT_PRECOMP_GEMM", ...; "" when none */
    uint64_t cudnn_workspace;  /* bytes of scratch that algorithm takes */
    int cudnn_fused;           /* 1: one cudnnConvolutionBiasActivationForward;
                               ** 0: conv, then bias / residual / ReLU passes */
    char note[160];            /* why: "cuDNN 1.31x faster", "cuDNN: not built in", ... */
} m40_conv_choice;

/* Fills *c for conv node `node`.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, node out of range or not a
** CONV2D), M40_ERR_STATE (not allocated). */
M40_API m40_status m40_graph_get_conv_choice(const m40_graph *g, int node, m40_conv_choice *c);

/* Settles the conv engines again (what m40_graph_alloc did): AUTO nodes are
** timed anew. Drops a captured CUDA graph (capture again afterwards). May
** allocate and synchronize.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_STATE (not allocated),
** M40_ERR_UNSUPPORTED (a CUDNN node that cuDNN cannot run; named),
** M40_ERR_OOM_DEVICE, M40_ERR_CUDA, M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_graph_tune(m40_graph *g);

/* ------------------------------------------------------------------ */
/* Non-finite check mode                                               */
/*
** Opt-in debugging aid: with M40_CHECK_NONFINITE set, m40_graph_run scans
** each node's output (f32 and f16; integer outputs are skipped) right after
** the node runs and stops at the first node whose output holds a NaN or an
** Inf. The run then returns M40_ERR_FORMAT (the data, not the call, is
** malformed) and the message names the node, its op and step, the first
** bad element (flat index and coordinates) and its value, e.g.
**   m40_graph_run: node 'layer1.0.conv2' (conv2d, step 5) produced a
**   non-finite value: element 1234 [0,3,4,10] of [1,56,56,64] is nan
**   (17 non-finite)
** m40_graph_get_check_report gives the same facts as numbers.
** Cost: on a GPU one small reduction kernel per node and one 16-byte
** download, so every node synchronizes; without workspace room the
** output is downloaded. Not
** for serving. A CUDA graph replay runs no checks: m40_graph_set_check
** drops a captured graph so that later runs go node by node and check; a
** capture made while checks are on records the nodes without the checks,
** and its replays do not check.
*/
typedef enum m40_check {
    M40_CHECK_NONE = 0,
    M40_CHECK_NONFINITE = 1 /* NaN or +-Inf in a node's f32 / f16 output */
} m40_check;

/* Sets the graph's checks (an OR of m40_check values; M40_CHECK_NONE turns
** them off). Allowed at any time after m40_graph_create.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL graph, unknown bits). */
M40_API m40_status m40_graph_set_check(m40_graph *g, unsigned checks);

typedef struct m40_check_report {
    int found;              /* 1 if the last checked run stopped at a node */
    int node;               /* node index (m40_graph_node order), -1 if none */
    int step;               /* its execution step */
    const char *node_name;  /* owned by the graph; "" if none */
    m40_op op;
    int64_t index;          /* flat (row-major) index of the first bad element */
    int64_t coord[M40_MAX_DIMS]; /* the same as coordinates, outermost first */
    float value;            /* NaN, +Inf or -Inf */
    int64_t count;          /* non-finite elements in that output */
} m40_check_report;

/* What the last run with checks on found (found = 0: nothing, or no
** checked run yet).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL). */
M40_API m40_status m40_graph_get_check_report(const m40_graph *g, m40_check_report *r);

#ifdef __cplusplus
}
#endif
#endif /* M40_GRAPH_H */
