/* A host emulation of the batch-1 quantized GEMV v2 (kernels/quant_gemv_v2.cuh
** gemv_v2_kernel, the source as it is in the tree: gemv_emu.sh v2 extracts
** it), for machines without a GPU: each block run as 256 std::threads with a
** barrier for __syncthreads and per-warp barriers for the shuffles
** (bench/attention/emu_common.h), against a double reference over the same
** quantized weights, and a poisoned tail past y that must stay untouched. It
** checks x staged in passes (D 2: the pass loop, the next pass's x in
** registers, the xs offsets, a partial last chunk, rows past N; one chunk
** of weights ahead or a ring of four), and, as its
** own check, the chunked, staged-whole and exponent-zero forms that the GPU
** tests already pass. Not the compiler, not timing, not sm_52 rounding. */
#include "emu_common.h" /* bench/attention/: CUDA names on the host */
#include "gemv_emu.h"    /* the GEMV's intrinsics, the test problem and its check */
namespace {
#include "kernel.inc" /* gemv_emu.sh v2: the kernel's source */
}

static int fails = 0;
/* GROUPED: 1 f32, 2 f16 group scales (the kernel's template argument) */
/* ADD: 1 a bias, 2 a residual, 3 both (the epilogue's operands, asked for
** with the first weights since session 36) */
template <int WT, int GROUPED, bool NORM, bool WHOLE, int P, bool EZ, bool PASS, int ADD = 0, bool DB = false>
static void run(const char *what, int N, int K, int group) {
    GemvProblem pb(1, N, K, GROUPED ? group : 0, WT == M40_DTYPE_Q4, GROUPED == 2, NORM);
    pb.addends(ADD & 1, ADD & 2);
    const m40k_qlinear_args a = pb.args(WT);
    emu_grid((N + kWarps * 2 - 1) / (kWarps * 2), kWarps * 32,
             [&] { gemv_v2_kernel<WT, 1, 2, GROUPED, NORM, WHOLE, P, 1, EZ, kWarps, PASS, DB>(a); });
    fails += !pb.check(what);
}

