/* attn_prefill64: causal GQA prefill, BM 64 query rows with K and V read
** in chunks (m40k_attn_prefill_variant 1; docs/attention.md, "Prefill,
** variant 1"). Not a translation unit: kernels/attention.cu includes it
** inside its anonymous namespace, after Params, NT and the guard, which it
** uses. A separate file so that attention.cu stays under ~800 lines; its
** host emulation: bench/attention/prefill64_emu.sh. */
#ifndef M40_KERNELS_ATTENTION_PREFILL64_CUH
#define M40_KERNELS_ATTENTION_PREFILL64_CUH

/* ---- prefill, variant 1: BM 64 with K and V in chunks (issue 16) ------------------
** Why: the tile kernel's QKᵀ loop (S 2×4, float4 along D) moves 24 floats
** from shared memory per 32 FMA, its P·V loop 12 per 32; shared memory
** delivers 32 floats a clock to an SM's 128 FMA lanes, so the loops are
** bound at 1.33 and 2.67 FMA per float against the 4 an SGEMM's 8×8 tile
** gets. Here BM = 64 rows × BN = 32 keys: S 4×4 per thread (2 FMA per
** float) and O 8 rows × 8 dims (4 per float): 2.67 per float over both
** loops, from 1.78. Q [64][DP+4] fp32 (33 KB) leaves 15 KB, so K comes in
** 4 chunks of 32 dims [BN][32+4] and V in 4 chunks of 8 keys [8][DP+4],
** one buffer, each chunk exactly one 8-element load per thread, issued
** one chunk ahead into registers (raw bits, converted at the store) so
** its latency hides behind the current chunk's FMAs. The softmax runs on
** the S registers (8 adjacent lanes per row, shuffles), P [BN][BM+4] is
** written once with 16-byte stores. DP 128 prefill only (splits 1).
** smem 4·(64·132 + 32·36 + 32·68 + 4·64) = 48128 B. */
template <typename TC> struct Raw8;
template <> struct Raw8<__half> {
    uint4 u;
    __device__ __forceinline__ void load(const __half *src, int n, int vec) {
        if (vec && n == 8) {
            u = *reinterpret_cast<const uint4 *>(src);
            return;
        }
        const unsigned short *h = reinterpret_cast<const unsigned short *>(src);
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned lo = 2 * k < n ? h[2 * k] : 0u, hi = 2 * k + 1 < n ? h[2 * k + 1] : 0u;
            w[k] = lo | hi << 16;
        }
        u = make_uint4(w[0], w[1], w[2], w[3]);
    }
    __device__ __forceinline__ void zero() { u = make_uint4(0u, 0u, 0u, 0u); }
    __device__ __forceinline__ void get(float *f) const { half8_to_float(u, f); }
};
template <> struct Raw8<float> {
    uint4 u[2];
    __device__ __forceinline__ void load(const float *src, int n, int vec) {
        if (vec && n == 8) {
            u[0] = reinterpret_cast<const uint4 *>(src)[0];
            u[1] = reinterpret_cast<const uint4 *>(src)[1];
            return;
        }
        unsigned w[8];
#pragma unroll
        for (int k = 0; k < 8; k++) w[k] = k < n ? __float_as_uint(src[k]) : 0u;
        u[0] = make_uint4(w[0], w[1], w[2], w[3]);
        u[1] = make_uint4(w[4], w[5], w[6], w[7]);
    }
    __device__ __forceinline__ void zero() { u[0] = u[1] = make_uint4(0u, 0u, 0u, 0u); }
    __device__ __forceinline__ void get(float *f) const {
        f[0] = __uint_as_float(u[0].x), f[1] = __uint_as_float(u[0].y);
        f[2] = __uint_as_float(u[0].z), f[3] = __uint_as_float(u[0].w);
        f[4] = __uint_as_float(u[1].x), f[5] = __uint_as_float(u[1].y);
        f[6] = __uint_as_float(u[1].z), f[7] = __uint_as_float(u[1].w);
    }
};

