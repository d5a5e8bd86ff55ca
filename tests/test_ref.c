/* The CPU reference checked against independent facts: IEEE half
** encodings, closed forms, algebraic identities and sample statistics.
** (The GPU tests trust the reference; this is what earns that trust.) */
#include "check.h"
#include "half.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_half(void) {
    /* IEEE binary16 facts */
    CHECK(m40__f32_to_f16(1.0f) == 0x3C00);
    CHECK(m40__f32_to_f16(-2.0f) == 0xC000);
    CHECK(m40__f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(m40__f32_to_f16(65519.99f) == 0x7BFF);
    CHECK(m40__f32_to_f16(65520.0f) == 0x7C00);          /* rounds to inf */
    CHECK(m40__f32_to_f16(ldexpf(1, -24)) == 0x0001);    /* smallest subnormal */
    CHECK(m40__f32_to_f16(ldexpf(1, -25)) == 0x0000);    /* tie -> even (0) */
    CHECK(m40__f32_to_f16(ldexpf(3, -25)) == 0x0002);    /* 1.5 ulp -> tie -> even (2) */
    CHECK(m40__f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3C00); /* tie -> even */
    CHECK(m40__f32_to_f16(1.0f + ldexpf(3, -11)) == 0x3C02); /* tie -> even (up) */
    CHECK(m40__f32_to_f16(ldexpf(1, -14)) == 0x0400);    /* smallest normal */
    CHECK(m40__f32_to_f16(INFINITY) == 0x7C00);
    uint16_t hn = m40__f32_to_f16(NAN);
    CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0);
    /* every finite half survives f16 -> f32 -> f16; values agree with ldexp */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t e = (h >> 10) & 31, m = h & 1023;
        if (e == 31) continue;
        float f = m40__f16_to_f32((uint16_t)h);
        double want = e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
        if (h & 0x8000) want = -want;
        if (f != (float)want || m40__f32_to_f16(f) != h) bad++;
    }
    CHECK(bad == 0);
    /* rounding by nearest against a brute-force search over all halves, on
    ** random floats in the half range */
    uint64_t s = 99;
    int bad2 = 0;
    for (int i = 0; i < 200; i++) { /* the inner search is exhaustive: keep it short */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float x = ldexpf((float)((s >> 40) & 0xFFFFFF) / 16777216.0f + 0.5f, (int)((s >> 20) % 44) - 28);
        uint16_t got = m40__f32_to_f16(x);
        double best = INFINITY;
        uint16_t arg = 0;
        for (uint32_t h = 0; h < 0x7C00; h++) {
            double d = fabs((double)m40__f16_to_f32((uint16_t)h) - x);
            if (d < best || (d == best && !(h & 1))) { best = d; arg = (uint16_t)h; }
        }
        if (x >= 65520.0f) arg = 0x7C00;
        if (got != arg && bad2++ < 3) fprintf(stderr, "  f16(%.9g) = %04x, nearest %04x\n", x, got, arg);
    }
    CHECK(bad2 == 0);
}

static void test_random(void) {
    enum { N = 200000 };
    m40_tensor_desc d;
    int64_t n = N;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, &n);
    float *x = malloc(N * 4);
    m40__ref_fill_random(&d, x, 42, M40_RANDOM_UNIFORM, -1.0f, 3.0f);
    double sum = 0, sq = 0;
    int out = 0;
    for (int i = 0; i < N; i++) {
        out += x[i] < -1.0f || x[i] >= 3.0f;
        sum += x[i];
    }
    double mean = sum / N;
    for (int i = 0; i < N; i++) sq += (x[i] - mean) * (x[i] - mean);
    CHECK(out == 0);
    CHECK(fabs(mean - 1.0) < 0.02);                      /* 4σ ≈ 0.0103 */
    CHECK(fabs(sqrt(sq / N) - 4 / sqrt(12.0)) < 0.01);
    m40__ref_fill_random(&d, x, 42, M40_RANDOM_NORMAL, 2.0f, 0.5f);
    sum = sq = 0;
    for (int i = 0; i < N; i++) sum += x[i];
    mean = sum / N;
    for (int i = 0; i < N; i++) sq += (x[i] - mean) * (x[i] - mean);
    CHECK(fabs(mean - 2.0) < 0.005);                     /* 4σ ≈ 0.0045 */
    CHECK(fabs(sqrt(sq / N) - 0.5) < 0.005);
    printf("random: normal mean %.4f sd %.4f\n", mean, sqrt(sq / N));
    free(x);
}

static void test_unary_binary(void) {
    float xs[] = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, 8.0f};
    int64_t n = 6;
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, &n);
    float y[6];
    m40__ref_unary(M40__UNARY_RELU, 0, &d, xs, &d, y);
    for (int i = 0; i < 6; i++) CHECK(y[i] == (xs[i] > 0 ? xs[i] : 0));
    m40__ref_unary(M40__UNARY_SILU, 0, &d, xs, &d, y);
    for (int i = 0; i < 6; i++) CHECK(fabs(y[i] - xs[i] / (1 + exp(-xs[i]))) < 1e-6);
    m40__ref_unary(M40__UNARY_GELU, 0, &d, xs, &d, y);
    CHECK(y[2] == 0.0f);
    CHECK(fabs(y[5] - 8.0) < 1e-6);                       /* Phi(8) = 1 - 6e-16 */
    CHECK(fabs(y[4] - 2.0 * 0.9772498680518208) < 1e-6); /* Phi(2) */
    CHECK(fabs(y[0] + 3.0 * 0.0013498980316301) < 1e-6); /* Phi(-3) */
    m40__ref_unary(M40__UNARY_SCALE, -2.0f, &d, xs, &d, y);
    for (int i = 0; i < 6; i++) CHECK(y[i] == -2.0f * xs[i]);
    /* broadcast: [2,3] + [3] via a zero stride */
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, o[6];
    int64_t s[2] = {2, 3};
    m40_tensor_desc da, db;
    m40_tensor_desc_make(&da, M40_DTYPE_F32, 2, s);
    db = da;
    db.stride[0] = 0;
    m40__ref_binary(M40__BINARY_ADD, &da, a, &db, b, &da, o);
    float want[6] = {11, 22, 33, 14, 25, 36};
    CHECK(memcmp(o, want, sizeof o) == 0);
}

