/* m40-fence-cost: what the "last block folds" pattern costs a kernel
** (the decode attention's combine inside the tile kernel, session 14's
** m40k_attn_fuse_combine, slower on the H200 for reasons ncu did not show).
**
** Each block writes a 16 x 128 partial, runs a dependent FMA chain of `work`
** steps (a stand-in for a tile's ~4,000-instruction chain), then arrives:
**   mode 0  thread 0 counts the block in with an atomicAdd, no fence (wrong
**           in general: the partial may not be visible; the floor);
**   mode 1  thread 0 __threadfence() then atomicAdd (the library's form);
**   mode 2  every thread __threadfence(), then thread 0's atomicAdd;
** the last block to arrive resets the counter and folds every block's
** partial (a read of blocks x 2048 floats through L2) into out. sm_52's
** __threadfence() is MEMBAR.GL; on sm_70 and later it is MEMBAR.SC.GPU
** (a sequentially consistent fence).
**
** Times: each case captured 20 times in one CUDA graph, replayed 5 times
** after a warm-up; the median replay / 20, in microseconds. Usage:
**   m40-fence-cost        (exit 77 without a GPU) */
#include <cuda_runtime.h>

#include "../graph_time.cuh"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr int kThreads = 128, kPart = 16 * 128;

template <int MODE>
__global__ void __launch_bounds__(kThreads) arrive_kernel(float *part, unsigned *cnt, float *out, int work) {
    __shared__ int last;
    const int tid = threadIdx.x;
    float v = (float)(blockIdx.x + tid) * 1e-3f;
    for (int i = 0; i < work; i++) v = fmaf(v, 0.999f, 1e-4f); /* the block's chain */
    for (int i = tid; i < kPart; i += kThreads) part[(size_t)blockIdx.x * kPart + i] = v + (float)i;
    if (MODE == 2) __threadfence();
    __syncthreads();
    if (tid == 0) {
        if (MODE == 1) __threadfence();
        const unsigned old = atomicAdd(cnt, 1u);
        last = old == gridDim.x - 1;
        if (last) {
            atomicExch(cnt, 0u);
            if (MODE != 0) __threadfence();
        }
    }
    __syncthreads();
    if (!last) return;
    for (int i = tid; i < kPart; i += kThreads) { /* the fold */
        float s = 0.0f;
        for (unsigned b = 0; b < gridDim.x; b++) s += __ldcg(part + (size_t)b * kPart + i);
        out[i] = s;
    }
}

/* median over 5 replays of a graph of 20 launches, per launch (µs) */
template <class F> double graph_us(cudaStream_t st, F launch) {
    int err = 0;
    const double us = graph_replay_us(st, 20, 5, [&] {
        launch();
        return (int)(cudaPeekAtLastError() != cudaSuccess);
    }, &err);
    return err ? -1.0 : us;
}

} // namespace

int main() {
    cudaDeviceProp pr;
    if (!bench_gpu_open("m40-fence-cost", &pr, nullptr)) return 77;
    const int maxb = 528;
    float *part, *out;
    unsigned *cnt;
    if (cudaMalloc(&part, (size_t)maxb * kPart * 4) || cudaMalloc(&out, kPart * 4) || cudaMalloc(&cnt, 4)) {
        std::printf("m40-fence-cost: cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(cnt, 0, 4);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    std::printf("m40-fence-cost on %s (cc %d.%d): us per launch in a graph of 20 (median of 5)\n", pr.name,
                pr.major, pr.minor);
    std::printf("%7s %6s %12s %12s %12s\n", "blocks", "work", "no fence", "fence t0", "fence all");
    static const int blocks[] = {8, 64, 528}, works[] = {0, 4000};
    int bad = 0;
    for (int bi = 0; bi < 3; bi++)
        for (int wi = 0; wi < 2; wi++) {
            const int B = blocks[bi], W = works[wi];
            const double t0 = graph_us(st, [&] { arrive_kernel<0><<<B, kThreads, 0, st>>>(part, cnt, out, W); });
            const double t1 = graph_us(st, [&] { arrive_kernel<1><<<B, kThreads, 0, st>>>(part, cnt, out, W); });
            const double t2 = graph_us(st, [&] { arrive_kernel<2><<<B, kThreads, 0, st>>>(part, cnt, out, W); });
            std::printf("%7d %6d %12.2f %12.2f %12.2f\n", B, W, t0, t1, t2);
            unsigned c = 1;
            cudaMemcpy(&c, cnt, 4, cudaMemcpyDeviceToHost);
            bad += c != 0; /* every launch's last block reset it */
        }
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess || bad) {
        std::printf("m40-fence-cost: %s, %d counters not reset\n", cudaGetErrorString(e), bad);
        return 1;
    }
    return 0;
}