namespace p64 {
constexpr int DP = 128, BM = 64, BN = 32, DS = DP + 4;
constexpr int KC = 32, KCS = KC + 4, NKC = DP / KC; /* K chunks: BN keys × KC dims */
constexpr int VC = 8, NVC = BN / VC;                /* V chunks: VC keys × DP dims */
constexpr int PSTR = BM + 4;                        /* P [BN][BM+4]: 16-byte rows */
constexpr int CBUF = BN * KCS > VC * DS ? BN * KCS : VC * DS;
static_assert(BN * KC / 8 == NT && VC * DP / 8 == NT, "a chunk: one 8-element load a thread");
static_assert((BM / 4) * (BN / 4) == NT && (BM / 8) * (DP / 8) == NT, "S 4×4, O 8×8");

/* chunk c of the key tile at k0 (c < NKC: K dims [c·KC, +KC); else V keys
** [(c-NKC)·VC, +VC)): this thread's 8 elements -> r (zeros past kend / D) */
template <typename TC>
__device__ __forceinline__ void chunk_load(const Params &p, int64_t at, int left, int c,
                                           Raw8<TC> &r) {
    const int tid = threadIdx.x;
    const bool k = c < NKC;
    const TC *tile = reinterpret_cast<const TC *>(k ? p.kc : p.vc) + at; /* (s, k0, g, 0) */
    const int key = k ? tid / (KC / 8) : (c - NKC) * VC + tid / (DP / 8);
    const int d = k ? c * KC + (tid % (KC / 8)) * 8 : (tid % (DP / 8)) * 8;
    const int n = key < left ? min(8, (int)p.D - d) : 0;
    if (n > 0) r.load(tile + (key * p.gd + d), n, p.vec);
    else r.zero();
}

template <typename TC>
__device__ __forceinline__ void chunk_store(int c, const Raw8<TC> &r, float *buf) {
    const int tid = threadIdx.x;
    float f[8];
    r.get(f);
    float *w = c < NKC ? buf + (tid / (KC / 8)) * KCS + (tid % (KC / 8)) * 8
                       : buf + (tid / (DP / 8)) * DS + (tid % (DP / 8)) * 8;
    reinterpret_cast<float4 *>(w)[0] = make_float4(f[0], f[1], f[2], f[3]);
    reinterpret_cast<float4 *>(w)[1] = make_float4(f[4], f[5], f[6], f[7]);
}
} // namespace p64

template <typename TC> __global__ void __launch_bounds__(NT, 3) attn_prefill64(Params p) {
    using namespace p64;
    __shared__ __align__(16) float qs[BM * DS];
    __shared__ __align__(16) float cb[CBUF];
    __shared__ __align__(16) float ps[BN * PSTR];
    __shared__ __align__(16) float row_a[BM]; /* α per row */
    __shared__ float row_m[BM], row_l[BM];    /* running max and sum per row */
    __shared__ int row_pos[BM];

    const int tid = threadIdx.x;
    /* ((b·G + g)·nt + j)·splits + split: query tile mtiles-1-j, the last
    ** tiles first; with p.pair then tile j too (as attn_kernel); with splits
    ** > 1 (a prefill grid too small for the GPU, unpaired) the keys
    ** [lo, hi) of the tile's share `split` (split_keys), a partial out */
    int64_t bx = blockIdx.x;
    const int64_t split = bx % p.splits;
    bx /= p.splits;
    const int64_t nt = p.pair ? (p.mtiles + 1) / 2 : p.mtiles;
    const int64_t j = bx % nt;
    bx /= nt;
    const int64_t g = bx % p.G, b = bx / p.G;
    const int64_t nrows = p.T * p.hpg;
    const int npass = p.pair && 2 * j + 1 != p.mtiles ? 2 : 1;
#pragma unroll 1
    for (int pass = 0; pass < npass; pass++) {
    const int64_t mt = pass ? j : p.mtiles - 1 - j;
    if (pass) __syncthreads(); /* the first tile's shared memory is free */

    bool bad_slot;
    const int64_t s = tile_prologue<DP, BM>(p, b, g, mt, split == 0, row_pos, row_m, row_l, qs, &bad_slot);
    __syncthreads();

    int kend = 0;
    for (int r = 0; r < BM; r++) kend = max(kend, row_pos[r] + 1);
    /* this split's keys: BN-aligned shares, so a share's last tile is full
    ** (no key past hi within it) or ends at kend (past every row's pos) */
    int64_t lo64, hi64;
    split_keys<BN>(kend, p.splits, split, &lo64, &hi64);
    const int lo = (int)lo64, hi = (int)hi64;

    /* S: rows srg·4 + i, keys scg + 8k (8 adjacent lanes a row); O: rows
    ** org·8 + i, dims ocg·4 + (0..3) and DP/2 + ocg·4 + (0..3) */
    const int srg = tid / (BN / 4), scg = tid % (BN / 4);
    const int org = tid / (DP / 8), ocg = tid % (DP / 8);
    float o[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int k = 0; k < 8; k++) o[i][k] = 0.0f;

    /* the tile's first element in 64 bits, then 32-bit offsets (load_tile's reason) */
    const int64_t base = (s * p.L * p.G + g) * p.D; /* element (s, 0, g, 0) of either cache */
    Raw8<TC> nxt;
    if (lo < hi) chunk_load<TC>(p, base + (int64_t)lo * p.gd, hi - lo, 0, nxt);
    for (int k0 = lo; k0 < hi; k0 += BN) {
        const int64_t off = (int64_t)k0 * p.gd;
        const int left = hi - k0;
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int k = 0; k < 4; k++) acc[i][k] = 0.0f;
#pragma unroll 1
        for (int c = 0; c < NKC; c++) {
            __syncthreads(); /* every thread is done with the buffer */
            chunk_store<TC>(c, nxt, cb);
            if (c + 1 < NKC) chunk_load<TC>(p, base + off, left, c + 1, nxt);
            else chunk_load<TC>(p, base + off, left, NKC, nxt);
            __syncthreads();
            const float *qc = qs + c * KC;
#pragma unroll
            for (int d = 0; d < KC; d += 4) {
                float4 bv[4];
#pragma unroll
                for (int k = 0; k < 4; k++)
                    bv[k] = *reinterpret_cast<const float4 *>(cb + (scg + k * (BN / 4)) * KCS + d);
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float4 a = *reinterpret_cast<const float4 *>(qc + (srg * 4 + i) * DS + d);
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        acc[i][k] = fmaf(a.x, bv[k].x, acc[i][k]);
                        acc[i][k] = fmaf(a.y, bv[k].y, acc[i][k]);
                        acc[i][k] = fmaf(a.z, bv[k].z, acc[i][k]);
                        acc[i][k] = fmaf(a.w, bv[k].w, acc[i][k]);
                    }
                }
            }
        }
        /* online softmax on the registers: mask keys > pos, max and sum
        ** over the row's 8 lanes (xor shuffles: every lane gets the same) */
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = srg * 4 + i, lim = row_pos[r]; /* keys <= lim count */
            const float m_old = row_m[r];
            float mx = -INFINITY;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                if (k0 + scg + k * (BN / 4) > lim) acc[i][k] = -INFINITY;
                mx = fmaxf(mx, acc[i][k]);
            }
