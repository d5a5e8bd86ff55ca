/* m40-gemv-boundary: what a kernel boundary costs the batch-1 GEMVs of a
** decode step, inside a CUDA graph (issue 17: is a persistent or chained
** GEMV kernel worth building?).
**
** The same weights are read two ways, one after the other in the same
** graph: split into the step's matrices, one launch each ("split"), and as
** one matrix of all their rows in one launch ("joined"). Same kernel
** variant, same bytes, same x; the difference over (launches - 1) is what
** one boundary costs that kernel: the launch inside the graph, the ramp
** until every SM has warps, the first round trips, the tail. The same is
** done with the bench's plain streaming read (kernels/bench_read.cu) over
** the same bytes, for a kernel that has no per-thread chain.
**
** Sets (K 4096, ChatGLM2-6B's rows): "layer" = query_key_value 4608,
** dense 4096, dense_h_to_4h 27392; "8x4096" = eight 4096-row matrices.
** Variants: the library's choice for each matrix (m40k_quant_gemv_choose:
** what the decode step runs, no norm or SwiGLU here), and GEMV v2 with x
** staged whole and the exponent-zero decode for all (the small shapes'
** kernel). Each sequence is captured 10 times in one graph and replayed 7
** times after a warm-up; the median replay / 10, in microseconds.
** Then the chain (chain_kernel below): dependent GEMVs in one launch against
** the same GEMVs as separate launches, outputs compared bit for bit
** (bench/NOTES.md, "Session 21": correct, not faster).
** Usage: m40-gemv-boundary [chain]   (chain: the chain part only; exit 77
** without a GPU, 1 if any output differs or a wait ran out) */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../graph_time.cuh"
#include "bench_read.h"
#include "quant.h"
#include "quant_gemv_v2.cuh"

namespace {

constexpr int kK = 4096, kSeq = 10, kReps = 7;

template <class F> double graph_us(cudaStream_t st, F seq, int *err) {
    return graph_replay_us(st, kSeq, kReps, seq, err);
}

uint32_t rng = 12345u;
uint32_t next_u32() {
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}

/* ---- a chained launch: NPH GEMVs in one kernel, phase p's x = phase p-1's y ----
** Blocks take a ticket (a 64-bit counter that only grows, so a graph
** replays it without a reset): ticket t of launch t / total is unit
** (t % total) of phase p. Every unit of phase p - 1 took its ticket before
** any unit of phase p did, so it is running or done: the wait cannot
** deadlock at any occupancy. A unit of phase p asks for its weights (P = 4:
** all of a warp's rows at K 4096), then waits for phase p - 1's count
** (thread 0, volatile reads, then a fence and the barrier), then loads x
** through L2 (XC) -- the previous phase's tail overlaps this phase's
** weight reads. Arrival: the barrier, thread 0's fence, one atomicAdd. */
constexpr int kMaxPh = 8;
struct Chain {
    m40k_qlinear_args ph[kMaxPh];
    int nb[kMaxPh]; /* blocks a phase */
    int nph, total;
    unsigned long long *ctr; /* [0] tickets, [1 + p] phase p's arrivals */
};
template <int WT, int P, int R>
__global__ void __launch_bounds__(kWarps * 32, 1) chain_kernel(Chain c) {
    __shared__ int s_ph, s_u;
    __shared__ unsigned long long s_launch;
    if (threadIdx.x == 0) {
        const unsigned long long t = atomicAdd(c.ctr, 1ull);
        int u = (int)(t % (unsigned long long)c.total), ph = 0;
        while (ph + 1 < c.nph && u >= c.nb[ph]) u -= c.nb[ph++];
        s_ph = ph, s_u = u, s_launch = t / (unsigned long long)c.total;
    }
    __syncthreads();
    const int ph = s_ph;
    auto wait = [&] {
        if (ph == 0) return;
        if (threadIdx.x == 0) {
            const unsigned long long want = (s_launch + 1) * (unsigned long long)c.nb[ph - 1];
            const volatile unsigned long long *d = c.ctr + ph; /* phase ph - 1's arrivals */
            /* a bounded spin: a wrong count fails the run instead of hanging it */
            for (long long i = 0; *d < want; i++)
                if (i == (1ll << 20)) {
                    atomicAdd(c.ctr + kMaxPh + 1, 1ull);
                    break;
                }
            __threadfence();
        }
        __syncthreads();
    };
    gemv_v2_body<WT, 1, R, 0, false, true, P, 1, true, kWarps, false, true>(c.ph[ph], s_u, wait);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(c.ctr + 1 + ph, 1ull);
    }
}
/* the same GEMV as its own launch (the split form of the chain) */
template <int WT, int P, int R>
__global__ void __launch_bounds__(kWarps * 32, 1) single_kernel(m40k_qlinear_args a) {
    gemv_v2_body<WT, 1, R, 0, false, true, P, 1, true, kWarps, false>(a, (int)blockIdx.x, [] {});
}

} // namespace

