/* A host emulation of the quantized GEMV v3 (kernels/quant_gemv_v3.cuh
** gemv_kernel, the source as it is in the tree: gemv_emu.sh v3 extracts it),
** for machines without a GPU: each block run as 256 std::threads with a
** barrier for __syncthreads and per-warp barriers for the shuffles
** (bench/attention/emu_common.h), against a double reference over the same
** quantized weights, and a poisoned tail past y that must stay untouched. It
** checks the whole-K staging (a persistent grid smaller than the row groups,
** so warps walk several; D chunks in flight; the fused norm) and the
** segmented mode, with row scales and with group scales of each GROUPED kind
** (1 f32, 2 f16, 3 the dtype at run time: v3's int8), and K not a multiple of
** a chunk (lanes past a row's end skip their loads). Not the compiler, not
** timing, not sm_52 rounding. */
#include "emu_common.h" /* bench/attention/: CUDA names on the host */
#include "gemv_emu.h"    /* the GEMV's intrinsics, the test problem and its check */
#include "quant_plan.h"
static float4 *emu_smem; /* the block's dynamic shared memory (blocks run one after another) */
namespace {
#include "kernel.inc" /* gemv_emu.sh v3: the kernel's source */
}

static int fails = 0;
/* GROUPED: 1 f32, 2 f16, 3 the dtype at run time (f16 as given); grid: the
** persistent grid's blocks (whole K); segmented: a row group a warp, at most
** cps_max chunks of x a segment */
template <int WT, int B, int R, int GROUPED, bool SEG, int D, bool NORM>
static void run(const char *what, int N, int K, int group, bool f16, int grid, int cps_max = 0) {
    GemvProblem pb(B, N, K, GROUPED ? group : 0, WT == M40_DTYPE_Q4, f16, NORM);
    const m40k_qlinear_args a = pb.args(WT);
    using P = V3<WT, R>; /* the launcher's plan (v3_plan) */
    const int Kc = (K + P::KC - 1) / P::KC, nch_pad = (Kc + D - 1) / D * D;
    int cps = nch_pad;
    if (SEG) {
        const int c = cps_max ? cps_max : M40K_QGEMV_SMEM / (B * P::CB);
        const int nseg = (nch_pad + c - 1) / c;
        cps = (nch_pad + nseg - 1) / nseg;
        grid = ((N + R - 1) / R + kWarps - 1) / kWarps;
    }
    std::vector<float4> smem((size_t)B * cps * P::CB / sizeof(float4));
    emu_smem = smem.data();
    emu_grid(grid, kThreads, [&] { gemv_kernel<WT, B, R, GROUPED, SEG, D, NORM>(a, nch_pad, cps, 1); });
    fails += !pb.check(what);
}

int main() {
    constexpr int Q4 = M40_DTYPE_Q4, Q8 = M40_DTYPE_Q8;
    /* whole K, a persistent grid of 2 blocks: warps walk several row groups */
    run<Q4, 1, 2, 0, false, 4, false>("int4 row scales, R 2, D 4", 70, 4096, 0, true, 2);
    run<Q4, 1, 4, 2, false, 4, true>("int4 g128 f16, R 4, D 4, norm (h_to_4h)", 72, 4096, 128, true, 2);
    run<Q4, 1, 4, 1, false, 4, false>("int4 g64 f32, R 4, D 4", 68, 3072, 64, false, 2);
    run<Q4, 2, 4, 2, false, 2, false>("int4 g32 f16, R 4, D 2, batch 2", 40, 2048, 32, true, 1);
    run<Q8, 1, 4, 3, false, 4, true>("int8 g128 run-time dtype (f16), R 4, D 4, norm", 36, 2048, 128, true, 2);
    run<Q8, 1, 2, 3, false, 4, false>("int8 g64 run-time dtype (f32), R 2, D 4", 34, 2048, 64, false, 2);
    /* segments of x (3 chunks a segment) */
    run<Q8, 1, 2, 0, true, 2, false>("int8 row scales, segmented", 20, 6144, 0, false, 0, 3);
    run<Q4, 1, 2, 2, true, 2, false>("int4 g128 f16, segmented", 18, 8192, 128, true, 0, 3);
    /* K not a multiple of a chunk: the last chunk's lanes past the row skip
    ** their loads (v3_load), and so do the chunks that pad K to D */
    run<Q4, 1, 2, 0, false, 4, true>("int4 row f16, R 2, D 4, norm, K 4256", 70, 4256, 0, true, 2);
    run<Q4, 1, 4, 0, false, 2, false>("int4 row f16, R 4, D 2, K 5152", 44, 5152, 0, true, 1);
    run<Q4, 1, 4, 2, false, 4, false>("int4 g32 f16, R 4, D 4, K 1056", 40, 1056, 32, true, 2);
    run<Q8, 1, 2, 0, false, 4, true>("int8 row f16, R 2, D 4, norm, K 2576", 38, 2576, 0, true, 2);
    run<Q8, 1, 2, 0, true, 2, false>("int8 row, segmented, K 6160", 20, 6160, 0, false, 0, 3);
    printf("%s\n", fails ? "FAILED" : "all ok");
    return fails != 0;
}
