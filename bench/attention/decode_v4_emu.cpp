/* A host emulation of attn_decode_kernel (kernels/attention.cu: decode v3,
** C = 1, and v4, C = 4 keys a lane), attn_decode_v5 (a warp a row) and
** attn_decode_v6 (a key's dims over 16 lanes, 8 or 4 rows a lane), for
** machines without a GPU: the
** kernel's source as it is in the tree (decode_v4_emu.sh extracts it), each
** block run as 64 or 128 std::threads with a barrier for __syncthreads and
** per-warp barriers for the shuffles and __syncwarp, the splits' partials
** folded on the host, against a double reference at 1e-5 relative. It
** checks the index math, the software pipeline's loads (a chunk of K and 8
** keys of V ahead), the masking and the empty-split skip; not the compiler,
** not timing, not sm_52 rounding (exp2f here is the host's). */
#include "emu_common.h" /* bench/attention/: CUDA names on the host, the double reference */
constexpr int ATT_FUSED_HALF_MAX = 64;
#include "params.inc" /* decode_v4_emu.sh: from kernels/attention.cu */
#include "kernel.inc"

/* V5: attn_decode_v5<TC> (decode v5, a warp a row) instead of attn_decode_kernel;
** FUSED (v5): its last block folds the partials (Params::cnt, v5_fold), no host fold */
static int counters_left = 0; /* fused runs whose counter words did not return to 0 */
/* V6 (4 or 8): attn_decode_v6<V6> (decode v6, V6 rows a lane) */
/* W > 1 (v5): its ways, attn_decode_v5<TC, false, W, RB>: a block per (b, g,
** RB rows) of W·RB warps folding in the block; splits > 1: that many blocks
** a (b, g, RB rows), each its split's partial, every split counted (no skip) */
template <typename TC, int DP, int RW, int C, bool V5 = false, bool FUSED = false, int V6 = 0,
          int W = 1, int RB = 16>
static double run(int B, int T, int H, int G, int D, int S, int L, int splits, const int *posv) {
    const int hpg = H / G, nrows = T * hpg;
    std::vector<float> q((size_t)B * T * H * D), y((size_t)B * T * H * D, -7.0f);
    std::vector<TC> kc((size_t)S * L * G * D), vc((size_t)S * L * G * D);
    std::vector<double> kd, vd;
    srand(B * 1000 + T * 7 + D + L);
    for (auto &x : q) x = ((float)rand() / RAND_MAX * 2 - 1) * 2;
    fill_cache(kc, kd);
    fill_cache(vc, vd);
    std::vector<int32_t> pos(posv, posv + B * T), slot(B);
    for (int b = 0; b < B; b++) slot[b] = (B - 1 - b) % S;
    std::vector<float> ml((size_t)B * T * H * splits * 2), wo((size_t)B * T * H * splits * D, 0.0f);
    for (size_t i = 0; i < ml.size(); i += 2) ml[i] = -INFINITY, ml[i + 1] = 0.0f;
    Params p = {};
    p.q = q.data(), p.kc = kc.data(), p.vc = vc.data(), p.pos = pos.data(), p.slot = slot.data();
    p.y = y.data(), p.ws_ml = ml.data(), p.ws_o = wo.data();
    p.T = T, p.H = H, p.G = G, p.D = D, p.S = S, p.L = L, p.hpg = hpg;
    p.qs0 = (int64_t)T * H * D, p.qs1 = (int64_t)H * D;
    p.splits = splits, p.skip = W > 1 ? 0 : 1, p.mtiles = 1;
    const float scale = 1.0f / sqrtf((float)D);
    p.qscale = scale * 1.4426950408889634f;
    p.vec = D % 8 == 0;
    p.gd = G * D;
    std::vector<unsigned> cnt((size_t)B * G, 0u);
    if (FUSED) p.cnt = cnt.data();
    const int nt = V6 ? 16 / V6 * V6_ST * 32 : W > 1 ? W * RB * 32 : V5 ? nrows * 32 : 16 / RW * 32;
    const int64_t per_bg = W > 1 ? (nrows + RB - 1) / RB * splits : splits;
    for (int64_t blk = 0; blk < (int64_t)B * G * per_bg; blk++) {
        run_block(blk, nt, [=] {
            if constexpr (V6 > 0) attn_decode_v6<V6>(p);
            else if (V5) attn_decode_v5<TC, false, W, RB>(p);
            else attn_decode_kernel<DP, RW, C, TC>(p);
        });
    }
    for (unsigned c : cnt) counters_left += c != 0;
    if (splits > 1 && !FUSED) fold_partials(ml, wo, (int64_t)B * T * H, splits, D, y); /* attn_combine's fold */
    (void)nrows;
    return ref_err(q, kd, vd, pos, slot, y, B, T, H, G, D, L);
}

