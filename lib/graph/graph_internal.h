/* Private definitions of the graph, planner and executor (lib/graph/). */
#ifndef M40_GRAPH_INTERNAL_H
#define M40_GRAPH_INTERNAL_H

#include "../internal.h"
#include "../conv_engine/conv_engine.h"
#include "m40/graph.h"

typedef struct m40__gtensor {
    char *name;
    m40_tensor_role role;
    m40_tensor_desc desc;     /* contiguous */
    uint64_t bytes;
    const void *init;         /* host data copied in at alloc (weights, state) */
    m40_tensor *bound;        /* caller's storage, or NULL */
    bool is_output;
    int producer;             /* node index, or -1 */
    /* planner results */
    int region;               /* m40_region, or -1 when bound */
    uint64_t offset, size;
    int first, last;          /* live steps (arena tensors) */
    int storage;              /* arena storage slot, or -1 */
    int shares_with;          /* tensor whose storage it reuses, or -1 */
    /* executor */
    m40_tensor *t;            /* view into a region, or == bound */
} m40__gtensor;

typedef struct m40__gnode {
    m40_node_desc d;          /* d.name points at `name` */
    char *name;
    uint64_t workspace;       /* bytes of scratch the op needs on the GPU */
    m40_conv_engine conv_engine; /* CONV2D: m40_graph_set_conv_engine (DEFAULT: inherit) */
    m40__conv_sel sel;        /* CONV2D: the engine settled at alloc (lib/conv_engine/) */
} m40__gnode;

enum m40__gstate { M40__G_BUILD = 0, M40__G_PLANNED = 1, M40__G_ALLOCATED = 2 };

struct m40_graph {
    m40_ctx *ctx;
    m40__gtensor *tensors;
    int ntensors, cap_tensors;
    m40__gnode *nodes;
    int nnodes, cap_nodes;
    int state;
    int *order;               /* step -> node, after planning */
    m40_plan_info info;
    m40_tensor *region[M40_REGION_COUNT]; /* allocated regions */
    void *cuda_graph, *cuda_exec; /* cudaGraph_t, cudaGraphExec_t */
    int cuda_nodes;               /* the captured CUDA graph's nodes (launches, copies) */
    m40_conv_engine conv_engine;  /* the conv nodes' default (DEFAULT: the context's) */
    int64_t attn_keys;            /* m40_graph_set_attention_keys (0: no bound) */
    unsigned checks;              /* m40_graph_set_check; the last finding (check.c) */
    m40_check_report check_found;
};

/* Shape rule of one node: checks inputs (dtype, shape, params) and writes
** the output desc and the op's workspace bytes. Records errors on ctx. */
m40_status m40__graph_infer(m40_graph *g, const m40_node_desc *nd,
                            m40_tensor_desc *out, uint64_t *workspace);
/* The op rule's view of node nd of g (shapes.c); fn prefixes messages. */
struct m40__op_call;
void m40__graph_node_call(m40_graph *g, const m40_node_desc *nd, const char *fn,
                          struct m40__op_call *c);
/* Frees the executor's tensor views and region allocations (not bound tensors). */
void m40__graph_free_views(m40_graph *g);
/* Runs every node in order through the eager op entry points (exec.c). */
m40_status m40__graph_run_nodes(m40_graph *g);
/* After step `step` ran: checks its node's output per g->checks (check.c). */
m40_status m40__graph_check_node(m40_graph *g, int step);
/* The eager conv descriptor of a CONV2D node (exec.c). */
m40_conv2d_desc m40__graph_conv_desc(const m40_node_desc *nd);
/* Settles every conv node's engine: cuDNN plans, AUTO timing (conv_tune.c;
** at m40_graph_alloc, after the workspace is reserved, and by m40_graph_tune). */
m40_status m40__graph_conv_settle(m40_graph *g);

/* m40_model_graph that also counts parameters (models.c); a transformer's
** blocks [l0, l1) only (a pipeline stage; 0/0: the whole model); tp > 1:
** rank 0 of that many tensor-parallel ranks (every rank holds as much). */
struct m40_model_desc;
m40_status m40__model_graph(m40_ctx *ctx, const struct m40_model_desc *d, int phase, int l0,
                            int l1, int tp, m40_graph **out, uint64_t *params);

uint64_t m40__align_up(uint64_t x, uint64_t a);
/* "1.23 GiB" / "512.0 MiB" / "12 KiB" / "100 B" into buf. */
const char *m40__fmt_bytes(uint64_t b, char *buf, size_t n);

#ifdef M40_HAVE_CUDA
/* lib/graph/capture_cuda.c */
m40_status m40__graph_cuda_capture(m40_graph *g);
m40_status m40__graph_cuda_replay(m40_graph *g);
void m40__graph_cuda_drop(m40_graph *g);
#endif

#endif
