/* Quantized GEMV kernel v2 (kernels/quant_gemv.cu says when it runs): x
** staged per K-chunk behind two barriers, one 16-byte weight vector per row
** prefetched one chunk ahead; fp16 weights, and int8/int4 where v3 does not
** take the shape. Template and launcher only; instances live in the .cu
** files that launch them. */
#ifndef M40_KERNELS_QUANT_GEMV_V2_CUH
#define M40_KERNELS_QUANT_GEMV_V2_CUH

#include "quant_gemv_common.cuh"

namespace {

/* The fast kernel. B = batch rows (1..8), R = rows per warp, GROUPED =
** group scales, 1 f32 or 2 f16 (load_gscale; 0: per-row scales, or none
** for F16). NORM (int8/int4,
** staged x): x is rmsnorm(x)·nw (m40k_qlinear_args): each chunk's staging
** multiplies x by nw and sums x² per batch row; after the last chunk the
** block has the whole row's sum, and 1/sqrt(mean + eps) multiplies the
** accumulators (the norm is one scalar a row), as v3's NORM does. */
/* P (batch 1): chunks of weights in flight. 1: one chunk ahead (two
** buffers); P > 1: a ring of P buffers, all issued before x is staged and
** refilled P chunks ahead, so P - 1 loads are in flight while a chunk is
** computed (int4 at K 4096: all of a warp's rows at once). A small GEMV
** (qkv, dense: ~9 us for ~9 MB on the H200) waited one DRAM round trip a
** chunk at P = 1. */
/* WHOLE (int8/int4, K <= kV2WholeK): x for all of K staged once, every
** float4 of it loaded before any is stored, behind one barrier, and the
** chunk loop runs without barriers; else each chunk's x behind two
** barriers, one L2 round trip a chunk (4 at K 4096 for int4, 8 for int8). */
constexpr int kV2WholeK = 4096;
/* KS (batch 1, WHOLE, P = 1): each row's K in KS slices over KS warps of
** the block (chunks slice, slice + KS, ...), their sums added through
** shared memory at the end: 8 / KS row groups a block, each warp's chain
** of instructions 1 / KS as long. */
/* EZ (int8/int4, batch 1, KS = 1; P > 1 only with x staged whole): the "exponent-zero" decode of
** v3 (the comment above pow2f; quant_gemv_common.cuh) in v2's loop. v2's
** own decode costs a PRMT and an FADD a weight on top of the FFMA; EZ one
** AND (int4, plus a PRMT a word). What v3 needs from the staging of x --
** x times 2^(149 - bit position - S), and the offset's sum -- is done here
** per lane vector (the 8 int4 / 4 int8 float4 of x one lane reads for one
** vector of weights, staged by consecutive threads of one warp): their
** max |x| and sum by shuffles, so no block-wide max and no extra barrier;
** S is the vector's own, and its 2^S multiplies the vector's partial sum
** (as a group scale would: one FMUL and one FFMA a row and vector, so
** group scales cost that too, not an FMUL a weight). With x staged whole
** it also takes a ring of P chunks of weights in flight. xe holds, per
** vector, (-OFF 2^-S sum x, 2^(S/2), 2^(S - S/2)): S reaches 152, past a
** float's 2^127, hence two factors. NW: warps a block (8; 16 at R = 1
** with EZ staged whole: the same 16 rows a block, twice the warps). */
/* PASS (with WHOLE; batch 1, P 1 or 4, KS 1): any K, x staged kV2WholeK columns
** at a time ("passes"), the next pass's x loaded into registers while this
** pass's chunks are computed, so a pass costs two barriers and no exposed
** round trip for x, where the chunked staging costs two barriers and an L2
** round trip every chunk (int4 at K 13696: 14 chunks against 4 passes).
** The chunk loop inside a pass has no barrier. v2's own decode, or EZ: each
** pass's lane vectors scaled as they are staged (xe holds a pass's chunks,
** slot c % NCW), the per-vector work once a pass as with x staged whole.
** P 4: the weights in a ring of four chunks, three in flight while one is
** computed (one chunk ahead keeps 1 KB a warp in flight: at dense_4h_to_h's
** 256 blocks, 16 warps and 16 KB an SM, about what an H100's copy rate
** needs at ~0.7 us of DRAM latency and less than an H200's). */
/* The body takes its block index bx and a hook: hook() runs after the
** block's first weights are asked for (P > 1: the whole ring) and before x
** is loaded -- a chained launch waits there for the phase that writes x
** (bench/quant/boundary_cost.cu). XC: x (and res) loaded through L2
** (ld.global.cg), for an x written earlier in the same launch (the
** read-only path may not be used there). */
template <int WT, int B, int R, int GROUPED, bool NORM = false, bool WHOLE = false, int P = 1, int KS = 1,
          bool EZ = false, int NW = kWarps, bool PASS = false, bool XC = false, bool DB = false, class Hook>
__device__ __forceinline__ void gemv_v2_body(const m40k_qlinear_args &a, int bx, Hook hook) {
    constexpr int NT = NW * 32; /* threads a block */
    constexpr int VC = Fmt<WT>::VC;   /* columns per lane-vector */
    constexpr int KC = 32 * VC;        /* columns per chunk */
    constexpr int LS = VC + 4;         /* padded floats per lane in xs */
    constexpr int XS = 32 * LS;        /* floats per batch row in xs */
    constexpr int NCW = WHOLE ? kV2WholeK / KC : 1; /* chunks a pass (xs holds NB passes) */
    static_assert(!DB || PASS, "double-buffered x: passes only");
    constexpr int NB = DB ? 2 : 1; /* DB: pass p in buffer p % 2, one barrier a pass */
    static_assert(!DB || 2 * NCW * (B * XS * 4 + (EZ ? 32 * 16 : 0)) <= 47 * 1024,
                  "double-buffered x: xs and xe within 48 KB of static shared memory (not int8 with EZ)");
    static_assert(!WHOLE || (WT != M40_DTYPE_F16 && kV2WholeK % KC == 0), "whole: int8/int4");
    static_assert(!PASS || (WHOLE && KS == 1 && B == 1 && (P == 1 || (P == 4 && NCW % P == 0))),
                  "passes: whole staging, batch 1; a ring of 4 a multiple of the pass");
    /* XG: fp16 weights at batch <= 2 read x straight from global memory (L1
    ** hits), with no barrier in the loop: +2-9% on the H200. For int8/int4
    ** (2-4x more weights per byte, so 2-4x more x reads per byte) it was
    ** 1.2-2x slower there, so they, and larger batches, stage x[:, chunk] in
    ** shared memory (bench/NOTES.md, runs 1 and 2). */
    constexpr bool XG = WT == M40_DTYPE_F16 && B <= 2;
    static_assert(!(NORM && XG), "the norm rides on the staging of x");
    __shared__ __align__(16) float xs[XG ? 4 : NB * NCW * B * XS]; /* x[chunk][b][chunk cols], padded */
    __shared__ float wss[NORM ? NW * B : 1];        /* NORM: each warp's sums of x² */
    static_assert(!EZ || (WT != M40_DTYPE_F16 && B == 1 && KS == 1 && (P == 1 || WHOLE)), "EZ: int8/int4, batch 1");
    __shared__ __align__(16) float4 xe[EZ ? NB * NCW * 32 : 1]; /* EZ: per chunk and lane vector (see above) */
    float ss[B];                                         /* NORM: this thread's sums of x² */
#pragma unroll
    for (int b = 0; b < B; b++) ss[b] = 0.0f;

    static_assert(KS == 1 || (WHOLE && P == 1 && B == 1 && NW % KS == 0), "K slices: whole x, batch 1");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int slice = KS > 1 ? warp % KS : 0; /* this warp's K slice */
    const int K = a.K;
    const int row0 = (bx * (NW / KS) + warp / KS) * R;
    const int64_t rowvecs = (int64_t)K / VC;            /* uint4 per row */
    const uint4 *wv = (const uint4 *)a.w;
    const bool sf16 = a.scale_f16 != 0;

    /* Rows past N re-read the last row (no branch in the loop); not stored. */
    const uint4 *wr[R];
    int64_t sbase[R]; /* index of the row's first scale */
    const int64_t ng = GROUPED ? (K + a.group - 1) / a.group : 1;
#pragma unroll
    for (int r = 0; r < R; r++) {
        int row = group_row<R>(a, row0, r);
        wr[r] = wv + (int64_t)row * rowvecs;
        sbase[r] = (int64_t)row * ng;
    }
    const int gshift = GROUPED ? __ffs(a.group) - 1 : 0; /* group is a power of two */
    const int glast = (int)ng - 1;

    float acc[R][B];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int b = 0; b < B; b++) acc[r][b] = 0.0f;