static void test_softmax_matmul(void) {
    float x[2][5] = {{1, 2, 3, 4, 5}, {-1000, 0, 1000, 1000, 3}}, y[2][5], y2[2][5];
    int64_t s[2] = {2, 5};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    m40__ref_softmax(&d, &x[0][0], &d, &y[0][0]);
    for (int r = 0; r < 2; r++) {
        double sum = 0;
        for (int c = 0; c < 5; c++) sum += y[r][c];
        CHECK(fabs(sum - 1) < 1e-6);
    }
    double z = 0;
    for (int c = 0; c < 5; c++) z += exp(c + 1.0);
    CHECK(fabs(y[0][4] - exp(5.0) / z) < 1e-7);
    CHECK(fabs(y[1][2] - 0.5) < 1e-7 && y[1][0] == 0.0f); /* no overflow at 1000 */
    for (int c = 0; c < 5; c++) x[0][c] += 100.0f;        /* shift invariance */
    m40__ref_softmax(&d, &x[0][0], &d, &y2[0][0]);
    for (int c = 0; c < 5; c++) CHECK(fabs(y2[0][c] - y[0][c]) < 1e-6);

    /* [2,3]·[2,3]ᵀ + bias, by hand */
    float xa[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f}, b[2] = {10, -1};
    float out[4];
    m40__ref_linear(2, 2, 3, xa, w, b, out);
    float want[4] = {1 - 3 + 10, 3 - 1, 4 - 6 + 10, 7.5f - 1};
    CHECK(memcmp(out, want, sizeof out) == 0);
    m40__ref_linear(2, 2, 3, xa, w, NULL, out);
    CHECK(out[0] == -2 && out[3] == 7.5f);
}

/* Cases a mutation run found unchecked (session 24): strided rows, a 0-d
** tensor, K = 0, MUL's values, a converted view. */
static void test_strides_and_edges(void) {
    /* softmax over a [2,3] view with row stride 5 (the columns past 3 hold 50) */
    float base[10];
    for (int i = 0; i < 10; i++) base[i] = i % 5 < 3 ? (float)i : 50.0f;
    int64_t s23[2] = {2, 3};
    m40_tensor_desc dv, dy;
    m40_tensor_desc_make(&dv, M40_DTYPE_F32, 2, s23);
    dv.stride[0] = 5;
    m40_tensor_desc_make(&dy, M40_DTYPE_F32, 2, s23);
    float y[6];
    m40__ref_softmax(&dv, base, &dy, y);
    const double z = exp(5.0) + exp(6.0) + exp(7.0);
    CHECK(fabs(y[3] - exp(5.0) / z) < 1e-6 && fabs(y[5] - exp(7.0) / z) < 1e-6);
    /* softmax of a 0-d tensor: one value, probability 1 */
    m40_tensor_desc d0;
    m40_tensor_desc_make(&d0, M40_DTYPE_F32, 0, NULL);
    float x0 = 5.0f, y0 = -7.0f;
    m40__ref_softmax(&d0, &x0, &d0, &y0);
    CHECK(y0 == 1.0f);
    /* K = 0: y = bias */
    float b3[3] = {1, 2, 3}, y6[6];
    m40t_poison(y6, 6);
    m40__ref_linear(2, 3, 0, NULL, NULL, b3, y6);
    CHECK(y6[0] == 1 && y6[1] == 2 && y6[2] == 3 && y6[3] == 1 && y6[4] == 2 && y6[5] == 3);
    /* MUL multiplies, also broadcast over a zero stride */
    float a[6] = {1, 2, 3, 4, 5, 6}, m[3] = {2, -1, 0.5f}, o[6];
    m40_tensor_desc da, db;
    m40_tensor_desc_make(&da, M40_DTYPE_F32, 2, s23);
    db = da;
    db.stride[0] = 0;
    m40__ref_binary(M40__BINARY_MUL, &da, a, &db, m, &da, o);
    float want[6] = {2, -2, 1.5f, 8, -5, 3};
    CHECK(memcmp(o, want, sizeof o) == 0);
    /* f32 -> f16 from a transposed view: v[r][c] = t[c * 2 + r] */
    float t[6] = {0, 1, 2, 3, 4, 5};
    m40_tensor_desc dt, dh;
    m40_tensor_desc_make(&dt, M40_DTYPE_F32, 2, s23);
    dt.stride[0] = 1, dt.stride[1] = 2;
    m40_tensor_desc_make(&dh, M40_DTYPE_F16, 2, s23);
    uint16_t h[6];
    m40__ref_convert(&dt, t, &dh, h);
    const float tw[6] = {0, 2, 4, 1, 3, 5};
    for (int i = 0; i < 6; i++) CHECK(m40__f16_to_f32(h[i]) == tw[i]);
}

int main(void) {
    test_half();
    test_random();
    test_unary_binary();
    test_softmax_matmul();
    test_strides_and_edges();
    return m40t_finish("test_ref");
}