#pragma unroll
            for (int w = BN / 8; w > 0; w >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
            const float m_new = fmaxf(m_old, mx);
            const float m_safe = m_new == -INFINITY ? 0.0f : m_new; /* all masked: p = 0 */
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                acc[i][k] = exp2f(acc[i][k] - m_safe);
                sum += acc[i][k];
            }
#pragma unroll
            for (int w = BN / 8; w > 0; w >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, w);
            /* the row's 8 lanes have read row_m before one writes it (as
            ** attn_kernel: sm_70+ lanes need not run in lockstep) */
            __syncwarp();
            if (scg == 0) {
                const float a = exp2f(m_old - m_safe); /* m_old -inf: 0 (o is 0 then) */
                row_a[r] = a;
                row_l[r] = row_l[r] * a + sum;
                row_m[r] = m_new;
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++)
            *reinterpret_cast<float4 *>(ps + (scg + k * (BN / 4)) * PSTR + srg * 4) =
                make_float4(acc[0][k], acc[1][k], acc[2][k], acc[3][k]);

#pragma unroll 1
        for (int c = 0; c < NVC; c++) {
            __syncthreads(); /* the buffer is free; P and row_a are written */
            chunk_store<TC>(NKC + c, nxt, cb);
            if (c + 1 < NVC) chunk_load<TC>(p, base + off, left, NKC + c + 1, nxt);
            else if (k0 + BN < hi) /* the next tile's first K chunk */
                chunk_load<TC>(p, base + off + (int64_t)BN * p.gd, left - BN, 0, nxt);
            __syncthreads();
            if (c == 0) {
                float4 a0 = *reinterpret_cast<const float4 *>(row_a + org * 8);
                float4 a1 = *reinterpret_cast<const float4 *>(row_a + org * 8 + 4);
                const float al[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int k = 0; k < 8; k++) o[i][k] *= al[i];
            }
            const float *pc = ps + c * VC * PSTR + org * 8;
#pragma unroll
            for (int j = 0; j < VC; j++) {
                float4 v0 = *reinterpret_cast<const float4 *>(cb + j * DS + ocg * 4);
                float4 v1 = *reinterpret_cast<const float4 *>(cb + j * DS + DP / 2 + ocg * 4);
                float4 p0 = *reinterpret_cast<const float4 *>(pc + j * PSTR);
                float4 p1 = *reinterpret_cast<const float4 *>(pc + j * PSTR + 4);
                const float pr[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    o[i][0] = fmaf(pr[i], v0.x, o[i][0]);
                    o[i][1] = fmaf(pr[i], v0.y, o[i][1]);
                    o[i][2] = fmaf(pr[i], v0.z, o[i][2]);
                    o[i][3] = fmaf(pr[i], v0.w, o[i][3]);
                    o[i][4] = fmaf(pr[i], v1.x, o[i][4]);
                    o[i][5] = fmaf(pr[i], v1.y, o[i][5]);
                    o[i][6] = fmaf(pr[i], v1.z, o[i][6]);
                    o[i][7] = fmaf(pr[i], v1.w, o[i][7]);
                }
            }
        }
    }
    __syncthreads(); /* row_l final */
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int r = org * 8 + i;
        int64_t rr = mt * BM + r;
        if (rr >= nrows) continue;
        int64_t t = rr / p.hpg, h = g * p.hpg + rr % p.hpg;
        const int64_t row = (b * p.T + t) * p.H + h;
        float *dst = p.y + row * p.D;
        const float lr = row_l[r];
        float mul = lr > 0.0f ? 1.0f / lr : 0.0f; /* pos -1: a zero row */
        if (p.splits > 1) { /* the partial: out unscaled, (m, l) below */
            dst = p.ws_o + (row * p.splits + split) * p.D;
            mul = 1.0f;
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int d = (k < 4 ? 0 : DP / 2) + ocg * 4 + (k & 3);
            if (d < p.D) dst[d] = o[i][k] * mul;
        }
    }
    tile_store_ml<BM>(p, b, g, mt, split, row_m, row_l); /* every split: -inf, 0 without keys */
    } /* pass */
}

#endif
