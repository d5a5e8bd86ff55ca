/* m40-gemv-pattern: is the batch-1 int4 GEMV's address pattern what holds
** it at ~0.5 of the copy rate on the H200 (issue 17), or is it what the
** warps do between their loads?
**
** The same int4 matrices (K 4096: ChatGLM2-6B's query_key_value 4608 rows,
** dense 4096, dense_h_to_4h 27392) read several ways, each in a CUDA graph
** of at least 10 launches (median of 7 replays, us a launch). Each launch
** reads the next of several copies of the matrix, 3x the L2 in all, so a
** small matrix comes from DRAM as it does in a decode step (session 26's
** first run replayed one 8 MB copy, which sat in L2):
**   read     the bench's plain streaming read (kernels/bench_read.cu), the
**            step's "read chain" kernel: 16 KB a block, one pass;
**   v3-like  the GEMV v3 pattern with no arithmetic: persistent blocks of 8
**            warps, warp w of block b walks row groups b + grid*(w + 8j) of
**            R = 4 consecutive rows, a lane loading the 16-byte vector
**            c*32 + lane of each of the 4 rows for all 4 chunks of K at
**            once (D = 4 at K 4096), XOR-folded; grid = SMs x 2 (the 14-16
**            warps an SM that ncu saw the real kernels get);
**   v3-like x8  the same with SMs x 8 blocks (64 warps an SM: what the
**            pattern gives with an occupancy no real GEMV has the registers for);
**   v2-like  one row group of R = 2 rows a warp, 8 warps a block, a block
**            per 16 rows (v2's grid: dense and query_key_value's kernel);
**   ring 0/2/3  v3's ring order (chunk c of the next group asked for after
**            chunk c of this one is used), 2 blocks an SM, with an XOR a word,
**            or a LOP and an FFMA a weight (the exponent-zero decode's floor;
**            ~2.4 sm_52 instructions a weight with the loads and moves), or
**            one FFMA more (~3.4), no staging or reduction (ring_kernel);
**   ring 0/2 R2x4  the same ring at R 2 rows a group and 4 blocks an SM (32
**            warps an SM, <= 64 registers): what more warps buy at the
**            same instructions a weight;
**   R2x4 +xs  ring 2 R2x4 with x (K floats) staged in shared memory by
**            each block and read back for every weight (ringx_kernel);
**   R2x4 +xs+red  and each row's sum reduced over the warp and stored;
**   R2x4 +ez+red  and x staged as v2's exponent-zero decode stages it (a lane
**            vector's max and sum by shuffles, x scaled per bit position, the
**            vector's factors) with its per-vector epilogue;
**   chosen   the library's GEMV for the matrix (m40k_quant_gemv_choose).
** Every pattern read folds each 32-bit word it reads exactly once into one
** XOR, checked against the host's XOR of the matrix (exit 1 if any differs:
** a pattern that skips or repeats rows is caught; the fold is cleared, the
** launch made and the fold read back in order on the bench's stream).
** Reading: v3-like near read means the pattern is not the cause (the
** warps' work between loads is); v3-like near chosen means it is, and the
** x8 row says whether more warps would fix it. The ring rows then say how
** much of the gap the arithmetic alone makes at the GEMV's occupancy.
** Usage: m40-gemv-pattern   (exit 77 without a GPU) */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "../graph_time.cuh"
#include "bench_read.h"
#include "quant.h"
#include "quant_gemv_common.cuh" /* v2's exponent-zero staging helpers */

