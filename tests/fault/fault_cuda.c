/* Device-side hooks of the fault-injection test (CUDA builds only; see
** fault_hooks.h). The entry points are the ones libm40's objects call (nm -u
** on build/CMakeFiles/m40_obj.dir: cudaMalloc, cudaStreamCreateWithFlags,
** cudaMemcpyAsync, cudaMemsetAsync, cudaLaunchKernel, cudaEventCreate).
** Each injected error is one the runtime can really return and that is not
** sticky, so the context must stay usable afterwards. A kernel launch
** (<<<>>> calls cudaLaunchKernel) reports its error through
** cudaGetLastError, so a failed launch leaves the error pending there, as
** the runtime does. */
#include "fault_hooks.h"

#include <cuda_runtime_api.h>

cudaError_t __real_cudaMalloc(void **p, size_t n);
cudaError_t __real_cudaFree(void *p);
cudaError_t __real_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t __real_cudaStreamDestroy(cudaStream_t s);
cudaError_t __real_cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                                   cudaStream_t st);
cudaError_t __real_cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st);
cudaError_t __real_cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm,
                                    cudaStream_t st);
cudaError_t __real_cudaEventCreate(cudaEvent_t *e);
cudaError_t __real_cudaGetLastError(void);
cudaError_t __real_cudaPeekAtLastError(void);

static volatile int pending = cudaSuccess; /* a failed launch's error */

cudaError_t __wrap_cudaMalloc(void **p, size_t n) {
    if (m40f_should_fail(M40F_DEVICE, "cudaMalloc")) return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaMalloc(p, n);
    if (e == cudaSuccess) m40f_track(M40F_DEVICE, *p);
    return e;
}

cudaError_t __wrap_cudaFree(void *p) {
    m40f_untrack(M40F_DEVICE, p);
    return __real_cudaFree(p);
}

cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    if (m40f_should_fail(M40F_DEVICE, "cudaStreamCreateWithFlags"))
        return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaStreamCreateWithFlags(s, flags);
    if (e == cudaSuccess) m40f_track(M40F_DEVICE, (const void *)*s);
    return e;
}

cudaError_t __wrap_cudaStreamDestroy(cudaStream_t s) {
    m40f_untrack(M40F_DEVICE, (const void *)s);
    return __real_cudaStreamDestroy(s);
}

cudaError_t __wrap_cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                                   cudaStream_t st) {
    if (m40f_should_fail(M40F_DEVICE, "cudaMemcpyAsync")) return cudaErrorInvalidValue;
    return __real_cudaMemcpyAsync(d, s, n, k, st);
}

cudaError_t __wrap_cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) {
    if (m40f_should_fail(M40F_DEVICE, "cudaMemsetAsync")) return cudaErrorInvalidValue;
    return __real_cudaMemsetAsync(d, v, n, st);
}

cudaError_t __wrap_cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm,
                                    cudaStream_t st) {
    if (m40f_should_fail(M40F_DEVICE, "cudaLaunchKernel")) {
        pending = cudaErrorLaunchOutOfResources;
        return cudaErrorLaunchOutOfResources;
    }
    return __real_cudaLaunchKernel(f, g, b, args, shm, st);
}

cudaError_t __wrap_cudaEventCreate(cudaEvent_t *e) {
    if (m40f_should_fail(M40F_DEVICE, "cudaEventCreate")) return cudaErrorMemoryAllocation;
    return __real_cudaEventCreate(e);
}

cudaError_t __wrap_cudaGetLastError(void) {
    cudaError_t e = __real_cudaGetLastError();
    if (e == cudaSuccess && pending != cudaSuccess) e = (cudaError_t)pending;
    pending = cudaSuccess;
    return e;
}

cudaError_t __wrap_cudaPeekAtLastError(void) {
    cudaError_t e = __real_cudaPeekAtLastError();
    return e == cudaSuccess ? (cudaError_t)pending : e;
}
