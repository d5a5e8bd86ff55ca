/* Shapes at the GPU kernels' 32-bit limits (the kernel audit of session
** 23): each is either computed right or refused with a message, never
** computed wrong. Exits 77 without a GPU; the parts that need more device
** memory than is free say so and are skipped.
**   - m40_matmul with M > 65535·64 rows (the SGEMM tile grid's y): run in
**     pieces, every row against a host reference;
**   - m40_matmul at M 1 with K > 2^29 (the skinny kernel's weight offset
**     passed 2^31 bytes in 32 bits): y exact on a 0/1 pattern (6.5 GB);
**   - take_last with T·C·4 > 2^31 (past the 2-D copy's pitch): one copy a
**     row (4.3 GB);
**   - refusals on wrapped descriptors (nothing is read): softmax over 2^31
**     rows, an NHWC implicit-GEMM conv of one 2^31-value image, a conv
**     with 2^31 output pixels. */
#include "check.h"
#include "../kernels/sgemm.h"
#include "../kernels/take_last.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t free_bytes(m40_ctx *g) {
    m40_device_info info;
    return m40_ctx_get_info(g, &info) == M40_OK ? info.free_bytes : 0;
}

/* a wrapped device tensor of any shape over the same small allocation:
** for calls that must refuse before they read it */
static m40_tensor *wrapped(m40_ctx *g, void *data, int nd, const int64_t *shape) {
    m40_tensor_desc d;
    if (m40_tensor_desc_make(&d, M40_DTYPE_F32, nd, shape) != M40_OK) return NULL;
    m40_tensor *t = NULL;
    return m40_tensor_wrap(g, &d, M40_LOC_DEVICE, data, &t) == M40_OK ? t : NULL;
}

static void matmul_many_rows(m40_ctx *g) {
    const int64_t M = M40K_SGEMM_MAX_ROWS + 37, N = 3, K = 5;
    m40_tensor *x = m40t_f32(g, 2, M, K, 0, 0), *w = m40t_f32(g, 2, N, K, 0, 0);
    m40_tensor *b = m40t_f32(g, 1, N, 0, 0, 0), *y = m40t_f32(g, 2, M, N, 0, 0);
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, -1, 1, x), M40_OK);
    CHECK_ST(m40_fill_random(g, 2, M40_RANDOM_UNIFORM, -1, 1, w), M40_OK);
    CHECK_ST(m40_fill_random(g, 3, M40_RANDOM_UNIFORM, -1, 1, b), M40_OK);
    CHECK_ST(m40_fill_random(g, 4, M40_RANDOM_UNIFORM, 1e30f, 1e30f, y), M40_OK); /* poison */
    CHECK_ST(m40_matmul(g, x, w, b, y), M40_OK);
    float *hx = malloc((size_t)(M * K) * 4), *hy = malloc((size_t)(M * N) * 4), hw[15], hb[3];
    if (!hx || !hy) {
        printf("matmul %lld rows: no host memory, skipped\n", (long long)M);
        goto out;
    }
    CHECK_ST(m40_tensor_download(g, x, hx, (size_t)(M * K) * 4), M40_OK);
    CHECK_ST(m40_tensor_download(g, y, hy, (size_t)(M * N) * 4), M40_OK);
    CHECK_ST(m40_tensor_download(g, w, hw, sizeof hw), M40_OK);
    CHECK_ST(m40_tensor_download(g, b, hb, sizeof hb), M40_OK);
    double worst = 0;
    int64_t worst_row = -1;
    for (int64_t m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double r = hb[n];
            for (int k = 0; k < K; k++) r += (double)hx[m * K + k] * hw[n * K + k];
            const double e = fabs(hy[m * N + n] - r);
            if (!(e <= worst) && worst != INFINITY) /* NaN or the poison: infinitely wrong */
                worst = isfinite(e) && e < 1e20 ? e : INFINITY, worst_row = m;
        }
    printf("matmul %lld rows (pieces of %d): worst |y - ref| %.2e at row %lld\n", (long long)M,
           M40K_SGEMM_MAX_ROWS, worst, (long long)worst_row);
    CHECK(worst < 1e-5);
out:
    free(hx), free(hy);
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(b), m40_tensor_destroy(y);
}

static void matmul_long_k(m40_ctx *g) {
    const int64_t K = ((int64_t)1 << 29) + ((int64_t)1 << 20), tail = (int64_t)1 << 20;
    if (free_bytes(g) < (size_t)(3 * K * 4) + ((size_t)1 << 30)) {
        printf("matmul K = %lld: %.1f GB free, skipped\n", (long long)K, free_bytes(g) / 1e9);
        return;
    }
    m40_tensor *x = m40t_f32(g, 2, 1, K, 0, 0), *w = m40t_f32(g, 2, 2, K, 0, 0);
    m40_tensor *y = m40t_f32(g, 2, 1, 2, 0, 0), *t = NULL;
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, 1, 1, x), M40_OK);
    CHECK_ST(m40_fill_random(g, 2, M40_RANDOM_UNIFORM, 0, 0, w), M40_OK);
    /* row 0's last 2^20 weights 1: y[0] = 2^20 exactly, y[1] = 0 */
    m40_tensor_desc d;
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, &tail), M40_OK);
    CHECK_ST(m40_tensor_view(g, w, &d, K - tail, &t), M40_OK);
    CHECK_ST(m40_fill_random(g, 3, M40_RANDOM_UNIFORM, 1, 1, t), M40_OK);
    CHECK_ST(m40_matmul(g, x, w, NULL, y), M40_OK);
    float hy[2] = {-1, -1};
    CHECK_ST(m40_tensor_download(g, y, hy, sizeof hy), M40_OK);
    printf("matmul M 1, K %lld (weight offsets past 2^31 bytes): y = %.1f, %.1f (want %.1f, 0)\n",
           (long long)K, hy[0], hy[1], (double)tail);
    CHECK(hy[0] == (float)tail && hy[1] == 0.0f);
    m40_tensor_destroy(t);
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(y);
}