    const int nchunks = (K + KC - 1) / KC;
    const int nvec = (int)rowvecs;
    uint4 wcur[R], wnext[R];
    const uint4 zero4 = make_uint4(0, 0, 0, 0);
    /* Past the end of a row the prefetch re-reads the row's last vector
    ** instead of branching: those columns meet x = 0 in xs (staged as zeros
    ** past K), and dequantized weights are finite, so they add nothing. */
    const int vlast = nvec - 1;
    /* chunk c's weights (this lane's 16 bytes of each row) */
    auto load_w = [&](uint4 *w, int c) {
        const int vn = c * 32 + lane;
#pragma unroll
        for (int r = 0; r < R; r++) w[r] = __ldg(wr[r] + min(vn, vlast));
    };
    if (KS > 1) load_w(wcur, slice);
    else
#pragma unroll
        for (int r = 0; r < R; r++) wcur[r] = lane < nvec ? __ldg(wr[r] + lane) : zero4;
    /* P > 1: the ring's other chunks, issued before x is staged */
    uint4 ring[P > 1 ? P : 1][R];
#pragma unroll
    for (int j = 1; j < P; j++) load_w(ring[j], j);
    if constexpr (P > 1) /* its chunk 0 is wcur's */
#pragma unroll
        for (int r = 0; r < R; r++) ring[0][r] = wcur[r];
    /* PRE: the epilogue's operands (row scales, bias, res) asked for here,
    ** behind the first weights, so that their DRAM round trips (they left
    ** L2 a step ago) overlap the loop instead of following it: the old
    ** epilogue waited on two dependent misses after the loop, the scales
    ** then the bias (session 36; on an H100 int4 and int4g128 +1.1-1.3% a
    ** token, int8 +0.6-0.7%). The cost is registers: sm_52 ptxas gives the
    ** batch-1 instances 2-9 more (int8's qkv 62 -> 71 and its passes 77 ->
    ** 84, one block an SM fewer, still several times the bytes in flight
    ** an M40's 288 GB/s needs); asked for after the staging they cost more.
    ** Not for fp16 (-0.3% a token: its GEMVs read x from global memory,
    ** with no staging to hide the loads behind), nor with XC (res may be
    ** written by x's phase). */
    constexpr bool PRE = WT != M40_DTYPE_F16 && !XC && R * B <= 4;
    constexpr bool RSC = !GROUPED && WT != M40_DTYPE_F16; /* per-row scales */
    float psc[R], pre[R][B];
    if constexpr (PRE) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = group_row<R>(a, row0, r); /* past N: the last row, not stored */
            psc[r] = RSC ? load_scale(a.scale, row, sf16) : 1.0f;
            const float bias = a.bias ? __ldg(a.bias + row) : 0.0f;
#pragma unroll
            for (int b = 0; b < B; b++) pre[r][b] = bias + (a.res ? a.res[(int64_t)b * a.N + row] : 0.0f);
        }
    }
    hook(); /* a chained launch: x's phase is done */

    /* EZ: item v (x·nw, float4 c4 of chunk slot cs) pre-scaled in place; the
    ** first of its lane vector's G threads writes the vector's xe. Every lane
    ** of the warp calls it (the shuffles). */
    auto ez_item = [&](float4 &v, int c4, int cs) {
        constexpr int G = VC / 4;
        /* the vector's max |x| (NaN drops out: it stays NaN in the products)
        ** and sum over its G threads */
        float m = absmax4(v), sum = sum4(v);
#pragma unroll
        for (int o = 1; o < G; o <<= 1) {
            m = fmaxf(m, __shfl_xor_sync(kFull, m, o));
            sum += __shfl_xor_sync(kFull, sum, o);
        }
        const int S = ez_vec_S(m);
        ez_vec_scale4<WT>(v, S, c4);
        if (c4 % G == 0) xe[cs * 32 + c4 / G] = ez_vec_factors<WT>(sum, S);
    };
    /* x staging: NF float4 per chunk, a compile-time number of rounds */
    constexpr int F4 = KC / 4, NF = B * F4, ITERS = (NF + NT - 1) / NT;
    /* WHOLE: x's columns kb .. kb + kV2WholeK - 1 (kb 0 without PASS): xload
    ** asks for them into registers, xstore applies the norm's weights (and
    ** sums x²), EZ's scaling, and writes them to xs. This thread's items:
    ** per chunk when a chunk's items fill the block (int4: compile-time
    ** chunks, fewer registers), else over the whole span (int8: 128 a chunk) */
    constexpr bool BYC = NF % NT == 0;
    constexpr int K4 = kV2WholeK / 4, TOT = B * K4, WI = WHOLE ? (TOT + NT - 1) / NT : 1;
    static_assert(!WHOLE || !BYC || WI == NCW * ITERS, "whole staging: items");
    static_assert(!WHOLE || !EZ || BYC || TOT % NT == 0, "EZ: every lane stages");
    float4 xv[WI], nv[NORM ? WI : 1];
    /* VT (EZ staged whole, batch 1): thread t stages float4 WI·t .. WI·t +
    ** WI - 1 of x, so a lane vector's G = VC / 4 float4 sit in TPV = G / WI
    ** consecutive threads and most of its max and sum is taken in registers:
    ** one shuffle level for int4 at 8 warps (TPV 2), none for int8 (TPV 1),
    ** where one float4 a thread took log2(G) levels of two dependent
    ** shuffles each, all before the block's barrier (session 26: that
    ** staging was the whole of the small GEMVs' ~1 us over a floor GEMV,
    ** bench/NOTES.md). The sums add in the same tree, so x, S and the
    ** offsets are bit for bit those of the per-float4 form. */
    constexpr int G = VC / 4;
    constexpr bool VT = EZ && WHOLE && B == 1 && TOT % NT == 0 && WI % 2 == 0 && WI <= G && G % WI == 0;
    constexpr int TPV = VT ? G / WI : 1;
    auto xload = [&](int kb) {
#pragma unroll
        for (int it = 0; it < WI; it++) {
            const int f = VT ? WI * (int)threadIdx.x + it : threadIdx.x + (BYC ? it % ITERS : it) * NT;
            const int b = VT ? 0 : BYC ? f / F4 : f / K4;
            const int col = kb + (VT ? 4 * f : BYC ? (it / ITERS) * KC + 4 * (f % F4) : 4 * (f % K4));
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f), w = v;
            if ((BYC || TOT % NT == 0 || f < TOT) && col < K) {
                v = ldx4<XC>(a.x + (int64_t)b * K + col);
                if (NORM) w = load_nw4(a, col);
            }
            xv[it] = v;
            if (NORM) nv[it] = w;
        }
    };
    auto xstore = [&](int xb) { /* xb: the buffer's first chunk slot (DB: NCW for pass 1, 3, ...) */
        if constexpr (VT) { /* this thread's WI float4, one lane vector's share */
            const int f0 = WI * (int)threadIdx.x, c = xb + (4 * f0) / KC, c40 = f0 % F4;
            float4 v[WI];
            float m[WI], sum[WI];
#pragma unroll
            for (int it = 0; it < WI; it++) {
                v[it] = xv[it];
                if (NORM) {
                    const float4 w = nv[it];
                    ss[0] = sumsq4(v[it], ss[0]);
                    v[it].x *= w.x, v[it].y *= w.y, v[it].z *= w.z, v[it].w *= w.w;
                }
                m[it] = absmax4(v[it]), sum[it] = sum4(v[it]);
            }
            /* ez_item's butterfly tree: pairs, then pairs of pairs, ... */
#pragma unroll
            for (int w = 1; w < WI; w <<= 1)
#pragma unroll
                for (int it = 0; it + w < WI; it += 2 * w) m[it] = fmaxf(m[it], m[it + w]), sum[it] += sum[it + w];
            float mm = m[0], su = sum[0];
#pragma unroll
            for (int o = 1; o < TPV; o <<= 1) {
                mm = fmaxf(mm, __shfl_xor_sync(kFull, mm, o));
                su += __shfl_xor_sync(kFull, su, o);
            }
            const int S = ez_vec_S(mm);
#pragma unroll
            for (int it = 0; it < WI; it++) { /* c4 = c40 + it, and c40 is even: ez_pos's bits of it */
                ez_vec_scale4<WT>(v[it], S, it);
                const int c4 = c40 + it;
                *(float4 *)&xs[c * XS + (c4 / G) * LS + 4 * (c4 % G)] = v[it];
            }
            if (TPV == 1 || (threadIdx.x & (TPV - 1)) == 0) xe[c * 32 + c40 / G] = ez_vec_factors<WT>(su, S);
        } else {
#pragma unroll
            for (int it = 0; it < WI; it++) {
                const int f = threadIdx.x + (BYC ? it % ITERS : it) * NT;
                const int b = BYC ? f / F4 : f / K4, col = BYC ? (it / ITERS) * KC + 4 * (f % F4) : 4 * (f % K4);
                if (!BYC && TOT % NT != 0 && f >= TOT) continue;
                float4 v = xv[it];
                if (NORM) {
                    const float4 w = nv[it];
#pragma unroll
                    for (int bb = 0; bb < B; bb++)
                        if (bb == b) ss[bb] = sumsq4(v, ss[bb]);
                    v.x *= w.x, v.y *= w.y, v.z *= w.z, v.w *= w.w;
                }
                const int c = xb + (BYC ? it / ITERS : col / KC), c4 = BYC ? f % F4 : (col % KC) / 4;
                if constexpr (EZ) ez_item(v, c4, c * B + b);
                *(float4 *)&xs[(c * B + b) * XS + (c4 / (VC / 4)) * LS + 4 * (c4 % (VC / 4))] = v;
            }
        }
    };
    if constexpr (WHOLE) { /* all of x (PASS: its first pass): the loads, then the norm and the stores */
        xload(0);
        xstore(0);
        __syncthreads();
    }
    /* chunk c's x into xs (chunked staging: two barriers a chunk) */
    auto stage = [&](int c) {
        const int kc0 = c * KC;
        if (!XG && !WHOLE && c > 0) __syncthreads(); /* everyone is done with xs */
#pragma unroll
        for (int it = 0; it < (XG || WHOLE ? 0 : ITERS); it++) {
            const int f = threadIdx.x + it * NT;
            if (NF % NT == 0 || f < NF) {
                const int b = f / F4, c4 = f % F4, col = kc0 + 4 * c4;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (col < K) v = ldx4<XC>(a.x + (int64_t)b * K + col);
                if (NORM && col < K) {
                    const float4 nw4 = load_nw4(a, col);
#pragma unroll
                    for (int bb = 0; bb < B; bb++) /* b is this item's row (a compile-time index for ss) */
                        if (bb == b) ss[bb] = sumsq4(v, ss[bb]);
                    v.x *= nw4.x, v.y *= nw4.y, v.z *= nw4.z, v.w *= nw4.w;
                }
                if constexpr (EZ) ez_item(v, c4, b);
                *(float4 *)&xs[b * XS + (c4 / (VC / 4)) * LS + 4 * (c4 % (VC / 4))] = v;
            }
        }
        if (!XG && !WHOLE) __syncthreads();
    };
    /* chunk c's slot in xs and xe with x in passes: c % NCW, in pass (c / NCW)'s buffer */
    auto xslot = [&](int c) { return DB ? c % (2 * NCW) : c % NCW; };
    /* acc += chunk c's weights · x */
    auto compute = [&](const uint4 *wcur, int c) {
        const int kc0 = c * KC;
        float gs[R];
        if constexpr (GROUPED != 0) {
            const int g = min((kc0 + lane * VC) >> gshift, glast);
#pragma unroll
            for (int r = 0; r < R; r++) gs[r] = load_gscale<GROUPED>(a.scale, sbase[r] + g);
        }
        const float *xl = xs + (WHOLE ? (PASS ? xslot(c) : c) * B * XS : 0) + lane * LS;
        const float *xg = a.x + kc0 + lane * VC; /* XG: this lane's columns of x row 0 */
        /* x[b][lane's column + off] */
        auto xv4 = [&](int b, int off) -> float4 {
            if (XG) return __ldg((const float4 *)(xg + (int64_t)b * K + off));
            return *(const float4 *)&xl[b * XS + off];
        };
        /* XG: lanes past K skip (their re-read weights would meet real x) */
        if (XG && kc0 + lane * VC >= K) {
        } else if (EZ) { /* batch 1: t = the vector's sum in units of 2^-S, from its offset term */
            const float4 e = xe[(WHOLE ? (PASS ? xslot(c) : c) : 0) * 32 + lane];
            float t[R];
#pragma unroll
            for (int r = 0; r < R; r++) t[r] = e.x;
            if (WT == M40_DTYPE_Q4) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    uint32_t wx[R];
#pragma unroll
                    for (int r = 0; r < R; r++) wx[r] = word(wcur[r], i) ^ 0x88888888u; /* u = q + 8 */
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const float4 xv = xv4(0, 8 * i + 4 * h);
#pragma unroll
                        for (int r = 0; r < R; r++) {
                            float f0, f1, f2, f3;
                            ez_q4_half(wx[r], h, f0, f1, f2, f3);
                            t[r] = fmaf(f0, xv.x, t[r]);
                            t[r] = fmaf(f1, xv.y, t[r]);
                            t[r] = fmaf(f2, xv.z, t[r]);
                            t[r] = fmaf(f3, xv.w, t[r]);
                        }
                    }
                }
            } else { /* Q8 */
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float4 xv = xv4(0, 4 * i);
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        const uint32_t w = word(wcur[r], i) ^ 0x80808080u; /* u = q + 128 */
                        t[r] = fmaf(ezf(w & 0xFFu), xv.x, t[r]);
                        t[r] = fmaf(ezf(w & 0xFF00u), xv.y, t[r]);
                        t[r] = fmaf(ezf(w & 0xFF0000u), xv.z, t[r]);
                        t[r] = fmaf(ezf(top_byte_to_2(w)), xv.w, t[r]);
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < R; r++) {
                float u = t[r] * e.y;
                if (GROUPED) u *= gscale_value<GROUPED>(gs[r]);
                acc[r][0] = fmaf(u, e.z, acc[r][0]);
            }
        } else if (WT == M40_DTYPE_Q4) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t lo[R], hi[R];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w = word(wcur[r], i) ^ 0x88888888u; /* s -> s + 8 */
                    lo[r] = w & 0x0F0F0F0Fu;         /* odd columns  */
                    hi[r] = (w >> 4) & 0x0F0F0F0Fu;  /* even columns */
                }
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float4 xv[B];
#pragma unroll
                    for (int b = 0; b < B; b++) xv[b] = xv4(b, 8 * i + 4 * h);
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        float v[4] = {byte_to_f(hi[r], 2 * h, kOffQ4), byte_to_f(lo[r], 2 * h, kOffQ4),
                                      byte_to_f(hi[r], 2 * h + 1, kOffQ4),
                                      byte_to_f(lo[r], 2 * h + 1, kOffQ4)};
                        if (GROUPED)