int main(int argc, char **argv) {
    const bool chain_only = argc > 1 && std::strcmp(argv[1], "chain") == 0;
    cudaDeviceProp pr;
    cudaStream_t st;
    if (!bench_gpu_open("m40-gemv-boundary", &pr, &st)) return 77;
    const int sms = pr.multiProcessorCount;
    std::printf("m40-gemv-boundary on %s (cc %d.%d, %d SMs), K %d: us per sequence (graph of %d "
                "sequences, median of %d replays)\n",
                pr.name, pr.major, pr.minor, sms, kK, kSeq, kReps);

    struct Set {
        const char *name;
        std::vector<int> rows;
    };
    const Set sets[] = {{"layer", {4608, 4096, 27392}}, {"8x4096", std::vector<int>(8, 4096)}};
    int maxrows = 0;
    for (const Set &s : sets) {
        int t = 0;
        for (int r : s.rows) t += r;
        maxrows = std::max(maxrows, t);
    }
    /* x, scales (fp16 ~1/64), weights (random bytes), two outputs */
    std::vector<float> hx(kK);
    for (float &v : hx) v = (float)((int)(next_u32() % 2001) - 1000) / 1000.0f;
    std::vector<__half> hs(maxrows);
    for (__half &v : hs) v = __float2half(0.5f / 64.0f + (float)(next_u32() % 100) / 6400.0f);
    const size_t wbytes = (size_t)maxrows * kK; /* int8; int4 uses half */
    std::vector<uint8_t> hw(wbytes);
    for (uint8_t &v : hw) v = (uint8_t)next_u32();
    float *x, *y0, *y1;
    void *w, *sc;
    unsigned *sink;
    if (cudaMalloc(&x, kK * 4) || cudaMalloc(&y0, (size_t)maxrows * 4) || cudaMalloc(&y1, (size_t)maxrows * 4) ||
        cudaMalloc(&w, wbytes) || cudaMalloc(&sc, (size_t)maxrows * 2) || cudaMalloc(&sink, 4)) {
        std::printf("m40-gemv-boundary: cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(x, hx.data(), kK * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(sc, hs.data(), (size_t)maxrows * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), wbytes, cudaMemcpyHostToDevice);
    cudaMemset(sink, 0, 4);

    int bad = 0;
    std::printf("%-6s %-7s %-8s %10s %10s %12s %10s\n", "format", "set", "kernel", "split", "joined",
                "per boundary", "GB/s split");
    for (int wt : {M40_DTYPE_Q4, M40_DTYPE_Q8}) {
        if (chain_only) break;
        const size_t rowb = wt == M40_DTYPE_Q4 ? kK / 2 : kK;
        for (const Set &s : sets) {
            int total = 0;
            for (int r : s.rows) total += r;
            const double bytes = (double)total * rowb;
            auto args = [&](int r0, int nr, float *y) {
                m40k_qlinear_args a = {};
                a.M = 1, a.N = nr, a.K = kK, a.x = x, a.wtype = wt;
                a.w = (const uint8_t *)w + (size_t)r0 * rowb;
                a.scale = (const __half *)sc + r0, a.scale_f16 = 1;
                a.y = y + r0;
                return a;
            };
            for (int kind = 0; kind < 3; kind++) { /* 0 the library's choice, 1 v2 whole EZ, 2 the read */
                const char *kname = kind == 0 ? "chosen" : kind == 1 ? "v2ez" : "read";
                m40k_qgemv_variant ez = {};
                ez.kernel = M40K_QGEMV_V2, ez.R = 2, ez.D = 1, ez.ez = 1;
                auto one = [&](int r0, int nr, float *y) -> int {
                    m40k_qlinear_args a = args(r0, nr, y);
                    if (kind == 2) return m40k_bench_read(st, a.w, (size_t)nr * rowb, NULL, 0, sink);
                    if (kind == 1) return m40k_quant_gemv_variant(st, &a, sms, &ez);
                    m40k_qgemv_variant v = m40k_quant_gemv_choose(&a, sms);
                    return m40k_quant_gemv_variant(st, &a, sms, &v);
                };
                int err = 0;
                const double ts = graph_us(st, [&] {
                    int e = 0, r0 = 0;
                    for (int r : s.rows) e |= one(r0, r, y0), r0 += r;
                    return e;
                }, &err);
                const double tj = graph_us(st, [&] { return one(0, total, y1); }, &err);
                /* the same rows give the same sums (kind 1: the same kernel; 0: where
                ** the choice differs, within float rounding) */
                double md = 0, mx = 0;
                if (kind < 2 && !err) {
                    std::vector<float> a0(total), a1(total);
                    cudaMemcpy(a0.data(), y0, (size_t)total * 4, cudaMemcpyDeviceToHost);
                    cudaMemcpy(a1.data(), y1, (size_t)total * 4, cudaMemcpyDeviceToHost);
                    for (int i = 0; i < total; i++) {
                        md = std::max(md, (double)std::fabs(a0[i] - a1[i]));
                        mx = std::max(mx, (double)std::fabs(a1[i]));
                    }
                    if (!(md <= 1e-4 * mx) || mx == 0) bad++;
                }
                if (err) bad++;
                std::printf("%-6s %-7s %-8s %10.2f %10.2f %12.2f %10.0f%s", wt == M40_DTYPE_Q4 ? "int4" : "int8",
                            s.name, kname, ts, tj, (ts - tj) / (double)(s.rows.size() - 1), bytes / ts / 1e3,
                            err ? "  ERROR" : "");
                if (kind < 2) std::printf("  max|split - joined| %.2g of %.2g", md, mx);
                std::printf("\n");
            }
        }
    }

    /* The chain: NPH dense-shaped GEMVs (N = K = 4096), phase p's x = phase
    ** p - 1's y, as NPH launches ("split") and as one chained launch, with
    ** one chunk of weights ahead (P 1) or all of a warp's (P 4), 2 or 4 rows
    ** a warp (R 4: half the blocks a phase, so the next phase's are resident
    ** while this one runs). The same
    ** arithmetic in both forms: the outputs must agree bit for bit. */
    unsigned long long *ctr;
    float *ys;
    if (cudaMalloc(&ctr, 16 * sizeof *ctr) || cudaMalloc(&ys, (size_t)kMaxPh * kK * 4 * 2)) {
        std::printf("m40-gemv-boundary: cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(ctr, 0, 16 * sizeof *ctr);
    std::printf("\nchain of N = K = %d GEMVs, y of one phase the x of the next (v2 whole EZ): us per chain\n", kK);
    std::printf("%-6s %4s %2s %2s %10s %10s %12s\n", "format", "nph", "P", "R", "split", "chained", "saved/bound.");
    for (int wt : {M40_DTYPE_Q4, M40_DTYPE_Q8}) {
        const size_t rowb = wt == M40_DTYPE_Q4 ? kK / 2 : kK;
        for (int nph : {2, 4, 8}) {
            std::vector<float> ref;
            for (int cfg = 0; cfg < 3; cfg++) {
                const int P = cfg == 0 ? 1 : 4, R = cfg == 2 ? 4 : 2;
                Chain c = {};
                c.nph = nph, c.ctr = ctr;
                for (int p = 0; p < nph; p++) {
                    m40k_qlinear_args &a = c.ph[p];
                    a.M = 1, a.N = kK, a.K = kK, a.wtype = wt;
                    a.x = p == 0 ? x : ys + (size_t)(p - 1) * kK;
                    a.w = (const uint8_t *)w + (size_t)p * kK * rowb;
                    a.scale = (const __half *)sc + (size_t)p * kK, a.scale_f16 = 1;
                    a.y = ys + (size_t)p * kK;
                    c.nb[p] = (kK + R * kWarps - 1) / (R * kWarps);
                    c.total += c.nb[p];
                }
                auto split = [&]() -> int {
                    for (int p = 0; p < nph; p++) {
                        const unsigned g = (unsigned)c.nb[p];
                        if (wt == M40_DTYPE_Q4) {
                            if (cfg == 0) single_kernel<M40_DTYPE_Q4, 1, 2><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                            else if (cfg == 1) single_kernel<M40_DTYPE_Q4, 4, 2><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                            else single_kernel<M40_DTYPE_Q4, 4, 4><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                        } else {
                            if (cfg == 0) single_kernel<M40_DTYPE_Q8, 1, 2><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                            else if (cfg == 1) single_kernel<M40_DTYPE_Q8, 4, 2><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                            else single_kernel<M40_DTYPE_Q8, 4, 4><<<g, kWarps * 32, 0, st>>>(c.ph[p]);
                        }
                    }
                    return cudaGetLastError() != cudaSuccess;
                };
                auto chained = [&]() -> int {
                    const unsigned g = (unsigned)c.total;
                    if (wt == M40_DTYPE_Q4) {
                        if (cfg == 0) chain_kernel<M40_DTYPE_Q4, 1, 2><<<g, kWarps * 32, 0, st>>>(c);
                        else if (cfg == 1) chain_kernel<M40_DTYPE_Q4, 4, 2><<<g, kWarps * 32, 0, st>>>(c);
                        else chain_kernel<M40_DTYPE_Q4, 4, 4><<<g, kWarps * 32, 0, st>>>(c);
                    } else {
                        if (cfg == 0) chain_kernel<M40_DTYPE_Q8, 1, 2><<<g, kWarps * 32, 0, st>>>(c);
                        else if (cfg == 1) chain_kernel<M40_DTYPE_Q8, 4, 2><<<g, kWarps * 32, 0, st>>>(c);
                        else chain_kernel<M40_DTYPE_Q8, 4, 4><<<g, kWarps * 32, 0, st>>>(c);
                    }
                    return cudaGetLastError() != cudaSuccess;
                };
                int err = 0;
                /* counts from zero for each chain: a launch's phase counts are
                ** (launches so far) x (its blocks a phase) */
                cudaMemset(ctr, 0, 16 * sizeof *ctr);
                std::vector<float> a0((size_t)nph * kK), a1((size_t)nph * kK);
                cudaMemset(ys, 0, (size_t)kMaxPh * kK * 4);
                const double ts = graph_us(st, split, &err);
                cudaMemcpy(a0.data(), ys, a0.size() * 4, cudaMemcpyDeviceToHost);
                cudaMemset(ys, 0xff, (size_t)kMaxPh * kK * 4); /* poison: NaN */
                const double tc = graph_us(st, chained, &err);
                cudaMemcpy(a1.data(), ys, a1.size() * 4, cudaMemcpyDeviceToHost);
                unsigned long long timeouts = 0;
                cudaMemcpy(&timeouts, ctr + kMaxPh + 1, sizeof timeouts, cudaMemcpyDeviceToHost);
                err |= timeouts != 0;
                size_t diff = 0;
                for (size_t i = 0; i < a0.size(); i++) diff += std::memcmp(&a0[i], &a1[i], 4) != 0;
                if (ref.empty()) ref = a0;
                size_t dref = 0; /* P 1 and P 4: the same sums */
                for (size_t i = 0; i < a0.size(); i++) dref += std::memcmp(&a0[i], &ref[i], 4) != 0;
                const bool fin = std::isfinite(a0.back()) && a0.back() != 0.0f;
                if (err || diff || dref || !fin) bad++;
                std::printf("%-6s %4d %2d %2d %10.2f %10.2f %12.2f  %s (%zu of %zu differ; last %.3g)\n",
                            wt == M40_DTYPE_Q4 ? "int4" : "int8", nph, P, R, ts, tc, (ts - tc) / (nph - 1),
                            err ? "ERROR" : diff || dref || !fin ? "MISMATCH" : "bitwise equal", diff + dref,
                            a0.size(), (double)a0.back());
            }
        }
    }
    cudaFree(ctr), cudaFree(ys);
    cudaFree(x), cudaFree(y0), cudaFree(y1), cudaFree(w), cudaFree(sc), cudaFree(sink);
    std::printf("%s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
