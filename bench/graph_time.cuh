/* Timing inside a CUDA graph, for the bench programs that talk to the CUDA
** runtime directly (bench/attention/fence_cost.cu, bench/quant/boundary_cost.cu):
** what a launch costs inside a decode step's graph, without the host launch
** and events around each call. */
#ifndef M40_BENCH_GRAPH_TIME_CUH
#define M40_BENCH_GRAPH_TIME_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

/* `launch` (returns 0 on success) run once outside the capture (a warm-up
** that also checks it runs), then captured `count` times in one graph; the
** graph replayed once, then `reps` times under events. Returns the median
** replay / count in microseconds; *err set on any failure (then 0). */
template <class F> double graph_replay_us(cudaStream_t st, int count, int reps, F launch, int *err) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    if (launch() != 0 || cudaStreamSynchronize(st) != cudaSuccess) {
        *err = 1;
        return 0;
    }
    if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        *err = 1;
        return 0;
    }
    int bad = 0;
    for (int i = 0; i < count; i++) bad |= launch() != 0;
    if (cudaStreamEndCapture(st, &g) != cudaSuccess) {
        *err = 1;
        return 0;
    }
    if (bad || cudaGraphInstantiateWithFlags(&ge, g, 0) != cudaSuccess) {
        cudaGraphDestroy(g);
        *err = 1;
        return 0;
    }
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaGraphLaunch(ge, st);
    std::vector<float> t;
    for (int r = 0; r < reps; r++) {
        cudaEventRecord(a, st);
        cudaGraphLaunch(ge, st);
        cudaEventRecord(b, st);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    if (cudaGetLastError() != cudaSuccess) *err = 1;
    return t[reps / 2] * 1000.0 / count;
}

/* The bench programs' start: device 0's properties, stdout line-buffered
** and, when st is given, a non-blocking stream. false after printing
** "NAME: no GPU" when there is none (the program then exits 77). */
inline bool bench_gpu_open(const char *name, cudaDeviceProp *pr, cudaStream_t *st) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("%s: no GPU\n", name);
        return false;
    }
    cudaGetDeviceProperties(pr, 0);
    std::setvbuf(stdout, NULL, _IOLBF, 0);
    if (st) cudaStreamCreateWithFlags(st, cudaStreamNonBlocking);
    return true;
}

#endif
