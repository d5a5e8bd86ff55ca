/* Shape inference of a node: the op's own rule (lib/ops/, the one the
** eager call and the executor use), plus what only a graph knows (which
** inputs must be STATE tensors). The workspace bytes are the op's planner
** figure (sm_count 0: independent of the GPU; docs/planner.md). */
#include "graph_internal.h"
#include "../ops/op.h"

#include <stdio.h>

void m40__graph_node_call(m40_graph *g, const m40_node_desc *nd, const char *fn,
                          m40__op_call *c) {
    *c = (m40__op_call){.ctx = g->ctx, .fn = fn, .nd = nd};
    for (int i = 0; i < nd->ninputs && i < M40_NODE_MAX_INPUTS; i++)
        c->in[i] = nd->inputs[i] == M40_NO_TENSOR ? NULL : &g->tensors[nd->inputs[i]].desc;
}

m40_status m40__graph_infer(m40_graph *g, const m40_node_desc *nd, m40_tensor_desc *o,
                            uint64_t *ws) {
    *ws = 0;
    const m40__op_def *def = m40__op_get(nd->op);
    if (!def)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_node: node '%s': unknown op %d",
                        nd->name, (int)nd->op);
    char fn[160];
    snprintf(fn, sizeof fn, "m40_graph_node: node '%s' (%s)", nd->name, def->name);
    m40__op_call c;
    m40__graph_node_call(g, nd, fn, &c);
    m40_status st = m40__op_infer(&c, o);
    if (st != M40_OK) return st;
    unsigned state = def->state_mask ? def->state_mask(&c) : def->state_inputs;
    for (int i = 0; i < nd->ninputs; i++)
        if ((state >> i & 1u) && c.in[i] &&
            g->tensors[nd->inputs[i]].role != M40_ROLE_STATE)
            return m40__rule_fail(&c, M40_ERR_INVALID_ARG, "input %d (%s) must be a STATE "
                                  "tensor: the op writes it", i, def->in_names[i]);
    return def->workspace ? def->workspace(&c, o, 0, ws) : M40_OK;
}
