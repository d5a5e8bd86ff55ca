/* m40-l2-prefetch: can the decode step's idle DRAM time (the attention at a
** short context: ~10 us a layer in which DRAM reads ~128 KB) fetch the next
** GEMVs' weights into L2, so that those GEMVs run from L2? (issue 17)
**
** A ChatGLM2-6B int4 layer's four GEMVs through the library's dispatch
** (m40k_quant_linear, the fusions the model uses: qkv with the norm, dense
** with the residual, dense_h_to_4h with the norm and the SwiGLU, 4h_to_h
** with the residual), with a stand-in for the attention between qkv and
** dense: two spin kernels of 16 blocks (ATT_US and COMB_US microseconds, the
** attention and its combine at ctx 128 on the H100, session 26's ncu). NL
** layers of distinct weights (cold: NL x ~102 MB, over 10x the L2) in one
** CUDA graph, median of 7 replays, us a layer.
** The prefetch touches, after qkv, the dense weight then the first X MB of
** dense_h_to_4h's, one of these ways:
**   side   a kernel of PB blocks on a second stream (the graph forks after
**          qkv and joins at the end of the layer): prefetch.global.L2 a line;
**   sideld the same with 16-byte loads folded into a register (a line's
**          bytes surely read);
**   extra  PB more blocks in the attention's stand-in that issue the same
**          prefetches (the attention kernel doing it itself; no fork);
**   inline the side way's kernel on the step's own stream before the
**          attention (no fork: pays if a prefetch retires before its line
**          arrives, so the kernel ends while the lines still come).
** Reading: the layer's time against "none" is what the lever is worth; X
** past what the idle time can fetch shows where it stops paying.
** Usage: m40-l2-prefetch [ATT_US COMB_US]   (exit 77 without a GPU) */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../graph_time.cuh"
#include "quant.h"

namespace {

constexpr int kH = 4096, kF = 13696, kQKV = 4608, kNL = 8, kReps = 7;

/* spin for `cycles` SM clocks in blocks [0, nspin); blocks past it prefetch
** [p, p + bytes) into L2 a 128-byte line at a time (the "extra" way) */
__global__ void spin_kernel(long long cycles, int nspin, const char *p, size_t bytes) {
    if ((int)blockIdx.x < nspin) {
        const long long t0 = clock64();
        while (clock64() - t0 < cycles) {
        }
        return;
    }
    const size_t nth = (size_t)(gridDim.x - nspin) * blockDim.x;
    for (size_t i = (size_t)(blockIdx.x - nspin) * blockDim.x + threadIdx.x; i * 128 < bytes; i += nth)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p + i * 128));
}

