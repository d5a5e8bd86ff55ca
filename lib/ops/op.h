/* One op = one unit. Each op family has one file in lib/ops/ that exports
** table entries (m40__op_def): the name and in-place rule, ONE rule
** (arguments, dtypes, output shape, workspace bytes; descriptor-level) and
** the CPU and GPU runs. The eager entry points (m40_add, m40_matmul, ...),
** the graph's shape inference (lib/graph/shapes.c), its workspace
** reservation and its executor (lib/graph/exec.c) all go through
** m40__op_get(op). Not installed.
**
** Layers: lib/ops/<family>.c -> lib/ref/<family>.c (CPU reference)
**                            -> kernels/<family>.h (GPU launchers)
**                            -> lib/cuda/ (runtime: stream, workspace, errors) */
#ifndef M40_OPS_OP_H
#define M40_OPS_OP_H

#include "../internal.h"
#include "../checked.h"
#include "m40/graph.h"

struct m40__conv_sel; /* lib/conv_engine/conv_engine.h */

/* A rule call: the op's parameters and its input descriptors. */
typedef struct m40__op_call {
    m40_ctx *ctx;                 /* errors are recorded here */
    const char *fn;               /* message prefix: "m40_matmul", "m40_graph_node: node 'fc' (linear)" */
    const m40_node_desc *nd;      /* op and parameters; nd->ninputs slots */
    const m40_tensor_desc *in[M40_NODE_MAX_INPUTS]; /* NULL: absent (optional input) */
} m40__op_call;

/* A run: tensors whose descs passed the op's rule and run check. */
typedef struct m40__op_run {
    const char *fn;
    const m40_node_desc *nd;
    const m40_tensor *in[M40_NODE_MAX_INPUTS]; /* NULL: absent */
    m40_tensor *out;
    const struct m40__conv_sel *sel; /* CONV2D in a graph: the settled engine; NULL: the context's */
} m40__op_run;

typedef struct m40__op_def {
    m40_op op;
    const char *name;       /* "add", "conv2d", ... (m40_op_name) */
    int inplace;            /* output may reuse input 0's storage */
    int min_in, max_in;     /* input slots; slots below min_in are required */
    const char *in_names[M40_NODE_MAX_INPUTS]; /* for messages */
    const char *out_name;
    unsigned state_inputs;  /* bit i: input i must be a STATE tensor (graphs) */
    /* When the STATE inputs depend on the call (RMSNORM: x only with a
    ** residual): the mask for this call; NULL: state_inputs. */
    unsigned (*state_mask)(const m40__op_call *c);
    /* Checks parameters, dtypes and shapes; writes the output desc
    ** (contiguous). Records the error on c->ctx. */
    m40_status (*rule)(const m40__op_call *c, m40_tensor_desc *out);
    /* Device scratch bytes (after rule succeeded). sm_count > 0: exactly
    ** what the launcher asks for on that GPU (CUDA builds); 0: the planner's
    ** device-independent figure, by the launcher's own plan rules. NULL: 0.
    ** *bytes = 0 and a SHAPE error when the figure would overflow. */
    m40_status (*workspace)(const m40__op_call *c, const m40_tensor_desc *out, int sm_count,
                            uint64_t *bytes);
    /* What today's kernels take beyond the rule (f32 weights, contiguity,
    ** dims < 2^31 on a GPU, ...): M40_ERR_UNSUPPORTED with a message.
    ** Checked by every eager call and at m40_graph_alloc. NULL: all. */
    m40_status (*run_check)(const m40__op_call *c, const m40_tensor_desc *out);
    m40_status (*run_cpu)(m40_ctx *ctx, const m40__op_run *r); /* NULL: plan only */
#ifdef M40_HAVE_CUDA
    m40_status (*run_gpu)(m40_ctx *ctx, const m40__op_run *r);
    /* Why this node cannot be recorded into a CUDA graph (it waits on the
    ** host, say), or NULL when it can; m40_graph_capture refuses with it.
    ** NULL function: every node of the op can. */
    const char *(*uncapturable)(const m40_node_desc *nd);
    /* At m40_graph_alloc on a GPU: handles the runs will need (cuBLAS), so
    ** that no run allocates. NULL: none. */
    m40_status (*prepare)(m40_ctx *ctx, const m40__op_call *c);
#endif
    /* What a run of this node waits on before its weights and would like
    ** to find in L2 (a small operand: LINEAR_Q's norm_w), from its inputs;
    ** NULL: nothing. The graph executor hands it to the node before it
    ** (ctx->l2_hint, on a GPU), whose kernel may ask L2 for it
    ** (m40__graph_l2_hint). NULL function: none. */
    const m40_tensor *(*l2_hint)(const m40_node_desc *nd, const m40_tensor *const *in);
} m40__op_def;

