/* v2 coalesced: swap the thread mapping so threadIdx.x walks N. A warp now
** reads one A element (broadcast) and 32 consecutive B elements (128 bytes,
** one transaction), and writes 128 contiguous bytes of C. Same arithmetic,
** far fewer memory transactions. */
#pragma once
#include <cuda_runtime.h>

__global__ void v2_coalesced_kernel(int M, int N, int K, const float *A, const float *B,
                                    float *C) {
    int n = blockIdx.x * 32 + threadIdx.x; /* consecutive threads: consecutive columns */
    int m = blockIdx.y * 32 + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(long long)m * K + k] * B[(long long)k * N + n];
    C[(long long)m * N + n] = acc;
}

static void v2_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v2_coalesced_kernel<<<dim3(N / 32, M / 32), dim3(32, 32), 0, s>>>(M, N, K, A, B, C);
}
