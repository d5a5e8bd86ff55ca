/* The quantized linear's dispatch rules, host side (CUDA builds; no GPU
** needed): which M takes the SGEMM with W converted as it loads
** (m40k_sgemm_quant_ok), and the scratch m40k_quant_linear asks for
** (m40k_quant_linear_workspace): the GEMV's split-K sums up to 8 rows, one
** 8-row slice's up to 64, the SGEMM's split-K sums above on a GPU of that
** many SMs (none for the planner's sm_count 0 or where quant_gemm.cu runs). */
#include "check.h"
#include "../../kernels/quant.h"
#include "../../kernels/quant_plan.h"
#include "../../kernels/sgemm.h"

#include <stdint.h>

static _Alignas(16) float X[16], Y[16];
static _Alignas(16) unsigned char W[64], S[64];

static m40k_qlinear_args args(int M, int N, int K, int wtype, int group) {
    m40k_qlinear_args a = {.M = M, .N = N, .K = K, .x = X, .wtype = wtype, .w = W,
                           .scale = wtype == M40_DTYPE_F16 ? NULL : S, .scale_f16 = 1,
                           .group = group, .y = Y};
    return a;
}

/* The SGEMM call quant_dispatch.cu builds (sgemm_of), written out. */
static m40k_sgemm_args sg(int M, int N, int K, int q, int group, const void *w, const void *s) {
    m40k_sgemm_args g = {.M = M, .N = N, .K = K, .a = X, .lda = K, .b = w, .b_nk = 1, .c = Y,
                         .ldc = N, .b_q = q, .b_scale = s, .b_scale_f16 = 1, .b_group = group};
    g.ldb = q == 4 ? (K + 1) / 2 : K;
    return g;
}

static void test_quant_ok(void) {
    m40k_sgemm_args g = sg(512, 4608, 4096, 4, 0, W, S);
    CHECK(m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 8, 128, W, S);
    CHECK(m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4100, 8, 0, W, S); /* K % 8 != 0 */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 4, 96, W, S); /* a group that is not a power of two */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 8, 0, W + 2, S); /* W not 4-byte aligned */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 8, 0, W, NULL); /* no scales */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 4, 0, W, S);
    g.ldb = 4096 / 2 - 4; /* rows shorter than K / 2 bytes */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 3, 0, W, S); /* no such width */
    CHECK(!m40k_sgemm_quant_ok(&g));
    g = sg(512, 4608, 4096, 4, 0, W, S);
    g.a = X + 1; /* x not 16-byte aligned */
    CHECK(!m40k_sgemm_quant_ok(&g));
}

static void test_workspace(void) {
    const int sms = 132;
    /* up to 8 rows: the GEMV's own rule */
    m40k_qlinear_args a = args(1, 4096, 13696, M40_DTYPE_Q8, 0);
    CHECK(m40k_quant_linear_workspace(&a, sms) == m40k_quant_gemv_workspace(&a));
    /* 9..64 rows: one 8-row slice's, whatever the SM count */
    for (int M = 9; M <= M40K_QSLICE_MAX; M += 11) {
        a = args(M, 27392, 4096, M40_DTYPE_Q4, 0);
        m40k_qlinear_args s8 = a;
        s8.M = 8;
        CHECK(m40k_quant_linear_workspace(&a, sms) == m40k_quant_gemv_workspace(&s8));
        CHECK(m40k_quant_linear_workspace(&a, 0) == m40k_quant_gemv_workspace(&s8));
    }
    /* above: the SGEMM's split-K sums on a GPU, none for the planner */
    static const int wt[3] = {M40_DTYPE_Q8, M40_DTYPE_Q4, M40_DTYPE_F16};
    for (int i = 0; i < 3; i++) {
        a = args(512, 4608, 4096, wt[i], 0);
        m40k_sgemm_args g = sg(512, 4608, 4096, wt[i] == M40_DTYPE_Q4 ? 4 : 8, 0, W, S);
        if (wt[i] == M40_DTYPE_F16) g.b_q = 0, g.b_f16 = 1, g.b_scale = NULL;
        const size_t want = m40k_sgemm_workspace_size(&g, sms);
        CHECK(want > 0); /* 144 tiles on 264 slots: split-K */
        CHECK(m40k_quant_linear_workspace(&a, sms) == want);
        CHECK(m40k_quant_linear_workspace(&a, 0) == 0);
        a = args(2048, 27392, 4096, wt[i], 0); /* plenty of tiles: no split */
        CHECK(m40k_quant_linear_workspace(&a, sms) == 0);
    }
    /* K % 8 != 0: quant_gemm.cu, which needs no scratch */
    a = args(512, 4608, 4100, M40_DTYPE_Q8, 0);
    CHECK(m40k_quant_linear_workspace(&a, sms) == 0);
    a = args(0, 4608, 4096, M40_DTYPE_Q8, 0);
    CHECK(m40k_quant_linear_workspace(&a, sms) == 0);
}

int main(void) {
    test_quant_ok();
    test_workspace();
    return m40t_finish("test_quant_dispatch");
}
