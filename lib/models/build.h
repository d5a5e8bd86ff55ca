/* What the model builders share: a graph under construction that stops at
** the first error, so a builder reads as a straight list of declarations
** and checks its status once at the end. Public graph API only. */
#ifndef M40_MODELS_BUILD_H
#define M40_MODELS_BUILD_H

#include "../internal.h"
#include "m40/models.h"

typedef struct m40__mb {
    m40_ctx *ctx;
    m40_graph *g;
    const char *fn;     /* the public entry point, for messages */
    m40_status st;      /* first failure; later calls do nothing */
    uint64_t params;    /* elements of the weights declared with m40__mb_weight */
} m40__mb;

/* Records the first failure: m40__err with "<fn>: " in front. Returns -1
** (an invalid tensor id) so builders can `return m40__mb_fail(...)`. */
int m40__mb_fail(m40__mb *b, m40_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Declares a tensor; shape has ndim (1..4) entries. Returns its id or -1. */
int m40__mb_tensor(m40__mb *b, m40_tensor_role role, const char *name, m40_dtype dt, int ndim,
                   const int64_t *shape);

/* A WEIGHT tensor that counts `numel` toward the parameters (0: its own
** element count; a packed int4 weight counts its unpacked elements). */
int m40__mb_weight(m40__mb *b, const char *name, m40_dtype dt, int ndim, const int64_t *shape,
                   uint64_t numel);

/* Adds a node; returns its output id or -1. */
int m40__mb_node(m40__mb *b, const m40_node_desc *nd);

/* A node of op with inputs x (and y, when y >= 0). */
int m40__mb_op(m40__mb *b, m40_op op, const char *name, int x, int y);

/* Marks `id` as a graph output. */
void m40__mb_output(m40__mb *b, int id);

#endif