/* LD 0: prefetch.global.L2 a line; 1: 16-byte loads, XOR-folded */
template <int LD> __global__ void prefetch_kernel(const char *p, size_t bytes, unsigned *sink) {
    const size_t nth = (size_t)gridDim.x * blockDim.x, t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (LD == 0) {
        for (size_t i = t; i * 128 < bytes; i += nth) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + i * 128));
    } else {
        unsigned acc = 0;
        const uint4 *q = (const uint4 *)p;
        const size_t n = bytes / 16;
        size_t i = t;
        for (; i + 3 * nth < n; i += 4 * nth) { /* 4 loads in flight a thread */
            uint4 v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = __ldcg(q + i + u * nth);
#pragma unroll
            for (int u = 0; u < 4; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
        for (; i < n; i += nth) {
            const uint4 v = __ldcg(q + i);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        if (acc == 0x9e3779b9u) atomicXor(sink, acc); /* keeps the loads */
    }
}

uint32_t rng = 2027u;
uint32_t next_u32() {
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}

struct Layer {
    char *wqkv, *wd, *wh, *w4; /* int4 rows of K/2 bytes */
    __half *sqkv, *sd, *sh, *s4;
};

} // namespace

int main(int argc, char **argv) {
    cudaDeviceProp pr;
    cudaStream_t st, side;
    if (!bench_gpu_open("m40-l2-prefetch", &pr, &st)) return 77;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    const double att_us = argc > 2 ? atof(argv[1]) : 7.1, comb_us = argc > 2 ? atof(argv[2]) : 2.9;
    const int sms = pr.multiProcessorCount;
    const size_t l2 = pr.l2CacheSize > 0 ? (size_t)pr.l2CacheSize : (size_t)64 << 20;
    int clk_khz = 0;
    cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0);
    std::printf("m40-l2-prefetch on %s (cc %d.%d, %d SMs, L2 %zu MB, clock %d MHz): a ChatGLM2-6B int4 layer's "
                "GEMVs with a %.1f + %.1f us stand-in for the attention, %d cold layers a graph, median of %d "
                "replays, us a layer\n",
                pr.name, pr.major, pr.minor, sms, l2 >> 20, clk_khz / 1000, att_us, comb_us, kNL, kReps);
    const size_t nb[4] = {(size_t)kQKV * kH / 2, (size_t)kH * kH / 2, (size_t)2 * kF * kH / 2, (size_t)kH * kF / 2};
    const int nr[4] = {kQKV, kH, 2 * kF, kH};
    Layer L[kNL];
    std::vector<uint32_t> hw(nb[2] / 4);
    for (uint32_t &v : hw) v = next_u32();
    std::vector<__half> hs(2 * kF);
    for (__half &v : hs) v = __float2half(1.0f / 256.0f);
    for (int l = 0; l < kNL; l++) {
        char **w[4] = {&L[l].wqkv, &L[l].wd, &L[l].wh, &L[l].w4};
        __half **s[4] = {&L[l].sqkv, &L[l].sd, &L[l].sh, &L[l].s4};
        for (int k = 0; k < 4; k++) {
            if (cudaMalloc(w[k], nb[k]) || cudaMalloc(s[k], (size_t)nr[k] * 2) ||
                cudaMemcpy(*w[k], hw.data(), nb[k], cudaMemcpyHostToDevice) ||
                cudaMemcpy(*s[k], hs.data(), (size_t)nr[k] * 2, cudaMemcpyHostToDevice)) {
                std::printf("m40-l2-prefetch: device memory\n");
                return 1;
            }
        }
    }
    std::vector<float> hx(kF);
    for (float &v : hx) v = (float)((int)(next_u32() % 2001) - 1000) / 1000.0f;
    std::vector<__half> hn(kH, __float2half(1.0f));
    float *xa, *xb, *yq, *ya, *yh, *ws;
    __half *nw;
    unsigned *sink;
    const size_t wsb = (size_t)64 << 20;
    if (cudaMalloc(&xa, kF * 4) || cudaMalloc(&xb, kF * 4) || cudaMalloc(&yq, kQKV * 4) ||
        cudaMalloc(&ya, kH * 4) || cudaMalloc(&yh, kF * 4) || cudaMalloc(&ws, wsb) || cudaMalloc(&nw, kH * 2) ||
        cudaMalloc(&sink, 4)) {
        std::printf("m40-l2-prefetch: device memory\n");
        return 1;
    }
    cudaMemcpy(xa, hx.data(), kF * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(xb, hx.data(), kF * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(yh, hx.data(), kF * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(nw, hn.data(), kH * 2, cudaMemcpyHostToDevice);
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    const long long att_cyc = (long long)(att_us * clk_khz / 1000.0), comb_cyc = (long long)(comb_us * clk_khz / 1000.0);
    auto gemv = [&](int k, const Layer &ly, const float *x, float *y, const float *res, int norm, int glu) {
        const char *w[4] = {ly.wqkv, ly.wd, ly.wh, ly.w4};
        const __half *s[4] = {ly.sqkv, ly.sd, ly.sh, ly.s4};
        m40k_qlinear_args a = {};
        a.M = 1, a.N = nr[k], a.K = k == 3 ? kF : kH, a.x = x, a.wtype = M40_DTYPE_Q4, a.w = w[k];
        a.scale = s[k], a.scale_f16 = 1, a.y = y, a.ws = ws, a.ws_bytes = wsb, a.res = res;
        a.nw = norm ? nw : NULL, a.nw_f16 = 1, a.eps = 1e-5f, a.glu = glu ? kF : 0;
        return m40k_quant_linear(st, &a, sms);
    };
    int bad = 0;
    std::printf("%-7s %4s %9s %9s %9s\n", "way", "PB", "X MB", "us/layer", "vs none");
    double tnone = 0;
    struct Run { int way, pb; double xmb; };
    std::vector<Run> runs = {{0, 0, 0}};
    const double xs[] = {0, 8, 16, 24, 32, 40};
    for (int pb : {32, 132})
        for (double x : xs) runs.push_back({1, pb, x});
    for (double x : {0.0, 16.0, 32.0}) runs.push_back({2, 32, x});
    for (double x : {0.0, 8.0, 16.0, 24.0}) runs.push_back({3, 32, x});
    for (double x : {0.0, 16.0}) runs.push_back({4, 132, x});
    runs.push_back({0, 0, 0});
    for (const Run &r : runs) {
        int next = 0;
        auto layer = [&]() -> int {
            const Layer &ly = L[next++ % kNL];
            int e = gemv(0, ly, xa, yq, NULL, 1, 0);
            const size_t pbytes = r.way ? nb[1] + (size_t)(r.xmb * 1048576.0) : 0;
            if (r.way == 1 || r.way == 2) {
                e |= cudaEventRecord(fork, st) != cudaSuccess;
                e |= cudaStreamWaitEvent(side, fork, 0) != cudaSuccess;
                /* dense's weight then dense_h_to_4h's (allocated apart: two launches) */
                const size_t b0 = nb[1], b1 = pbytes - nb[1];
                if (r.way == 1) {
                    prefetch_kernel<0><<<r.pb, 256, 0, side>>>(ly.wd, b0, sink);
                    if (b1) prefetch_kernel<0><<<r.pb, 256, 0, side>>>(ly.wh, b1, sink);
                } else {
                    prefetch_kernel<1><<<r.pb, 256, 0, side>>>(ly.wd, b0, sink);
                    if (b1) prefetch_kernel<1><<<r.pb, 256, 0, side>>>(ly.wh, b1, sink);
                }
                e |= cudaGetLastError() != cudaSuccess;
            }
            if (r.way == 4) {
                prefetch_kernel<0><<<r.pb, 256, 0, st>>>(ly.wd, nb[1], sink);
                if (pbytes > nb[1]) prefetch_kernel<0><<<r.pb, 256, 0, st>>>(ly.wh, pbytes - nb[1], sink);
            }
            if (r.way == 3) {
                spin_kernel<<<16 + r.pb, 512, 0, st>>>(att_cyc, 16, ly.wd, nb[1]);
                if (pbytes > nb[1]) spin_kernel<<<16 + r.pb, 512, 0, st>>>(comb_cyc, 16, ly.wh, pbytes - nb[1]);
                else spin_kernel<<<16, 512, 0, st>>>(comb_cyc, 16, NULL, 0);
            } else {
                spin_kernel<<<16, 512, 0, st>>>(att_cyc, 16, NULL, 0);
                spin_kernel<<<16, 512, 0, st>>>(comb_cyc, 16, NULL, 0);
            }
            e |= cudaGetLastError() != cudaSuccess;
            e |= gemv(1, ly, ya, xb, xa, 0, 0);
            e |= gemv(2, ly, xb, yh, NULL, 1, 1);
            e |= gemv(3, ly, yh, xa, xb, 0, 0);
            if (r.way == 1 || r.way == 2) {
                e |= cudaEventRecord(join, side) != cudaSuccess;
                e |= cudaStreamWaitEvent(st, join, 0) != cudaSuccess;
            }
            return e;
        };
        int err = 0;
        const double t = graph_replay_us(st, kNL * 2, kReps, layer, &err);
        if (r.way == 0) tnone = t;
        static const char *names[] = {"none", "side", "sideld", "extra", "inline"};
        std::printf("%-7s %4d %9.1f %9.2f %9.3f%s\n", names[r.way], r.pb, r.way ? (nb[1] / 1048576.0 + r.xmb) : 0.0,
                    t, tnone > 0 ? t / tnone : 0.0, err ? " ERROR" : "");
        bad += err;
    }
    std::printf("%s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