namespace {

constexpr int kK = 4096, kSeq = 10, kReps = 7, kWarpsB = 8;
constexpr int kVpr = kK / 32; /* 16-byte vectors a row (int4: 32 weights each) */
constexpr int kCh = kVpr / 32; /* chunks of 32 vectors a row: 4 */

/* R rows a group; persistent (PERS) blocks walk groups b + grid*(w + 8j),
** else one group a warp (grid = groups / 8). */
template <int R, bool PERS>
__global__ void __launch_bounds__(kWarpsB * 32, 1) pattern_kernel(const uint4 *__restrict__ w, int N,
                                                             unsigned *fold) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ngroups = (N + R - 1) / R;
    unsigned acc = 0;
    int g = PERS ? (int)blockIdx.x + (int)gridDim.x * warp : (int)blockIdx.x * kWarpsB + warp;
    const int gstride = PERS ? (int)gridDim.x * kWarpsB : ngroups;
    for (; g < ngroups; g += gstride) {
        uint4 v[kCh][R];
#pragma unroll
        for (int c = 0; c < kCh; c++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int row = g * R + r;
                v[c][r] = row < N ? __ldg(w + (int64_t)row * kVpr + c * 32 + lane) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
        for (int c = 0; c < kCh; c++)
#pragma unroll
            for (int r = 0; r < R; r++) acc ^= v[c][r].x ^ v[c][r].y ^ v[c][r].z ^ v[c][r].w;
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) acc ^= __shfl_xor_sync(0xFFFFFFFFu, acc, o);
    if (lane == 0) atomicXor(fold, acc);
}

/* v3's ring with arithmetic (at most 128 registers: 2 blocks an SM, the 16
** warps an SM the library's GEMVs get): R 4 rows a group, persistent; chunk c of the
** next group is asked for right after chunk c of this one is used (D 4 at K
** 4096, as v3), and each weight costs OPS instructions: OPS 0 an XOR a
** word (the pure read in this order, checked like pattern_kernel), 2 the
** exponent-zero decode's floor (one LOP, one FFMA a weight), 3 one FFMA
** more. No x staging, no reduction: the loop alone, to see whether the
** arithmetic between the loads, not the addresses, is what slows the GEMV. */
template <int OPS, int R = 4, int MINB = 2> /* R 2, MINB 4: 32 warps an SM, <= 64 registers */
__global__ void __launch_bounds__(kWarpsB * 32, MINB) ring_kernel(const uint4 *__restrict__ w, int N,
                                                                  unsigned *fold) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ngroups = (N + R - 1) / R;
    const int gstride = (int)gridDim.x * kWarpsB;
    int g = (int)blockIdx.x + (int)gridDim.x * warp;
    unsigned x = 0;
    float acc[4] = {0.f, 0.f, 0.f, 0.f}, xr[4];
#pragma unroll
    for (int k = 0; k < 4; k++) xr[k] = 1.0f + 0.125f * (float)((lane + k) & 7);
    uint4 v[kCh][R];
    auto load = [&](int gg, int c) { /* N a multiple of R (main checks) */
        const uint4 *p = w + (int64_t)gg * R * kVpr + c * 32 + lane;
#pragma unroll
        for (int r = 0; r < R; r++) v[c][r] = gg < ngroups ? __ldg(p + r * kVpr) : make_uint4(0, 0, 0, 0);
    };
#pragma unroll
    for (int c = 0; c < kCh; c++) load(g, c);
    for (; g < ngroups; g += gstride) {
#pragma unroll
        for (int c = 0; c < kCh; c++) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint32_t wd[4] = {v[c][r].x, v[c][r].y, v[c][r].z, v[c][r].w};
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    if (OPS == 0) {
                        x ^= wd[q];
                    } else {
#pragma unroll
                        for (int k = 0; k < 8; k++) {
                            const float f = __int_as_float((int)(wd[q] & (0xFu << (4 * k))));
                            acc[k & 3] = fmaf(f, xr[k & 3], acc[k & 3]);
                            if (OPS >= 3) acc[(k + 1) & 3] = fmaf(f, xr[(k + 1) & 3], acc[(k + 1) & 3]);
                        }
                    }
                }
            }
            load(g + gstride, c);
        }
    }
    if (OPS == 0) {
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) x ^= __shfl_xor_sync(0xFFFFFFFFu, x, o);
        if (lane == 0) atomicXor(fold, x);
    } else if ((acc[0] + acc[1]) * (acc[2] + acc[3]) == 1.2345f) {
        atomicXor(fold, 1u); /* never, in practice: keeps the arithmetic */
    }
}

