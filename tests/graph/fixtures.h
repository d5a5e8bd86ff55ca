/* Graphs the graph tests share: a small transformer layer made of the ops
** that run today, and random DAGs, each with an eager reference. */
#ifndef M40_TESTS_GRAPH_FIXTURES_H
#define M40_TESTS_GRAPH_FIXTURES_H

#include "m40/graph.h"

#include <stdint.h>

/* ---- a transformer layer (single head, GELU MLP) ------------------------
** x [T,C] -> q,k [T,D], vᵀ [D,T] -> softmax(q·kᵀ/√D) [T,T] -> ·v [T,D]
** -> ·Woᵀ [T,C] -> x2 = x + attn -> x2 + W2·gelu(W1·x2 + b1) = y [T,C];
** outputs y (f32) and y16 = f16(y). */
typedef struct fx_layer {
    int64_t T, C, D, F;
    float *x, *wq, *wk, *wv, *wo, *w1, *b1, *w2; /* host data, seeded */
} fx_layer;

/* Makes seeded host data (uniform in [-0.5, 0.5)); returns 0 on failure. */
int fx_layer_init(fx_layer *l, int64_t T, int64_t C, int64_t D, int64_t F, uint64_t seed);
void fx_layer_free(fx_layer *l);
/* Builds the layer into g (weights carry data; x is an INPUT). */
m40_status fx_layer_build(m40_graph *g, const fx_layer *l, int *x_id, int *y_id, int *y16_id);
/* The same computation with eager ops on ctx; writes y [T,C] and y16 (as
** raw f16 bits) to host memory. */
m40_status fx_layer_eager(m40_ctx *ctx, const fx_layer *l, float *y, uint16_t *y16);

/* ---- random DAGs over the ops that run -------------------------------- */
typedef struct fx_dag fx_dag;
/* A random DAG of about `nodes` nodes; rows x widths up to max_width f32.
** shuffled = add nodes in a random order over pre-declared outputs (tests
** the topological sort). */
fx_dag *fx_dag_new(uint64_t seed, int nodes, int max_width, int shuffled);
void fx_dag_free(fx_dag *d);
m40_status fx_dag_build(const fx_dag *d, m40_graph *g);
/* Runs the DAG eagerly on ctx in g's planned order and compares every
** output with g's (allocated and run) bit for bit; returns mismatches. */
int fx_dag_check_outputs(const fx_dag *d, m40_ctx *ctx, m40_graph *g);

#endif
