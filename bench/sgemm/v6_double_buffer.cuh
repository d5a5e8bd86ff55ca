/* v6 double buffering: two shared-memory buffers and a register prefetch.
** The next tile's global loads are issued before the 8 k-steps on the
** current one and land in the other buffer at the end, so global latency
** hides behind 512 FMAs and there is one barrier per tile instead of two.
** Fragments are double-buffered in registers too (load k+1 while FMAs of k
** run). This is the main kernel (kernels/sgemm.cu) minus its edge handling,
** F16/layout options, two-tile loop unrolling and fused epilogue. */
#pragma once
#include <cuda_runtime.h>

__global__ void __launch_bounds__(256, 2) v6_double_buffer_kernel(int M, int N, int K,
                                                                  const float *A,
                                                                  const float *B, float *C) {
    __shared__ __align__(16) float As[2][8][132], Bs[2][8][132];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int ty = (warp >> 1) * 4 + (lane >> 3), tx = (warp & 1) * 8 + (lane & 7);
    int bm = blockIdx.y * 128, bn = blockIdx.x * 128;
    int ar = tid >> 1, ak = (tid & 1) * 4, bk = tid >> 5, bc = (tid & 31) * 4;
    const float *pa = A + (long long)(bm + ar) * K + ak;
    const float *pb = B + (long long)bk * N + bn + bc;
    float acc[8][8] = {}, a[2][8], b[2][8];

    float4 va = *(const float4 *)pa, vb = *(const float4 *)pb;
    As[0][ak + 0][ar] = va.x; As[0][ak + 1][ar] = va.y; As[0][ak + 2][ar] = va.z; As[0][ak + 3][ar] = va.w;
    *(float4 *)&Bs[0][bk][bc] = vb;
    __syncthreads();
    auto frag = [&](int slot, int buf, int k) {
        float4 a0 = *(const float4 *)&As[buf][k][ty * 4], a1 = *(const float4 *)&As[buf][k][64 + ty * 4];
        float4 b0 = *(const float4 *)&Bs[buf][k][tx * 4], b1 = *(const float4 *)&Bs[buf][k][64 + tx * 4];
        a[slot][0] = a0.x; a[slot][1] = a0.y; a[slot][2] = a0.z; a[slot][3] = a0.w;
        a[slot][4] = a1.x; a[slot][5] = a1.y; a[slot][6] = a1.z; a[slot][7] = a1.w;
        b[slot][0] = b0.x; b[slot][1] = b0.y; b[slot][2] = b0.z; b[slot][3] = b0.w;
        b[slot][4] = b1.x; b[slot][5] = b1.y; b[slot][6] = b1.z; b[slot][7] = b1.w;
    };
    frag(0, 0, 0);
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += 8) {
        bool more = k0 + 8 < K;
        if (more) { /* prefetch the next tile into registers */
            va = *(const float4 *)(pa + k0 + 8);
            vb = *(const float4 *)(pb + (long long)(k0 + 8) * N);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (k < 7) {
                frag((k + 1) & 1, buf, k + 1);
            } else if (more) { /* the other buffer is free since the last barrier */
                As[buf ^ 1][ak + 0][ar] = va.x; As[buf ^ 1][ak + 1][ar] = va.y;
                As[buf ^ 1][ak + 2][ar] = va.z; As[buf ^ 1][ak + 3][ar] = va.w;
                *(float4 *)&Bs[buf ^ 1][bk][bc] = vb;
                __syncthreads();
                frag(0, buf ^ 1, 0);
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += a[k & 1][i] * b[k & 1][j];
        }
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        float *c = C + (long long)(bm + (i / 4) * 64 + ty * 4 + i % 4) * N + bn + tx * 4;
        *(float4 *)c = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *(float4 *)(c + 64) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

static void v6_launch(int M, int N, int K, const float *A, const float *B, float *C,
                      cudaStream_t s) {
    v6_double_buffer_kernel<<<dim3(N / 128, M / 128), 256, 0, s>>>(M, N, K, A, B, C);
}