#pragma unroll
                            for (int j = 0; j < 4; j++) v[j] *= gscale_value<GROUPED>(gs[r]);
                        dot4<WT, B>(v, xv, acc[r]);
                    }
                }
            }
        } else if (WT == M40_DTYPE_Q8) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float4 xv[B];
#pragma unroll
                for (int b = 0; b < B; b++) xv[b] = xv4(b, 4 * i);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w = word(wcur[r], i) ^ 0x80808080u; /* s -> s + 128 */
                    float v[4] = {byte_to_f(w, 0, kOffQ8), byte_to_f(w, 1, kOffQ8),
                                  byte_to_f(w, 2, kOffQ8), byte_to_f(w, 3, kOffQ8)};
                    if (GROUPED)
#pragma unroll
                        for (int j = 0; j < 4; j++) v[j] *= gscale_value<GROUPED>(gs[r]);
                    dot4<WT, B>(v, xv, acc[r]);
                }
            }
        } else { /* F16: store fp16, compute fp32 */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 xv[B];
#pragma unroll
                for (int b = 0; b < B; b++) xv[b] = xv4(b, 4 * h);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    uint32_t w0 = word(wcur[r], 2 * h), w1 = word(wcur[r], 2 * h + 1);
                    float v[4] = {__half2float(__ushort_as_half((unsigned short)(w0 & 0xFFFFu))),
                                  __half2float(__ushort_as_half((unsigned short)(w0 >> 16))),
                                  __half2float(__ushort_as_half((unsigned short)(w1 & 0xFFFFu))),
                                  __half2float(__ushort_as_half((unsigned short)(w1 >> 16)))};
                    dot4<WT, B>(v, xv, acc[r]);
                }
            }
        }
    };
    if constexpr (PASS) { /* x in passes of NCW chunks; weights one chunk ahead (P 1) or a ring of P
                           ** (P - 1 chunks in flight while one is computed), across passes too */
        const int npass = (nchunks + NCW - 1) / NCW;
#pragma unroll 1
        for (int ps = 0; ps < npass; ps++) {
            if (!DB && ps > 0) {
                __syncthreads(); /* every warp is done with the last pass's x */
                xstore(0);
                __syncthreads();
            }
            if (ps + 1 < npass) xload((ps + 1) * kV2WholeK); /* in flight during this pass */
            if constexpr (P > 1) { /* a pass starts at a multiple of P: chunk c sits in ring[c % P] */
#pragma unroll
                for (int j = 0; j < NCW; j++) {
                    const int c = ps * NCW + j;
                    if (c < nchunks) { /* block-uniform */
                        compute(ring[j % P], c);
                        if (c + P < nchunks) load_w(ring[j % P], c + P);
                    }
                }
            } else {
                const int c1 = min(nchunks, (ps + 1) * NCW);
#pragma unroll 2
                for (int c = ps * NCW; c < c1; c++) {
                    load_w(wnext, c + 1);
                    compute(wcur, c);
#pragma unroll
                    for (int r = 0; r < R; r++) wcur[r] = wnext[r];
                }
            }
            /* DB: the next pass into the other buffer as soon as this warp
            ** is done with this pass: that buffer held pass ps - 1, which
            ** every warp finished before the last barrier; one barrier */
            if (DB && ps + 1 < npass) {
                xstore(((ps + 1) & 1) * NCW);
                __syncthreads();
            }
        }
    } else if constexpr (P <= 1) { /* one chunk ahead: two buffers, one load in flight during a chunk */
#pragma unroll 2
        for (int c = slice; c < nchunks; c += KS) {
            stage(c);
            load_w(wnext, c + KS); /* the next chunk's weights while this one is computed */
            compute(wcur, c);
#pragma unroll
            for (int r = 0; r < R; r++) wcur[r] = wnext[r];
        }
    } else { /* a ring of P chunks: P - 1 loads in flight during a chunk, all of K
             ** at the start when it holds nchunks <= P (int4, K <= 4096 at P = 4) */
#pragma unroll 1
        for (int c0 = 0; c0 < nchunks; c0 += P) {
#pragma unroll
            for (int j = 0; j < P; j++) {
                const int c = c0 + j;
                if (c < nchunks) { /* block-uniform: stage's barriers are safe */
                    stage(c);
                    compute(ring[j], c);
                    if (c + P < nchunks) load_w(ring[j], c + P);
                }
            }
        }
    }

    if (NORM) { /* the rows' sums of x² over the block, then 1/rms on the accumulators */
#pragma unroll
        for (int b = 0; b < B; b++) {
#pragma unroll
            for (int o = 16; o >= 1; o >>= 1) ss[b] += __shfl_xor_sync(kFull, ss[b], o);
            if (lane == 0) wss[warp * B + b] = ss[b];
        }
        __syncthreads();
#pragma unroll
        for (int b = 0; b < B; b++) {
            float t = wss[b];
#pragma unroll
            for (int i = 1; i < NW; i++) t += wss[i * B + b];
            const float inv = rsqrtf(t / (float)K + a.eps);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r][b] *= inv;
        }
    }

    /* per-row scales apply once, to the sums */
    if (RSC) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            float s = PRE ? psc[r] : load_scale(a.scale, group_row<R>(a, row0, r), sf16);
