// A kernel compiled with the library's architectures, so that
// cudaFuncGetAttributes on it answers "does this binary have code for the
// device?" before any real op fails with "no kernel image is available".
#include <cuda_runtime.h>

__global__ void m40_doctor_probe_kernel(int *p) {
    if (p) *p = 1;
}

extern "C" int m40__doc_kernel_probe(int dev, int *binary_version, int *ptx_version) {
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) return (int)e;
    cudaFuncAttributes a;
    e = cudaFuncGetAttributes(&a, m40_doctor_probe_kernel);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // not sticky: clear it
        return (int)e;
    }
    *binary_version = a.binaryVersion;
    *ptx_version = a.ptxVersion;
    return 0;
}