int main() {
    constexpr int Q4 = M40_DTYPE_Q4, Q8 = M40_DTYPE_Q8;
    /* the forms the GPU tests already pass: the emulation's own check */
    run<Q4, 0, false, false, 1, false, false>("int4 chunked (the 4h_to_h default)", 40, 13696, 0);
    run<Q4, 0, true, true, 1, true, false>("int4 whole, norm, exponent-zero", 24, 4096, 0);
    run<Q8, 0, false, true, 1, false, false>("int8 whole", 20, 4096, 0);
    /* the exponent-zero staging a lane vector's share a thread (VT): int4
    ** at 2 threads a vector, int8 at 1; K short of the staging's 4096 */
    run<Q8, 0, true, true, 1, true, false>("int8 whole, norm, exponent-zero", 20, 4096, 0);
    run<Q4, 0, false, true, 4, true, false>("int4 whole, ez, P 4, K 1056", 22, 1056, 0);
    run<Q8, 0, false, true, 1, true, false>("int8 whole, ez, K 2000", 19, 2000, 0);
    /* group scales, their dtype a template argument (1 f32, 2 f16) */
    run<Q4, 2, true, true, 4, true, false>("int4 g128 f16, whole, norm, ez, P 4", 24, 4096, 128);
    run<Q4, 1, false, true, 1, true, false>("int4 g64 f32, whole, ez", 20, 4096, 64);
    run<Q8, 2, false, false, 1, false, false>("int8 g32 f16 chunked", 18, 1536, 32);
    /* x in passes */
    run<Q4, 0, false, true, 1, false, true>("int4 passes, 4 (last chunk partial)", 40, 13696, 0);
    run<Q4, 1, false, true, 1, false, true>("int4 g128 f32 passes", 20, 13696, 128);
    run<Q4, 2, false, true, 1, false, true>("int4 g128 f16 passes", 20, 13696, 128);
    run<Q8, 0, false, true, 1, false, true>("int8 passes", 18, 13696, 0);
    run<Q8, 1, false, true, 1, false, true>("int8 g128 f32 passes", 17, 8192, 128);
    run<Q4, 0, false, true, 1, false, true>("int4 passes, one", 16, 4096, 0);
    run<Q4, 0, false, true, 1, false, true>("int4 passes, a 32-column second", 33, 4128, 0);
    /* x in passes with the exponent-zero decode */
    run<Q4, 0, false, true, 1, true, true>("int4 passes, ez (last chunk partial)", 40, 13696, 0);
    run<Q4, 1, false, true, 1, true, true>("int4 g128 f32 passes, ez", 20, 13696, 128);
    run<Q4, 2, false, true, 1, true, true>("int4 g128 f16 passes, ez", 20, 13696, 128);
    run<Q8, 0, false, true, 1, true, true>("int8 passes, ez", 18, 13696, 0);
    run<Q8, 2, false, true, 1, true, true>("int8 g32 f16 passes, ez", 17, 8192 + 16, 32);
    run<Q4, 0, false, true, 1, true, true>("int4 passes, ez, one", 16, 4096, 0);
    run<Q4, 0, false, true, 1, true, true>("int4 passes, ez, a 32-column second", 33, 4128, 0);
    /* x in passes with a ring of four chunks of weights (P 4, int4): a last pass
    ** of one chunk, fewer chunks than the ring, the ring's refill stopping
    ** at the end of K */
    run<Q4, 0, false, true, 4, true, true, 2>("int4 passes, ez, P 4, residual", 40, 13696, 0);
    run<Q4, 2, false, true, 4, true, true>("int4 g128 f16 passes, ez, P 4", 20, 13696, 128);
    run<Q4, 0, false, true, 4, false, true>("int4 passes, P 4, a 32-column second", 33, 4128, 0);
    run<Q4, 0, false, true, 4, true, true>("int4 passes, ez, P 4, 3 chunks", 17, 3072, 0);
    run<Q4, 0, false, true, 4, false, true, 3>("int4 passes, P 4, bias + res", 18, 13696, 0);
    run<Q4, 1, false, true, 4, true, true>("int4 g128 f32 passes, ez, P 4, 6 chunks", 17, 5152, 128);
    /* x in passes double-buffered (DB: pass p in buffer p % 2, one barrier a pass) */
    run<Q4, 0, false, true, 4, true, true, 2, true>("int4 passes DB, ez, P 4, residual", 40, 13696, 0);
    run<Q4, 2, false, true, 4, true, true, 0, true>("int4 g128 f16 passes DB, ez, P 4", 20, 13696, 128);
    run<Q4, 0, false, true, 1, true, true, 0, true>("int4 passes DB, ez, a 32-column second", 33, 4128, 0);
    run<Q4, 0, false, true, 4, false, true, 3, true>("int4 passes DB, P 4, bias + res", 18, 13696, 0);
    run<Q8, 0, false, true, 1, false, true, 2, true>("int8 passes DB, one ahead, residual", 18, 13696, 0);
    run<Q4, 1, false, true, 1, true, true, 0, true>("int4 g128 f32 passes DB, ez, one ahead", 17, 13696, 128);
    run<Q8, 2, false, true, 1, false, true, 0, true>("int8 g32 f16 passes DB, 3 passes", 17, 8192 + 16, 32);
    /* the epilogue's bias and residual (qkv, dense, 4h_to_h), rows past N */
    run<Q4, 0, true, true, 1, true, false, 1>("int4 whole, norm, ez, bias", 23, 4096, 0);
    run<Q8, 0, true, true, 1, true, false, 1>("int8 whole, norm, ez, bias", 21, 4096, 0);
    run<Q4, 0, false, true, 1, true, false, 2>("int4 whole, ez, residual", 19, 4096, 0);
    run<Q4, 0, false, true, 1, true, true, 2>("int4 passes, ez, residual", 18, 13696, 0);
    run<Q8, 0, false, true, 1, false, true, 2>("int8 passes, residual", 17, 13696, 0);
    run<Q4, 2, false, true, 4, true, false, 3>("int4 g128 f16, whole, ez, P 4, bias + res", 21, 4096, 128);
    run<Q8, 0, false, false, 1, false, false, 3>("int8 chunked, bias + res", 22, 1536, 0);
    printf("%s\n", fails ? "FAILED" : "all ok");
    return fails != 0;
}