/* What a real small GEMV adds to the floor, a step at a time: ring 2 R2x4
** (the ring at R 2, 4 blocks an SM, a LOP and an FFMA a weight) with XS:
** x (K floats) staged whole in shared memory by each block after its first
** weights are asked for, behind one barrier, and read back as 2 LDS.128 a
** weight word (8 a lane vector, shared by the R rows) where the floor used
** constants in registers; and RED: each row group's R sums reduced over the
** warp (5 shuffles a row) and stored by lane 0 times the row's fp16 scale.
** What is left between these and "chosen" is the library's own: v2's grid,
** the exponent-zero staging of x (a max and a sum by shuffles a lane
** vector), its per-vector factors, and the norm where it is fused. */
template <bool XS, bool RED, bool EZS = false>
__global__ void __launch_bounds__(kWarpsB * 32, 4) ringx_kernel(const uint4 *__restrict__ w, int N,
                                                                const float *__restrict__ x,
                                                                const __half *__restrict__ sc,
                                                                float *__restrict__ y, unsigned *fold) {
    constexpr int R = 2;
    /* a lane vector's 32 floats of x at a stride of 36 (v2's padding, LS =
    ** VC + 4): an LDS.128's quarter warp then hits 8 distinct bank quads */
    constexpr int LS = 36;
    __shared__ __align__(16) float xs[XS ? kVpr * LS : 4];
    __shared__ __align__(16) float4 xe[EZS ? kVpr : 1]; /* EZS: a lane vector's factors */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ngroups = N / R; /* N a multiple of 4 (main) */
    const int gstride = (int)gridDim.x * kWarpsB;
    int g = (int)blockIdx.x + (int)gridDim.x * warp;
    uint4 v[kCh][R];
    auto load = [&](int gg, int c) {
        const uint4 *p = w + (int64_t)gg * R * kVpr + c * 32 + lane;
#pragma unroll
        for (int r = 0; r < R; r++) v[c][r] = gg < ngroups ? __ldg(p + r * kVpr) : make_uint4(0, 0, 0, 0);
    };
#pragma unroll
    for (int c = 0; c < kCh; c++) load(g, c);
    if (XS) {
        float4 t[kK / 4 / (kWarpsB * 32)];
#pragma unroll
        for (int i = 0; i < kK / 4 / (kWarpsB * 32); i++)
            t[i] = __ldg((const float4 *)x + threadIdx.x + i * kWarpsB * 32);
#pragma unroll
        for (int i = 0; i < kK / 4 / (kWarpsB * 32); i++) {
            const int f = threadIdx.x + i * kWarpsB * 32; /* float4 f: lane vector f / 8, its float4 f % 8 */
            float4 v = t[i];
            if (EZS) { /* v2's exponent-zero staging (gemv_v2_body's ez_item, its helpers), int4 */
                const int c4 = f & 7;
                float m = absmax4(v), sum = sum4(v);
#pragma unroll
                for (int o = 1; o < 8; o <<= 1) {
                    m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
                    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
                }
                const int S = ez_vec_S(m);
                ez_vec_scale4<M40_DTYPE_Q4>(v, S, c4);
                if (c4 == 0) xe[f >> 3] = ez_vec_factors<M40_DTYPE_Q4>(sum, S);
            }
            *(float4 *)&xs[(f >> 3) * LS + 4 * (f & 7)] = v;
        }
        __syncthreads();
    }
    float acc[R][2] = {{0.f, 0.f}, {0.f, 0.f}}, kept = 0.f;
    for (; g < ngroups; g += gstride) {
#pragma unroll
        for (int c = 0; c < kCh; c++) {
            float4 e = make_float4(0.f, 1.f, 1.f, 0.f);
            float accv[R][2];
            if (EZS) {
                e = xe[c * 32 + lane];
#pragma unroll
                for (int r = 0; r < R; r++) accv[r][0] = e.x, accv[r][1] = 0.f;
            }
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float xv[8];
                if (XS) {
                    const float4 a = *(const float4 *)&xs[(c * 32 + lane) * LS + 8 * q];
                    const float4 b = *(const float4 *)&xs[(c * 32 + lane) * LS + 8 * q + 4];
                    xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
                    xv[4] = b.x, xv[5] = b.y, xv[6] = b.z, xv[7] = b.w;
                } else {
#pragma unroll
                    for (int k = 0; k < 8; k++) xv[k] = 1.0f + 0.125f * (float)((lane + k) & 7);
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const uint32_t wd = q == 0 ? v[c][r].x : q == 1 ? v[c][r].y : q == 2 ? v[c][r].z : v[c][r].w;
#pragma unroll
                    for (int k = 0; k < 8; k++) {
                        const float f = __int_as_float((int)(wd & (0xFu << (4 * k))));
                        if (EZS) accv[r][k & 1] = fmaf(f, xv[k], accv[r][k & 1]);
                        else acc[r][k & 1] = fmaf(f, xv[k], acc[r][k & 1]);
                    }
                }
            }
            if (EZS) /* the vector's factors: one FMUL and one FFMA a row (v2's EZ epilogue) */
#pragma unroll
                for (int r = 0; r < R; r++) acc[r][0] = fmaf((accv[r][0] + accv[r][1]) * e.y, e.z, acc[r][0]);
            load(g + gstride, c);
        }
        if (RED) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                float s = acc[r][0] + acc[r][1];
#pragma unroll
                for (int o = 16; o >= 1; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
                if (lane == 0) y[g * R + r] = s * __half2float(sc[g * R + r]);
                acc[r][0] = acc[r][1] = 0.f;
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) kept += acc[r][0] + acc[r][1];
    if (!RED && kept == 1.2345f) atomicXor(fold, 1u); /* never, in practice: keeps the arithmetic */
}

