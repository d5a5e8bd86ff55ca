/* A host emulation of attn_prefill64 (kernels/attention_prefill64.cuh, the
** BM-64 prefill kernel), for machines without a GPU: the kernel's source as
** it is in the tree (bench/attention/prefill64_emu.sh copies it and extracts
** kernels/attention.cu's `struct Params`), each block run as 128 std::threads with
** a barrier for __syncthreads and per-warp barriers for __shfl_xor_sync,
** against a double reference at 1e-5 relative. It checks the index math,
** the chunk pipeline's synchronization points and the masking; not the
** compiler, not timing, not sm_52 rounding (exp2f here is the host's).
** Cases: f16 and f32 caches, D 128 / 80 (vector loads) / 100 (the scalar
** path), padding rows (pos -1), slots, several query and key tiles, and
** ChatGLM2's 32 heads over 2 groups; key shares (splits 2..4) folded as
** attn_combine_rows does. Mutating the mask (`> lim + 1`) fails. */
#include "emu_common.h" /* bench/attention/: CUDA names on the host, the double reference */
typedef int cudaStream_t;
constexpr int NT = 128;
constexpr int ATT_FUSED_HALF_MAX = 64;
#include "params.inc" /* prefill64_emu.sh: from kernels/attention.cu */
#include "kernel.inc"

template <typename TC>
static double run(int B, int T, int H, int G, int D, int S, int L, int start, bool pad, bool swap_slots,
                  int splits = 1) {
    std::vector<float> q((size_t)B * T * H * D), y((size_t)B * T * H * D, -7.0f);
    std::vector<TC> kc((size_t)S * L * G * D), vc((size_t)S * L * G * D);
    std::vector<double> kd, vd;
    srand(B * 1000 + T * 7 + D);
    for (auto &x : q) x = ((float)rand() / RAND_MAX * 2 - 1) * 2;
    fill_cache(kc, kd);
    fill_cache(vc, vd);
    std::vector<int32_t> pos((size_t)B * T), slot(B);
    for (int b = 0; b < B; b++) {
        slot[b] = swap_slots ? (B - 1 - b) % S : b;
        for (int t = 0; t < T; t++) {
            int p = start + b * 3 + t;
            if (pad && b == 1 && t >= T - 5) p = -1;
            if (p >= L) p = L - 1;
            pos[b * T + t] = p;
        }
    }
    Params p = {};
    p.q = q.data(), p.kc = kc.data(), p.vc = vc.data(), p.pos = pos.data(), p.slot = slot.data();
    p.y = y.data();
    p.T = T, p.H = H, p.G = G, p.D = D, p.S = S, p.L = L, p.hpg = H / G;
    p.qs0 = (int64_t)T * H * D, p.qs1 = (int64_t)H * D;
    /* key shares: every (row, split) partial, then attn_combine_rows's fold
    ** (the same formula, here on the host) */
    p.splits = splits;
    const int64_t nq = (int64_t)B * T * H;
    std::vector<float> ws_ml(splits > 1 ? nq * splits * 2 : 0, NAN), ws_o(splits > 1 ? nq * splits * D : 0, NAN);
    if (splits > 1) p.ws_ml = ws_ml.data(), p.ws_o = ws_o.data();
    const float scale = 1.0f / sqrtf((float)D);
    p.qscale = scale * 1.4426950408889634f;
    p.vec = D % 8 == 0;
    p.gd = G * D;
    int64_t nrows = (int64_t)T * p.hpg;
    p.mtiles = (nrows + 63) / 64;
    int64_t nblocks = B * G * p.mtiles * splits;
    for (int64_t blk = 0; blk < nblocks; blk++) run_block(blk, 128, [=] { attn_prefill64<TC>(p); });
    if (splits > 1) fold_partials(ws_ml, ws_o, nq, splits, D, y); /* attn_combine's fold */
    return ref_err(q, kd, vd, pos, slot, y, B, T, H, G, D, L);
}

int main() {
    struct { int B, T, H, G, D, S, L, start; bool pad, swap, f16; int splits; } c[] = {
        {1, 20, 4, 2, 128, 1, 64, 0, false, false, true},
        {2, 20, 4, 2, 128, 2, 64, 0, true, true, true},
        {2, 45, 8, 2, 128, 3, 160, 30, true, true, false},
        {1, 70, 4, 2, 80, 1, 128, 0, false, false, true},
        {2, 33, 4, 4, 100, 2, 100, 10, true, false, false},
        {2, 33, 4, 4, 100, 2, 100, 10, true, false, true},
        {1, 100, 32, 2, 128, 1, 100, 0, false, false, true},
        /* key shares (splits > 1): shares past a tile's keys (empty), pads, f32, D 100 */
        {2, 45, 8, 2, 128, 3, 160, 30, true, true, false, 3},
        {1, 100, 32, 2, 128, 1, 100, 0, false, false, true, 4},
        {2, 20, 4, 2, 128, 2, 64, 0, true, true, true, 2},
        {2, 33, 4, 4, 100, 2, 100, 10, true, false, true, 4},
    };
    int fails = 0;
    for (auto &k : c) {
        const int n = k.splits > 1 ? k.splits : 1;
        double e = k.f16 ? run<__half>(k.B, k.T, k.H, k.G, k.D, k.S, k.L, k.start, k.pad, k.swap, n)
                         : run<float>(k.B, k.T, k.H, k.G, k.D, k.S, k.L, k.start, k.pad, k.swap, n);
        printf("B%d T%d H%d G%d D%d L%d start%d %s splits %d: rel err %.3g %s\n", k.B, k.T, k.H, k.G,
               k.D, k.L, k.start, k.f16 ? "f16" : "f32", n, e, e < 1e-5 ? "ok" : "FAIL");
        fails += !(e < 1e-5);
    }
    return fails != 0;
}
