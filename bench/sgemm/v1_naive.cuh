/* v1 naive: one thread per C element, each reads a row of A and a column of
** B straight from global memory. threadIdx.x walks M, so the 32 threads of a
** warp read 32 different rows of A and write 32 different rows of C: every
** access is a separate 32-byte transaction (uncoalesced).
** C[M,N] = A[M,K]·B[K,N], row-major; M, N multiples of 32. */
#pragma once
#include <cuda_runtime.h>

__global__ void v1_naive_kernel(int M, int N, int K, const float *A, const float *B, float *C) {
    int m = blockIdx.x * 32 + threadIdx.x; /* consecutive threads: consecutive rows */
    int n = blockIdx.y * 32 + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(long long)m * K + k] * B[(long long)k * N + n];
    C[(long long)m * N + n] = acc;
}

static void v1_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v1_naive_kernel<<<dim3(M / 32, N / 32), dim3(32, 32), 0, s>>>(M, N, K, A, B, C);
}