static void take_last_wide(m40_ctx *g) {
    const int64_t B = 2, T = 2, C = ((int64_t)1 << 28) + 16; /* T·C·4 > 2^31 */
    if (free_bytes(g) < (size_t)(B * T * C * 4 + B * C * 4) + ((size_t)1 << 30)) {
        printf("take_last T·C·4 = %.2f GB: not enough free memory, skipped\n", T * C * 4 / 1e9);
        return;
    }
    m40_tensor *x = m40t_f32(g, 3, B, T, C, 0), *y = m40t_f32(g, 2, B, C, 0, 0), *v = NULL;
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, 1, 1, x), M40_OK);
    m40_tensor_desc d;
    CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, &C), M40_OK);
    for (int64_t b = 0; b < B; b++) { /* x[b, T-1, :] = b + 2 */
        CHECK_ST(m40_tensor_view(g, x, &d, (b * T + T - 1) * C, &v), M40_OK);
        CHECK_ST(m40_fill_random(g, 2, M40_RANDOM_UNIFORM, (float)(b + 2), (float)(b + 2), v), M40_OK);
        m40_tensor_destroy(v);
    }
    CHECK(m40k_take_last(m40_ctx_get_stream(g), B, T, C, m40_tensor_get_data(x),
                         m40_tensor_get_data(y)) == 0);
    int ok = 1;
    const int64_t at[4] = {0, 1, C - 2, C - 1};
    for (int64_t b = 0; b < B; b++)
        for (int i = 0; i < 4; i++) {
            float h = 0;
            int64_t one = 1;
            CHECK_ST(m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, &one), M40_OK);
            CHECK_ST(m40_tensor_view(g, y, &d, b * C + at[i], &v), M40_OK);
            CHECK_ST(m40_tensor_download(g, v, &h, 4), M40_OK);
            ok &= h == (float)(b + 2);
            m40_tensor_destroy(v);
        }
    printf("take_last B %lld, T %lld, C %lld (pitch %.2f GB): %s\n", (long long)B, (long long)T,
           (long long)C, T * C * 4 / 1e9, ok ? "each row's last position" : "WRONG");
    CHECK(ok);
    m40_tensor_destroy(x), m40_tensor_destroy(y);
}

static void refusals(m40_ctx *g) {
    m40_tensor *small = m40t_f32(g, 1, 1024, 0, 0, 0);
    void *p = m40_tensor_get_data(small);
    /* softmax over 2^31 rows */
    const int64_t s1[2] = {(int64_t)1 << 31, 1};
    m40_tensor *a = wrapped(g, p, 2, s1);
    CHECK(a != NULL);
    CHECK_ST(m40_softmax(g, a, a), M40_ERR_UNSUPPORTED);
    printf("softmax [2^31, 1]: %s\n", m40_errmsg(g));
    CHECK(strstr(m40_errmsg(g), "2^31") != NULL);
    m40_tensor_destroy(a);
    /* an NHWC 3x3 conv over one image of 16384·16384·8 values */
    const int64_t sx[4] = {1, 16384, 16384, 8}, sw[4] = {8, 3, 3, 8};
    m40_tensor *x = wrapped(g, p, 4, sx), *w = wrapped(g, p, 4, sw), *y = wrapped(g, p, 4, sx);
    m40_conv2d_desc cd = m40t_conv_desc(M40_LAYOUT_NHWC, 1, 1, 1, 0);
    CHECK(x && w && y);
    CHECK_ST(m40_conv2d(g, &cd, x, w, NULL, NULL, NULL, y), M40_ERR_UNSUPPORTED);
    printf("conv NHWC [1,16384,16384,8] 3x3: %s\n", m40_errmsg(g));
    CHECK(strstr(m40_errmsg(g), "implicit GEMM") != NULL);
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(y);
    /* NCHW, 2^31 output pixels (N·P·Q) of one channel */
    const int64_t nx[4] = {2, 1, 32768, 32768}, nw[4] = {1, 1, 1, 1};
    x = wrapped(g, p, 4, nx), w = wrapped(g, p, 4, nw), y = wrapped(g, p, 4, nx);
    cd = m40t_conv_desc(M40_LAYOUT_NCHW, 1, 0, 1, 0);
    CHECK(x && w && y);
    CHECK_ST(m40_conv2d(g, &cd, x, w, NULL, NULL, NULL, y), M40_ERR_UNSUPPORTED);
    printf("conv NCHW [2,1,32768,32768] 1x1: %s\n", m40_errmsg(g));
    CHECK(strstr(m40_errmsg(g), "output pixels") != NULL);
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(y);
    /* and the context still computes */
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, 0, 1, small), M40_OK);
    CHECK_ST(m40_ctx_sync(g), M40_OK);
    m40_tensor_destroy(small);
}

int main(void) {
    m40_ctx *g = m40t_gpu_ctx_or_skip("test_gpu_limits");
    if (!g) return M40T_SKIP;
    refusals(g);
    matmul_many_rows(g);
    matmul_long_k(g);
    take_last_wide(g);
    CHECK_ST(m40_ctx_sync(g), M40_OK);
    m40_ctx_destroy(g);
    return m40t_finish("test_gpu_limits");
}
