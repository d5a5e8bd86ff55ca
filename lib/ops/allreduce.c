/* ALLREDUCE: x summed over the ranks of a communicator (tensor parallelism:
** the partial outputs of a row-split linear layer). The work is the
** communicator's (lib/comm/comm.c: the host backend); this file is the op:
** the rule, and the run that hands the output tensor to m40_allreduce. */
#include "op.h"
#include "m40/comm.h"

static m40_status allreduce_rule(const m40__op_call *c, m40_tensor_desc *out) {
    m40_status st;
    if ((st = m40__rule_dtype(c, 0, M40_DTYPE_F32, M40_DTYPE_F32)) ||
        (st = m40__rule_ndim(c, 0, 1, M40_MAX_DIMS)))
        return st;
    if (!c->nd->comm)
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "no communicator (node desc comm)");
    if (c->nd->rank < 0 || c->nd->rank >= m40_comm_size(c->nd->comm))
        return m40__rule_fail(c, M40_ERR_INVALID_ARG, "rank %d of a communicator of %d",
                              c->nd->rank, m40_comm_size(c->nd->comm));
    return m40__rule_out(c, out, M40_DTYPE_F32, c->in[0]->ndim, c->in[0]->shape);
}

static m40_status allreduce_run_check(const m40__op_call *c, const m40_tensor_desc *out) {
    return m40__run_need_contiguous(c, out);
}

static m40_status allreduce_run(m40_ctx *ctx, const m40__op_run *r) {
    m40_status st;
    /* in place unless the planner gave the output its own storage */
    if (r->out->data != r->in[0]->data &&
        (st = m40_tensor_copy(ctx, r->out, r->in[0])) != M40_OK)
        return st;
    return m40_allreduce(r->nd->comm, r->nd->rank, r->out);
}

#ifdef M40_HAVE_CUDA
/* The host backend waits on the other ranks' threads: not a stream op. */
static const char *allreduce_uncapturable(const m40_node_desc *nd) {
    return nd->comm && m40_comm_get_kind(nd->comm) == M40_COMM_HOST
               ? "an all-reduce on the host communicator (run the graph uncaptured, or use NCCL)"
               : NULL;
}
#endif

const m40__op_def m40__op_allreduce = {
    .op = M40_OP_ALLREDUCE, .name = "allreduce", .inplace = 1, .min_in = 1, .max_in = 1,
    .in_names = {"x"}, .out_name = "x", .rule = allreduce_rule,
    .run_check = allreduce_run_check, .run_cpu = allreduce_run, M40__GPU(allreduce_run)
#ifdef M40_HAVE_CUDA
    .uncapturable = allreduce_uncapturable,
#endif
};