#pragma unroll
            for (int b = 0; b < B; b++) acc[r][b] *= s;
        }
    }

    if constexpr (KS > 1) { /* the slices' sums, lane by lane, into slice 0's warp */
        __shared__ float ksum[NW][R * B][32];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int b = 0; b < B; b++) ksum[warp][r * B + b][lane] = acc[r][b];
        __syncthreads();
        if (slice != 0) return;
#pragma unroll
        for (int k = 1; k < KS; k++)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int b = 0; b < B; b++) acc[r][b] += ksum[warp + k][r * B + b][lane];
    }
    warp_store<B, R, NoPost, XC>(acc, row0, lane, a, NoPost(), PRE ? pre : nullptr);
    /* the next node's hint, as the warp ends: late enough that this GEMV's
    ** stream does not push it out of L2 again (an M40 has 3 MB) */
    if (!XC && lane == 0) l2_hint(a, bx * NW + warp);
}

template <int WT, int B, int R, int GROUPED, bool NORM = false, bool WHOLE = false, int P = 1, int KS = 1,
          bool EZ = false, int NW = kWarps, bool PASS = false, bool DB = false>
__global__ void __launch_bounds__(NW * 32, 1)
gemv_v2_kernel(m40k_qlinear_args a) {
    gemv_v2_body<WT, B, R, GROUPED, NORM, WHOLE, P, KS, EZ, NW, PASS, false, DB>(a, (int)blockIdx.x, [] {});
}

