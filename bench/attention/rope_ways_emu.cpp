/* A host emulation of decode v5's ways (kernels/attention.cu attn_decode_v5,
** W > 1) with the fused RoPE + append (ROPE) and splits of the keys (session
** 40; bench/attention/rope_ways_emu.sh extracts the kernel): each block run
** with the new row (p0) poisoned (NaN) just before it, so a block that reads
** the new row (or preloads it) without having written it itself gives NaN;
** every (row, split) partial must be written. rhalf 0: no rotation, so the
** reference is unrotated; no bad positions here (guards 0). */
#include "emu_common.h"
constexpr int ATT_FUSED_HALF_MAX = 64;
#include "params.inc"
#include "kernel.inc"
template <int W, int RB>
static double run(int B, int H, int G, int S, int L, int splits, const int *posv, bool poison) {
    const int D = 128, T = 1, hpg = H / G, nrows = hpg, QW = (H + 2 * G) * D;
    std::vector<float> qkv((size_t)B * QW), y((size_t)B * H * D, -7.0f), q((size_t)B * H * D);
    std::vector<__half> kc((size_t)S * L * G * D), vc((size_t)S * L * G * D);
    std::vector<double> kd, vd;
    srand(B * 1000 + L + splits);
    for (auto &x : qkv) x = h2f(f2h(((float)rand() / RAND_MAX * 2 - 1)));
    fill_cache(kc, kd);
    fill_cache(vc, vd);
    std::vector<int32_t> pos(posv, posv + B), slot(B);
    for (int b = 0; b < B; b++) slot[b] = (B - 1 - b) % S;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < H * D; i++) q[(size_t)b * H * D + i] = qkv[(size_t)b * QW + i];
        if (pos[b] < 0) continue;
        for (int g = 0; g < G; g++)
            for (int d = 0; d < D; d++) {
                size_t o = (((size_t)slot[b] * L + pos[b]) * G + g) * D + d;
                kd[o] = h2f(f2h(qkv[(size_t)b * QW + (H + g) * D + d]));
                vd[o] = h2f(f2h(qkv[(size_t)b * QW + (H + G + g) * D + d]));
            }
    }
    std::vector<float> ml((size_t)B * H * splits * 2, 12345.0f), wo((size_t)B * H * splits * D, 12345.0f);
    Params p = {};
    p.q = qkv.data(), p.kc = kc.data(), p.vc = vc.data(), p.pos = pos.data(), p.slot = slot.data();
    p.y = y.data(), p.ws_ml = ml.data(), p.ws_o = wo.data();
    p.T = T, p.H = H, p.G = G, p.D = D, p.S = S, p.L = L, p.hpg = hpg;
    p.qs0 = QW, p.qs1 = QW;
    p.splits = splits, p.skip = 0, p.mtiles = 1;
    p.qscale = 1.0f / sqrtf((float)D) * 1.4426950408889634f;
    p.vec = 1, p.gd = G * D, p.rhalf = 0, p.rpos_scale = 1.0f;
    const int nt = W * RB * 32;
    const int64_t per_bg = (nrows + RB - 1) / RB * splits;
    for (int64_t blk = 0; blk < (int64_t)B * G * per_bg; blk++) {
        if (poison)
            for (int b = 0; b < B; b++)
                if (pos[b] >= 0)
                    for (int g = 0; g < G; g++)
                        for (int d = 0; d < D; d++) {
                            size_t o = (((size_t)slot[b] * L + pos[b]) * G + g) * D + d;
                            kc[o].b = 0x7E00, vc[o].b = 0x7E00;
                        }
        run_block(blk, nt, [=] { attn_decode_v5<__half, true, W, RB>(p); });
    }
    /* every (row, split) partial written? */
    int unwritten = 0;
    if (splits > 1) {
        for (size_t i = 0; i < ml.size(); i += 2) unwritten += ml[i] == 12345.0f;
        if (unwritten) printf("  %d partials unwritten\n", unwritten);
        fold_partials(ml, wo, (int64_t)B * H, splits, D, y); /* attn_combine's fold */
    }
    double e = ref_err(q, kd, vd, pos, slot, y, B, T, H, G, D, L);
    return unwritten ? 1.0 : e;
}
int main() {
    int fails = 0;
    auto check = [&](const char *what, double e) {
        printf("%-52s rel err %.3g guards %d %s\n", what, e, guards, e < 1e-5 ? "ok" : "FAIL");
        fails += !(e < 1e-5);
    };
    const int pa[] = {300, 170}, pb[] = {0, 3}, pc[] = {256, -1}, pd[] = {1023, 4}, pe[] = {255, 129};
    check("rope ways 16x1 4 splits 300/170", run<16, 1>(2, 32, 2, 2, 700, 4, pa, true));
    check("rope ways 8x2 3 splits 0/3", run<8, 2>(2, 32, 2, 2, 400, 3, pb, true));
    check("rope ways 8x2 1 split 0/3", run<8, 2>(2, 32, 2, 2, 400, 1, pb, true));
    check("rope ways 4x8 5 splits 256/-1", run<4, 8>(2, 32, 2, 2, 400, 5, pc, true));
    check("rope ways 16x2 32 splits 255/129", run<16, 2>(2, 32, 2, 2, 512, 32, pe, true));
    check("rope ways 16x1 4 splits 1023/4", run<16, 1>(2, 32, 2, 2, 1100, 4, pd, true));
    check("rope ways 2x16 7 splits 300/170 (8 hpg)", run<2, 16>(2, 16, 2, 2, 700, 7, pa, true));
    printf("%s (%d failed)\n", fails ? "FAIL" : "all ok", fails);
    return fails != 0;
}
