/* CUDA events for the timers (timer.c). CUDA builds only. */
#include "measure.h"
#include "../internal.h"

#include <cuda_runtime_api.h>

m40_status m40__event_create(m40_ctx *ctx, void **ev) {
    cudaEvent_t e;
    int err = cudaSetDevice(ctx->desc.device);
    if (!err) err = cudaEventCreate(&e);
    if (err) return m40__cuda_check(ctx, err, "cudaEventCreate");
    *ev = e;
    return M40_OK;
}

m40_status m40__event_record(m40_ctx *ctx, void *ev) {
    int err = cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)ctx->stream);
    return err ? m40__cuda_check(ctx, err, "cudaEventRecord") : M40_OK;
}

m40_status m40__event_ms(m40_ctx *ctx, void *ev0, void *ev1, double *ms) {
    float f = 0;
    int err = cudaEventSynchronize((cudaEvent_t)ev1);
    if (!err) err = cudaEventElapsedTime(&f, (cudaEvent_t)ev0, (cudaEvent_t)ev1);
    if (err) return m40__cuda_check(ctx, err, "cudaEventElapsedTime");
    *ms = f;
    return M40_OK;
}

void m40__event_destroy(void *ev) {
    if (ev) cudaEventDestroy((cudaEvent_t)ev);
}
