/*
** libm40 communicators: tensor parallelism over the contexts of one process.
**
** A model split by tensor parallelism (m40_chatglm2_desc.tp_size) runs one
** graph per context (rank); each graph's ALLREDUCE nodes sum a tensor over
** every rank, in place, on one communicator. The ranks run at the same time,
** one thread each: an all-reduce returns when every rank has given its
** part.
**
** Backends:
**   M40_COMM_HOST  the host sums, in rank order (so every rank gets the same
**                  bits): CPU contexts use their tensors directly, GPU
**                  contexts copy through the host (slow, and not inside a
**                  captured CUDA graph: a correctness path, e.g. two
**                  contexts on one GPU standing in for two cards).
**   M40_COMM_NCCL  NCCL (ncclAllReduce on each context's stream) for GPU
**                  contexts on distinct devices; only in a build with NCCL
**                  (docs/multi-gpu.md says which builds still carry Maxwell
**                  code). M40_ERR_UNSUPPORTED otherwise.
**   M40_COMM_AUTO  NCCL where built and every context is a GPU on its own
**                  device; else host.
**
** Failure: a rank whose part fails (a bad tensor, a device error) marks the
** communicator broken and the others return M40_ERR_STATE instead of
** waiting for it; so does a rank that waits longer than the timeout
** (m40_comm_set_timeout, 60 s by default) for the others. A broken
** communicator refuses every later call: destroy it and make a new one.
*/
#ifndef M40_COMM_H
#define M40_COMM_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40_comm m40_comm;

typedef enum m40_comm_kind {
    M40_COMM_AUTO = 0,
    M40_COMM_HOST = 1,
    M40_COMM_NCCL = 2
} m40_comm_kind;

/* A communicator over ctxs[0..n) (rank i = ctxs[i]; 1 <= n <= 64, all CPU
** or all GPU contexts, each at most once). The contexts must outlive it.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, n out of range, a context
** twice, CPU and GPU mixed), M40_ERR_UNSUPPORTED (NCCL asked for and not
** built, or two ranks on one device), M40_ERR_OOM_HOST, and a device error
** from NCCL's set-up. Errors are recorded on ctxs[0] (when it is usable). */
M40_API m40_status m40_comm_create(m40_ctx *const *ctxs, int n, m40_comm_kind kind,
                                   m40_comm **out);
/* Frees it (NULL: no-op); no rank may be inside a call. */
M40_API void m40_comm_destroy(m40_comm *c);
M40_API int m40_comm_size(const m40_comm *c);
/* The backend in use: M40_COMM_HOST or M40_COMM_NCCL. */
M40_API m40_comm_kind m40_comm_get_kind(const m40_comm *c);
/* Breaks it: every rank inside or entering m40_allreduce returns
** M40_ERR_STATE at once. For a rank whose graph failed before its
** all-reduce, so that the others do not wait for it. */
M40_API void m40_comm_abort(m40_comm *c);
/* How long a rank waits for the others, in seconds (> 0; default 60). */
M40_API m40_status m40_comm_set_timeout(m40_comm *c, double seconds);

/* x (F32, contiguous, on rank's context, the same shape on every rank) :=
** the sum of every rank's x. Called by every rank, each from its own
** thread. Returns M40_OK, M40_ERR_INVALID_ARG (NULL, rank out of range, x
** not on rank's context), M40_ERR_DTYPE, M40_ERR_SHAPE (not contiguous, or
** another rank's x has another element count), M40_ERR_STATE (the
** communicator is broken: another rank failed or did not come in time),
** and device errors. The message is on rank's context. */
M40_API m40_status m40_allreduce(m40_comm *c, int rank, m40_tensor *x);

#ifdef __cplusplus
}
#endif
#endif /* M40_COMM_H */