uint32_t rng = 2026u;
uint32_t next_u32() {
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}

} // namespace

int main() {
    cudaDeviceProp pr;
    cudaStream_t st;
    if (!bench_gpu_open("m40-gemv-pattern", &pr, &st)) return 77;
    const int sms = pr.multiProcessorCount;
    const size_t l2 = pr.l2CacheSize > 0 ? (size_t)pr.l2CacheSize : (size_t)64 << 20;
    std::printf("m40-gemv-pattern on %s (cc %d.%d, %d SMs, L2 %zu MB), int4, K %d: us a launch (graph of "
                "at least %d launches over copies of the matrix adding up to 3x L2, so every launch "
                "reads from DRAM; median of %d replays)\n",
                pr.name, pr.major, pr.minor, sms, l2 >> 20, kK, kSeq, kReps);
    const int maxN = 27392;
    const size_t rowb = kK / 2, wbytes = (size_t)maxN * rowb;
    std::vector<uint32_t> hw(wbytes / 4);
    for (uint32_t &v : hw) v = next_u32();
    std::vector<float> hx(kK);
    for (float &v : hx) v = (float)((int)(next_u32() % 2001) - 1000) / 1000.0f;
    std::vector<__half> hs(maxN);
    for (__half &v : hs) v = __float2half(1.0f / 64.0f);
    /* each matrix in as many copies as make 3x L2 (at least one); the
    ** buffer holds the largest of those sets */
    const int rows[] = {4096, 4608, 27392}; /* multiples of 4: ring_kernel's groups are whole */
    auto copies = [&](size_t mb) { return (int)std::max<size_t>(1, (3 * l2 + mb - 1) / mb); };
    size_t cap = 0;
    for (int N : rows) cap = std::max(cap, (size_t)copies((size_t)N * rowb) * N * rowb);
    void *w, *sc;
    float *x, *y;
    unsigned *fold, *sink;
    if (cudaMalloc(&w, cap) || cudaMalloc(&x, kK * 4) || cudaMalloc(&y, (size_t)maxN * 4) ||
        cudaMalloc(&sc, (size_t)maxN * 2) || cudaMalloc(&fold, 4) || cudaMalloc(&sink, 4)) {
        std::printf("m40-gemv-pattern: cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(x, hx.data(), kK * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(sc, hs.data(), (size_t)maxN * 2, cudaMemcpyHostToDevice);
    cudaMemset(sink, 0, 4);
    int bad = 0;
    std::printf("%-6s %-13s %9s %9s %9s  %s\n", "rows", "kernel", "us", "GB/s", "of read", "check");
    for (int N : rows) {
        const size_t mb = (size_t)N * rowb;
        const int ncopy = copies(mb);
        const int nlaunch = std::max(kSeq, ncopy);
        for (int i = 0; i < ncopy; i++)
            if (cudaMemcpy((char *)w + i * mb, hw.data(), mb, cudaMemcpyHostToDevice) != cudaSuccess) {
                std::printf("m40-gemv-pattern: copy %d of the %d-row matrix failed\n", i, N);
                return 1;
            }
        uint32_t want = 0;
        for (size_t i = 0; i < mb / 4; i++) want ^= hw[i];
        double tread = 0;
        for (int kind = 0; kind < 13; kind++) {
            static const char *names[] = {"read", "v3-like", "v3-like x8", "v2-like", "ring 0",
                                          "ring 2", "ring 3", "ring 0 R2x4", "ring 2 R2x4",
                                          "R2x4 +xs", "R2x4 +xs+red", "R2x4 +ez+red", "chosen"};
            const unsigned g3 = (unsigned)sms * 2, g3x8 = (unsigned)sms * 8, g4 = (unsigned)sms * 4;
            const unsigned g2 = (unsigned)((N + 2 * kWarpsB - 1) / (2 * kWarpsB));
            int next = 0; /* the copy the next launch reads */
            auto launch = [&]() -> int {
                const uint4 *m = (const uint4 *)((const char *)w + (size_t)(next++ % ncopy) * mb);
                switch (kind) {
                case 0: return m40k_bench_read(st, m, mb, NULL, 0, sink);
                case 1: pattern_kernel<4, true><<<g3, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 2: pattern_kernel<4, true><<<g3x8, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 3: pattern_kernel<2, false><<<g2, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 4: ring_kernel<0><<<g3, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 5: ring_kernel<2><<<g3, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 6: ring_kernel<3><<<g3, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 7: ring_kernel<0, 2, 4><<<g4, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 8: ring_kernel<2, 2, 4><<<g4, kWarpsB * 32, 0, st>>>(m, N, fold); break;
                case 9: ringx_kernel<true, false><<<g4, kWarpsB * 32, 0, st>>>(m, N, x, (const __half *)sc, y, fold); break;
                case 10: ringx_kernel<true, true><<<g4, kWarpsB * 32, 0, st>>>(m, N, x, (const __half *)sc, y, fold); break;
                case 11: ringx_kernel<true, true, true><<<g4, kWarpsB * 32, 0, st>>>(m, N, x, (const __half *)sc, y, fold); break;
                default: {
                    m40k_qlinear_args a = {};
                    a.M = 1, a.N = N, a.K = kK, a.x = x, a.wtype = M40_DTYPE_Q4, a.w = m;
                    a.scale = sc, a.scale_f16 = 1, a.y = y;
                    m40k_qgemv_variant v = m40k_quant_gemv_choose(&a, sms);
                    return m40k_quant_gemv_variant(st, &a, sms, &v);
                }
                }
                return cudaGetLastError() != cudaSuccess;
            };
            int err = 0;
            const double t = graph_replay_us(st, nlaunch, kReps, launch, &err);
            if (kind == 0) tread = t;
            /* one more launch alone, ordered on the bench's (non-blocking)
            ** stream: its fold must be the matrix's XOR */
            char check[64] = "";
            if (((kind >= 1 && kind <= 4) || kind == 7) && !err) {
                uint32_t got = 0;
                err |= cudaMemsetAsync(fold, 0, 4, st) != cudaSuccess;
                err |= launch();
                err |= cudaMemcpyAsync(&got, fold, 4, cudaMemcpyDeviceToHost, st) != cudaSuccess;
                err |= cudaStreamSynchronize(st) != cudaSuccess;
                std::snprintf(check, sizeof check, got == want ? "every word once" : "XOR %08x != %08x", got, want);
                bad += got != want;
            }
            bad += err;
            std::printf("%-6d %-13s %9.2f %9.0f %9.3f  %s%s\n", N, names[kind], t, (double)mb / t / 1e3,
                        t > 0 ? tread / t : 0.0, check, err ? " ERROR" : "");
        }
    }
    cudaFree(w), cudaFree(x), cudaFree(y), cudaFree(sc), cudaFree(fold), cudaFree(sink);
    std::printf("%s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
