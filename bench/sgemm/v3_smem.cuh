/* v3 shared-memory tiles: a 32x32 block stages 32x32 tiles of A and B in
** shared memory, so each global element is read once per block instead of
** once per thread: global traffic drops 32x. Now each FMA needs two shared
** loads (LDS), and shared-memory bandwidth is the limit. K multiple of 32. */
#pragma once
#include <cuda_runtime.h>

__global__ void v3_smem_kernel(int M, int N, int K, const float *A, const float *B, float *C) {
    __shared__ float As[32][32], Bs[32][32];
    int tx = threadIdx.x, ty = threadIdx.y;
    int n = blockIdx.x * 32 + tx, m = blockIdx.y * 32 + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[ty][tx] = A[(long long)m * K + k0 + tx];
        Bs[ty][tx] = B[(long long)(k0 + ty) * N + n];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long long)m * N + n] = acc;
}

static void v3_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v3_smem_kernel<<<dim3(N / 32, M / 32), dim3(32, 32), 0, s>>>(M, N, K, A, B, C);
}
