/* v4 register blocking: a 128x128 block tile (BK = 8) computed by 256
** threads, each owning an 8x8 (TM x TN) patch of C in registers. Per k a
** thread loads 8 A and 8 B values from shared memory and does 64 FMAs: 4
** FMAs per shared load instead of 0.5. Loads are still scalar, A is stored
** row-major in shared memory (As[m][k]), and one buffer means the block
** waits on global memory at every tile. M, N multiples of 128, K of 8. */
#pragma once
#include <cuda_runtime.h>

__global__ void __launch_bounds__(256) v4_regblock_kernel(int M, int N, int K, const float *A,
                                                          const float *B, float *C) {
    __shared__ float As[128][8], Bs[8][128];
    int tid = threadIdx.x, ty = tid / 16, tx = tid % 16; /* 16x16 threads */
    int bm = blockIdx.y * 128, bn = blockIdx.x * 128;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += 8) {
        for (int i = tid; i < 128 * 8; i += 256) {
            As[i / 8][i % 8] = A[(long long)(bm + i / 8) * K + k0 + i % 8];
            Bs[i / 128][i % 128] = B[(long long)(k0 + i / 128) * N + bn + i % 128];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float a[8], b[8];
#pragma unroll
            for (int i = 0; i < 8; i++) a[i] = As[ty * 8 + i][k];
#pragma unroll
            for (int j = 0; j < 8; j++) b[j] = Bs[k][tx * 8 + j];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) C[(long long)(bm + ty * 8 + i) * N + bn + tx * 8 + j] = acc[i][j];
}

static void v4_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v4_regblock_kernel<<<dim3(N / 128, M / 128), 256, 0, s>>>(M, N, K, A, B, C);
}