template <int WT, int B, int R, bool NORM = false, bool WHOLE = false, int P = 1, int KS = 1, bool EZ = false,
          int NW = kWarps, bool PASS = false, bool DB = false>
cudaError_t launch_v2(cudaStream_t s, const m40k_qlinear_args &a) {
    constexpr int NT = NW * 32;
    constexpr int RPB = NW / KS * R; /* rows a block */
    dim3 grid((unsigned)((a.N + RPB - 1) / RPB));
    if (WHOLE && !PASS && a.K > kV2WholeK) return cudaErrorInvalidValue;
    if constexpr (WT != M40_DTYPE_F16) /* fp16 has no scales, so no group instance */
        if (a.group) {
            if (a.scale_f16) gemv_v2_kernel<WT, B, R, 2, NORM, WHOLE, P, KS, EZ, NW, PASS, DB><<<grid, NT, 0, s>>>(a);
            else gemv_v2_kernel<WT, B, R, 1, NORM, WHOLE, P, KS, EZ, NW, PASS, DB><<<grid, NT, 0, s>>>(a);
            return cudaGetLastError();
        }
    gemv_v2_kernel<WT, B, R, 0, NORM, WHOLE, P, KS, EZ, NW, PASS, DB><<<grid, NT, 0, s>>>(a);
    return cudaGetLastError();
}

} // namespace

#endif