int main() {
    int fails = 0;
    auto check = [&](const char *what, double e) {
        printf("%-52s rel err %.3g %s\n", what, e, e < 1e-5 ? "ok" : "FAIL");
        fails += !(e < 1e-5);
    };
    const int p1[] = {650, 400}, p2[] = {5, 200}, p3[] = {300, 301, -1, 90}, p4[] = {129}, p5[] = {250, 97};
    /* v5's contexts: up to its 512-key bound (each of its 16 warps a block shuffles at every
    ** 4-key step, which the host pays as barriers: ~4x v4's cost a key) */
    const int p6[] = {300, 170};
    /* ChatGLM2's shape: 32 heads over 2 groups, D 128, T 1 */
    check("v4 4 rows f16 D128 B2 L700 3 splits", run<__half, 128, 4, 4>(2, 1, 32, 2, 128, 2, 700, 3, p1));
    check("v4 8 rows f16 D128 B2 L700 3 splits", run<__half, 128, 8, 4>(2, 1, 32, 2, 128, 2, 700, 3, p1));
    check("v4 4 rows f16 D128 short ctx, 6 splits (skip)", run<__half, 128, 4, 4>(2, 1, 32, 2, 128, 2, 700, 6, p2));
    check("v4 8 rows f32 D128 B2 L700 1 split", run<float, 128, 8, 4>(2, 1, 32, 2, 128, 2, 700, 1, p1));
    check("v4 4 rows f32 D80 (DP 128) T2 pad, 2 splits", run<float, 128, 4, 4>(2, 2, 16, 2, 80, 2, 400, 2, p3));
    check("v4 4 rows f16 D64 T2 pad, 4 splits", run<__half, 64, 4, 4>(2, 2, 16, 2, 64, 2, 400, 4, p3));
    check("v4 8 rows f16 D64 T2 pad, 1 split", run<__half, 64, 8, 4>(2, 2, 16, 2, 64, 2, 400, 1, p3));
    check("v4 8 rows f16 D128 ctx 130, 64 splits", run<__half, 128, 8, 4>(1, 1, 32, 2, 128, 1, 8192 / 16, 64, p4));
    check("v3 4 rows f16 D128 B2 L700 3 splits", run<__half, 128, 4, 1>(2, 1, 32, 2, 128, 2, 700, 3, p1));
    /* decode v5 (a warp a row): one split, several, a short context's skip, T 2 with a pad row;
    ** at most 32 splits, as the library caps v5 (kernels/attention.h) */
    check("v5 f16 D128 B2 L700 ctx 300/170 1 split", run<__half, 128, 4, 1, true>(2, 1, 32, 2, 128, 2, 700, 1, p6));
    check("v5 f16 D128 B2 L700 ctx 300/170 3 splits", run<__half, 128, 4, 1, true>(2, 1, 32, 2, 128, 2, 700, 3, p6));
    check("v5 f16 D128 short ctx, 6 splits (skip)", run<__half, 128, 4, 1, true>(2, 1, 32, 2, 128, 2, 700, 6, p2));
    check("v5 f16 D128 T2 pad, 2 splits", run<__half, 128, 4, 1, true>(2, 2, 16, 2, 128, 2, 400, 2, p3));
    check("v5 f16 D128 ctx 130, 32 splits", run<__half, 128, 4, 1, true>(1, 1, 32, 2, 128, 1, 8192 / 16, 32, p4));
    /* decode v5's ways (W warps a row, folded in the block; one split): 8 ways of 2 rows, 4 of 8
    ** rows with a T 2 pad row (two row groups), 16 of 2 at a context of 130 */
    check("v5 ways 8x2 f16 D128 B2 L700 ctx 300/170", run<__half, 128, 4, 1, true, false, 0, 8, 2>(2, 1, 32, 2, 128, 2, 700, 1, p6));
    check("v5 ways 4x8 f16 D128 T2 pad", run<__half, 128, 4, 1, true, false, 0, 4, 8>(2, 2, 16, 2, 128, 2, 400, 1, p3));
    check("v5 ways 16x2 f16 D128 ctx 130", run<__half, 128, 4, 1, true, false, 0, 16, 2>(1, 1, 32, 2, 128, 1, 8192 / 16, 1, p4));
    check("v5 ways 8x1 f16 D128 T2 pad", run<__half, 128, 4, 1, true, false, 0, 8, 1>(2, 2, 16, 2, 128, 2, 400, 1, p3));
    /* the node's rule under key bounds <= 512 (session 30): 16 ways of one row, ChatGLM2's shape */
    check("v5 ways 16x1 f16 D128 B2 L700 ctx 300/170", run<__half, 128, 4, 1, true, false, 0, 16, 1>(2, 1, 32, 2, 128, 2, 700, 1, p6));
    /* T 3 at 4 heads a group: 12 rows, the second 8-row group half dead */
    const int p7[] = {200, 201, 202, 40, 41, -1};
    check("v5 ways 4x8 f16 D128 T3 dead rows", run<__half, 128, 4, 1, true, false, 0, 4, 8>(2, 3, 8, 2, 128, 2, 300, 1, p7));
    /* the ways with splits of the keys (session 40): ChatGLM2's rule shape at 4 splits, 3 splits
    ** with a T 2 pad row, dead rows in 5, and 32 splits of a 130-key context (most of them empty:
    ** their partial (-inf, 0)); then a 1K context in 4, the case the splits are for */
    check("v5 ways 16x1 f16 D128 B2 L700 ctx 300/170 4 splits", run<__half, 128, 4, 1, true, false, 0, 16, 1>(2, 1, 32, 2, 128, 2, 700, 4, p6));
    check("v5 ways 8x2 f16 D128 T2 pad 3 splits", run<__half, 128, 4, 1, true, false, 0, 8, 2>(2, 2, 16, 2, 128, 2, 400, 3, p3));
    check("v5 ways 4x8 f16 D128 T3 dead rows 5 splits", run<__half, 128, 4, 1, true, false, 0, 4, 8>(2, 3, 8, 2, 128, 2, 300, 5, p7));
    check("v5 ways 16x2 f16 D128 ctx 130 32 splits", run<__half, 128, 4, 1, true, false, 0, 16, 2>(1, 1, 32, 2, 128, 1, 8192 / 16, 32, p4));
    const int p8[] = {1023};
    check("v5 ways 16x1 f16 D128 ctx 1024 4 splits", run<__half, 128, 4, 1, true, false, 0, 16, 1>(1, 1, 32, 2, 128, 1, 1100, 4, p8));
    /* decode v6 (a key's dims over 16 lanes, 8 or 4 rows a lane) */
    check("v6 8 rows f16 D128 B2 L300 1 split", run<__half, 128, 4, 1, false, false, 8>(2, 1, 32, 2, 128, 2, 300, 1, p5));
    check("v6 8 rows f16 D128 B2 L300 3 splits", run<__half, 128, 4, 1, false, false, 8>(2, 1, 32, 2, 128, 2, 300, 3, p5));
    check("v6 4 rows f16 D128 B2 L300 3 splits", run<__half, 128, 4, 1, false, false, 4>(2, 1, 32, 2, 128, 2, 300, 3, p5));
    check("v6 8 rows f16 D128 short ctx, 6 splits (skip)", run<__half, 128, 4, 1, false, false, 8>(2, 1, 32, 2, 128, 2, 700, 6, p2));
    check("v6 4 rows f16 D128 T2 pad, 2 splits", run<__half, 128, 4, 1, false, false, 4>(2, 2, 16, 2, 128, 2, 400, 2, p3));
    check("v6 8 rows f16 D128 ctx 130, 64 splits", run<__half, 128, 4, 1, false, false, 8>(1, 1, 32, 2, 128, 1, 8192 / 16, 64, p4));
    /* decode v5 with its combine in the last block (v5_fold) */
    check("v5 fused f16 D128 B2 L700 ctx 300/170 3 splits", run<__half, 128, 4, 1, true, true>(2, 1, 32, 2, 128, 2, 700, 3, p6));
    check("v5 fused f16 D128 short ctx, 6 splits (skip)", run<__half, 128, 4, 1, true, true>(2, 1, 32, 2, 128, 2, 700, 6, p2));
    check("v5 fused f16 D128 T2 pad, 2 splits", run<__half, 128, 4, 1, true, true>(2, 2, 16, 2, 128, 2, 400, 2, p3));
    check("v5 fused f16 D128 ctx 130, 32 splits", run<__half, 128, 4, 1, true, true>(1, 1, 32, 2, 128, 1, 8192 / 16, 32, p4));
    printf("fused counters left non-zero: %d\n", counters_left);
    fails += counters_left != 0;
    printf("guard reports: %d (the pad row's pos -1 is no report)\n", guards);
    return fails != 0;
}