/* The entry of op, or NULL for a value outside m40_op. */
const m40__op_def *m40__op_get(m40_op op);

/* The eager path of every op: checks ctx and each tensor (NULL, side),
** runs the rule, the run check, compares `out` with the inferred desc, then
** runs on the context's side. in[i] NULL: absent (optional inputs only). */
m40_status m40__op_eager(m40_ctx *ctx, const char *fn, const m40_node_desc *nd,
                         const m40_tensor *const *in, m40_tensor *out,
                         const struct m40__conv_sel *sel);

/* The rule of nd's op over `in` (input count, required inputs, the rule);
** the graph's shape inference and the eager path share it. */
m40_status m40__op_infer(const m40__op_call *c, m40_tensor_desc *out);

/* ---- helpers for the rules (registry.c); each records the error on c->ctx ---- */
m40_status m40__rule_fail(const m40__op_call *c, m40_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Input i (when present) is d1 or d2. */
m40_status m40__rule_dtype(const m40__op_call *c, int i, m40_dtype d1, m40_dtype d2);
/* Input i (when present) has lo..hi dims. */
m40_status m40__rule_ndim(const m40__op_call *c, int i, int lo, int hi);
/* SHAPE error listing the inputs, then `what`. */
m40_status m40__rule_shape(const m40__op_call *c, const char *what);
/* Sets out (contiguous) after checking that its bytes stay below 2^62. */
/* The output of a linear layer y = x·Wᵀ: x's shape with the last dim N, F32
** (x is input 0; refuses x of 2^62 elements or more). */
m40_status m40__rule_linear_out(const m40__op_call *c, int64_t N, m40_tensor_desc *out);
m40_status m40__rule_out(const m40__op_call *c, m40_tensor_desc *out, m40_dtype dt, int ndim,
                         const int64_t *shape);
/* The product of dims [lo, hi) of d, or -1 past 2^62. */
int64_t m40__dims_product(const m40_tensor_desc *d, int lo, int hi);
/* An input present and a float tensor that is not f32: UNSUPPORTED (run checks). */
m40_status m40__run_need_f32(const m40__op_call *c, int i);
/* Every present input contiguous: UNSUPPORTED otherwise (run checks). */
m40_status m40__run_need_contiguous(const m40__op_call *c, const m40_tensor_desc *out);

/* Bounds on user-supplied ints of the rules: strides, pads, dilations,
** windows (2^20) and attention sizes (2^20 heads, 2^16 head_dim), far
** above any real model and low enough that int64 products cannot wrap. */
#define M40__OP_PARAM_MAX (1 << 20)
#define M40__OP_BYTES_MAX ((int64_t)1 << 62)

#ifdef M40_HAVE_CUDA
/* Turns a launcher's cudaError_t (as int) into a status. */
static inline m40_status m40__launched(m40_ctx *ctx, int err, const char *fn) {
    return err ? m40__cuda_check(ctx, err, fn) : M40_OK;
}
#define M40__GPU(f) .run_gpu = (f),
#define M40__PREPARE(f) .prepare = (f),
#else
#define M40__GPU(f)
#define M40__PREPARE(f)
#endif

/* The families' entries, one per op kind of M40_OP_TABLE (m40/graph.h), each
** defined in its family's file as m40__op_<name>. */
#define M40__OP_EXTERN(e, name) extern const m40__op_def m40__op_##name;
M40_OP_TABLE(M40__OP_EXTERN)
#undef M40__OP_EXTERN

/* conv.c: the eager conv descriptor of a CONV2D node's parameters. */
m40_conv2d_desc m40__conv2d_desc_of(const m40_node_desc *nd);

/* rope.c, shared with the ATTENTION node's fused RoPE: the descriptor of a
** node's RoPE parameters; the rule's checks of rope_dims (even, 2 ..
** head_dim), rope_pairs, rope_theta and rope_scale; a CPU run's check that
** no position is below -1 (INVALID_ARG naming the row). */
struct m40_rope_desc;
void m40__rope_desc_of(const m40_node_desc *nd, struct m40_rope_desc *d);
m40_status m40__rope_rule_params(const m40__op_call *c, int head_dim);
m40_status m40__rope_cpu_positions(m40_ctx *ctx, const char *fn, const int32_t *pos, int64_t rows);

#endif
