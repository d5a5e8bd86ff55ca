/* v5 vectorized: 16-byte global loads (one float4 of A and of B per thread
** per tile), A stored transposed (As[k][m]) so a thread's 8 A values for one
** k are contiguous, and fragments read with LDS.128: 4 shared loads per 64
** FMAs instead of 16. Each thread's 8 rows are two runs of 4 spaced 64
** apart (likewise columns), so a warp's float4 reads are broadcasts or
** distinct banks. Rows padded to 132 floats keep the transposed stores
** conflict-free. Still one buffer: load, barrier, compute, barrier. */
#pragma once
#include <cuda_runtime.h>

__global__ void __launch_bounds__(256) v5_vectorized_kernel(int M, int N, int K,
                                                            const float *A, const float *B,
                                                            float *C) {
    __shared__ __align__(16) float As[8][132], Bs[8][132];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int ty = (warp >> 1) * 4 + (lane >> 3), tx = (warp & 1) * 8 + (lane & 7);
    int bm = blockIdx.y * 128, bn = blockIdx.x * 128;
    int ar = tid >> 1, ak = (tid & 1) * 4;  /* A: row, k run of 4 */
    int bk = tid >> 5, bc = (tid & 31) * 4; /* B: k row, column run of 4 */
    const float *pa = A + (long long)(bm + ar) * K + ak;
    const float *pb = B + (long long)bk * N + bn + bc;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += 8) {
        float4 va = *(const float4 *)(pa + k0);
        float4 vb = *(const float4 *)(pb + (long long)k0 * N);
        As[ak + 0][ar] = va.x; As[ak + 1][ar] = va.y; As[ak + 2][ar] = va.z; As[ak + 3][ar] = va.w;
        *(float4 *)&Bs[bk][bc] = vb;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float4 a0 = *(const float4 *)&As[k][ty * 4], a1 = *(const float4 *)&As[k][64 + ty * 4];
            float4 b0 = *(const float4 *)&Bs[k][tx * 4], b1 = *(const float4 *)&Bs[k][64 + tx * 4];
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        float *c = C + (long long)(bm + (i / 4) * 64 + ty * 4 + i % 4) * N + bn + tx * 4;
        *(float4 *)c = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *(float4 *)(c + 64) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

static void v5_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v5_vectorized_kernel<<<dim3(N / 128, M / 128), 256, 0, s>>>(M, N, K, A, B, C);
}
