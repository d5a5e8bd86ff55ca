/* Every eager op on the GPU against the CPU reference, on seeded random
** data, odd shapes (1, 7, 127, 128, 129, 4097), strided views and poisoned
** outputs. Exits 77 without a GPU. */
#include "check.h"
#include "half.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *G, *C; /* GPU and CPU contexts */

/* A tensor pair: the same shape on the GPU and the CPU. */
typedef struct pair {
    m40_tensor *g, *c;
    int64_t n;
} pair;

static pair pair_new(m40_dtype dt, int ndim, const int64_t *shape) {
    pair p = {0};
    m40_status a = m40_tensor_new(G, dt, ndim, shape, &p.g);
    m40_status b = m40_tensor_new(C, dt, ndim, shape, &p.c);
    if (a != M40_OK || b != M40_OK) {
        fprintf(stderr, "tensor_new failed: %s / %s\n", m40_errmsg(G), m40_errmsg(C));
        exit(1);
    }
    p.n = m40_tensor_desc_numel(m40_tensor_get_desc(p.c));
    return p;
}

static void pair_free(pair p) {
    m40_tensor_destroy(p.g);
    m40_tensor_destroy(p.c);
}

static void fill(pair p, uint64_t seed, float lo, float hi) {
    CHECK_ST(m40_fill_random(G, seed, M40_RANDOM_UNIFORM, lo, hi, p.g), M40_OK);
    CHECK_ST(m40_fill_random(C, seed, M40_RANDOM_UNIFORM, lo, hi, p.c), M40_OK);
}

/* Uploads NaNs into the GPU tensor, so anything the op fails to write shows. */
static void poison(pair p) {
    size_t nb = m40_tensor_get_nbytes(p.g);
    float *buf = malloc(nb + 4);
    m40t_poison(buf, (int64_t)(nb / 4) + 1);
    CHECK_ST(m40_tensor_upload(G, p.g, buf, nb), M40_OK);
    free(buf);
}

/* Downloads both sides (f32) and compares. */
static void compare(const char *name, pair p, m40t_tol tol) {
    float *g = malloc((size_t)p.n * 4 + 4), *c = malloc((size_t)p.n * 4 + 4);
    CHECK_ST(m40_tensor_download(G, p.g, g, (size_t)p.n * 4), M40_OK);
    CHECK_ST(m40_tensor_download(C, p.c, c, (size_t)p.n * 4), M40_OK);
    m40t_compare(name, g, c, p.n, tol);
    free(g);
    free(c);
}

static const m40t_tol EXACT = {0, 0, 0};
/* expf/erff on the GPU are within 2 ulp of the rounded result; the reference
** is double rounded once: a few float ulp, so 1e-6 relative with a tiny
** absolute floor for results near zero. */
static const m40t_tol TRANSCENDENTAL = {1e-7, 2e-6, 1e-12};

static const int64_t SIZES[] = {1, 7, 127, 128, 129, 4097};
#define NSIZES (int)(sizeof SIZES / sizeof SIZES[0])

static void test_fill(void) {
    for (int i = 0; i < NSIZES; i++) {
        int64_t shape[2] = {3, SIZES[i]};
        pair p = pair_new(M40_DTYPE_F32, 2, shape);
        char name[64];
        poison(p);
        fill(p, 1000 + (uint64_t)i, -2.0f, 3.0f);
        snprintf(name, sizeof name, "fill uniform [3,%lld]", (long long)SIZES[i]);
        compare(name, p, EXACT); /* same counter-based sequence, bit for bit */
        poison(p);
        CHECK_ST(m40_fill_random(G, 77, M40_RANDOM_NORMAL, 0.5f, 2.0f, p.g), M40_OK);
        CHECK_ST(m40_fill_random(C, 77, M40_RANDOM_NORMAL, 0.5f, 2.0f, p.c), M40_OK);
        snprintf(name, sizeof name, "fill normal [3,%lld]", (long long)SIZES[i]);
        /* logf/cosf/sqrtf differ by a few ulp between CUDA and glibc */
        compare(name, p, (m40t_tol){1e-5, 1e-5, 1e-11});
        pair_free(p);
    }
    /* f16 fill: the f32 value rounded to nearest even on both sides */
    int64_t shape[1] = {4097};
    pair h = pair_new(M40_DTYPE_F16, 1, shape);
    CHECK_ST(m40_fill_random(G, 5, M40_RANDOM_UNIFORM, -100.0f, 100.0f, h.g), M40_OK);
    CHECK_ST(m40_fill_random(C, 5, M40_RANDOM_UNIFORM, -100.0f, 100.0f, h.c), M40_OK);
    uint32_t cg = 0, cc = 1;
    CHECK_ST(m40_tensor_crc32(G, h.g, &cg), M40_OK);
    CHECK_ST(m40_tensor_crc32(C, h.c, &cc), M40_OK);
    CHECK(cg == cc);
    printf("%-4s %-44s crc %08x vs %08x\n", cg == cc ? "ok" : "FAIL", "fill f16 [4097]", cg, cc);
    pair_free(h);
}

static void test_unary(void) {
    static const struct { const char *name; int act; float alpha; m40t_tol tol; } ops[] = {
        {"scale", -1, -1.75f, {0, 0, 0}},
        {"relu", M40_ACT_RELU, 0, {0, 0, 0}},
        {"silu", M40_ACT_SILU, 0, {1e-7, 2e-6, 1e-12}},
        {"gelu", M40_ACT_GELU, 0, {1e-7, 2e-6, 1e-12}},
    };
    for (int o = 0; o < 4; o++)
        for (int i = 0; i < NSIZES; i++) {
            int64_t shape[3] = {2, 3, SIZES[i]};
            pair x = pair_new(M40_DTYPE_F32, 3, shape), y = pair_new(M40_DTYPE_F32, 3, shape);
            fill(x, 2000 + (uint64_t)(o * 16 + i), -6.0f, 6.0f);
            poison(y);
            if (ops[o].act < 0) {
                CHECK_ST(m40_scale(G, ops[o].alpha, x.g, y.g), M40_OK);
                CHECK_ST(m40_scale(C, ops[o].alpha, x.c, y.c), M40_OK);
            } else {
                CHECK_ST(m40_activation(G, (m40_act)ops[o].act, x.g, y.g), M40_OK);
                CHECK_ST(m40_activation(C, (m40_act)ops[o].act, x.c, y.c), M40_OK);
            }
            char name[64];
            snprintf(name, sizeof name, "%s [2,3,%lld]", ops[o].name, (long long)SIZES[i]);
            compare(name, y, ops[o].tol);
            /* in place: out aliases x */
            CHECK_ST(m40_activation(G, M40_ACT_GELU, x.g, x.g), M40_OK);
            CHECK_ST(m40_activation(C, M40_ACT_GELU, x.c, x.c), M40_OK);
            snprintf(name, sizeof name, "gelu in place [2,3,%lld]", (long long)SIZES[i]);
            compare(name, x, TRANSCENDENTAL);
            pair_free(x);
            pair_free(y);
        }
}

static void test_binary(void) {
    for (int i = 0; i < NSIZES; i++) {
        int64_t shape[2] = {5, SIZES[i]};
        pair a = pair_new(M40_DTYPE_F32, 2, shape), b = pair_new(M40_DTYPE_F32, 2, shape);
        pair y = pair_new(M40_DTYPE_F32, 2, shape), bias = pair_new(M40_DTYPE_F32, 1, &SIZES[i]);
        fill(a, 3000 + (uint64_t)i, -1.0f, 1.0f);
        fill(b, 3100 + (uint64_t)i, -1.0f, 1.0f);
        fill(bias, 3200 + (uint64_t)i, -1.0f, 1.0f);
        char name[64];
        for (int op = 0; op < 3; op++) {
            poison(y);
            const pair *rhs = op == 2 ? &bias : &b;
            m40_status (*fn)(m40_ctx *, const m40_tensor *, const m40_tensor *, m40_tensor *) =
                op == 1 ? m40_mul : m40_add;
            CHECK_ST(fn(G, a.g, rhs->g, y.g), M40_OK);
            CHECK_ST(fn(C, a.c, rhs->c, y.c), M40_OK);
            snprintf(name, sizeof name, "%s [5,%lld]",
                     op == 0 ? "add" : op == 1 ? "mul" : "add broadcast [N]", (long long)SIZES[i]);
            compare(name, y, EXACT); /* one rounding, same on both sides */
        }
        pair_free(a);
        pair_free(b);
        pair_free(y);
        pair_free(bias);
    }
}

/* Ops on non-contiguous views: a transposed view of x and a column slice. */
static void test_strided(void) {
    int64_t shape[2] = {129, 7}, tshape[2] = {7, 129};
    pair x = pair_new(M40_DTYPE_F32, 2, shape), y = pair_new(M40_DTYPE_F32, 2, tshape);
    fill(x, 4000, -3.0f, 3.0f);
    m40_tensor_desc tv = {.dtype = M40_DTYPE_F32, .ndim = 2, .shape = {7, 129}, .stride = {1, 7}};
    m40_tensor *xg, *xc;
    CHECK_ST(m40_tensor_view(G, x.g, &tv, 0, &xg), M40_OK);
    CHECK_ST(m40_tensor_view(C, x.c, &tv, 0, &xc), M40_OK);
    poison(y);
    CHECK_ST(m40_activation(G, M40_ACT_SILU, xg, y.g), M40_OK);
    CHECK_ST(m40_activation(C, M40_ACT_SILU, xc, y.c), M40_OK);
    compare("silu on a transposed view [7,129]", y, TRANSCENDENTAL);
    poison(y);
    CHECK_ST(m40_tensor_copy(G, y.g, xg), M40_OK);
    CHECK_ST(m40_tensor_copy(C, y.c, xc), M40_OK);
    compare("copy transposed view -> contiguous", y, EXACT);
    /* column slice: rows 0..128 of column 3, as a [129] view with stride 7 */
    m40_tensor_desc cv = {.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {129}, .stride = {7}};
    m40_tensor *cg, *cc;
    CHECK_ST(m40_tensor_view(G, x.g, &cv, 3, &cg), M40_OK);
    CHECK_ST(m40_tensor_view(C, x.c, &cv, 3, &cc), M40_OK);
    CHECK_ST(m40_scale(G, 2.0f, cg, cg), M40_OK);
    CHECK_ST(m40_scale(C, 2.0f, cc, cc), M40_OK);
    compare("scale in place on a column view", x, EXACT);
    /* host -> device copy into a strided device view */
    CHECK_ST(m40_tensor_copy(G, xg, y.c), M40_OK);
    CHECK_ST(m40_tensor_copy(C, xc, y.c), M40_OK);
    compare("copy host -> strided device view", x, EXACT);
    m40_tensor_destroy(xg); m40_tensor_destroy(xc); m40_tensor_destroy(cg); m40_tensor_destroy(cc);
    pair_free(x);
    pair_free(y);
}

static void test_softmax(void) {
    for (int i = 0; i < NSIZES; i++) {
        int64_t shape[3] = {2, 9, SIZES[i]};
        pair x = pair_new(M40_DTYPE_F32, 3, shape), y = pair_new(M40_DTYPE_F32, 3, shape);
        fill(x, 5000 + (uint64_t)i, -20.0f, 20.0f);
        poison(y);
        CHECK_ST(m40_softmax(G, x.g, y.g), M40_OK);
        CHECK_ST(m40_softmax(C, x.c, y.c), M40_OK);
        char name[64];
        snprintf(name, sizeof name, "softmax [2,9,%lld]", (long long)SIZES[i]);
        /* expf within 2 ulp, and a sum of up to 4097 terms in float: relative
        ** error grows like log2(n)*eps with the tree reduction */
        compare(name, y, (m40t_tol){1e-9, 1e-5, 1e-11});
        pair_free(x);
        pair_free(y);
    }
}

static void test_convert(void) {
    /* f32 -> f16 on random bit patterns (every exponent: subnormals,
    ** overflow, ties) and f16 -> f32 on all 65536 halves, bit for bit. */
    enum { N = 1 << 20 };
    uint32_t *bits = malloc(N * 4);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        bits[i] = (uint32_t)(s >> 32);
        if (i < 65536) { /* exact halfway cases between two halves */
            uint32_t h = (uint32_t)i;
            float lo = m40__f16_to_f32((uint16_t)h), hi = m40__f16_to_f32((uint16_t)(h + 1));
            if (isfinite(lo) && isfinite(hi) && (h & 0x7FFF) != 0x7BFF) {
                float mid = (float)(((double)lo + hi) / 2);
                memcpy(&bits[i], &mid, 4);
            }
        }
    }
    int64_t shape[1] = {N};
    m40_tensor *fg, *hg, *fc, *hc;
    CHECK_ST(m40_tensor_new(G, M40_DTYPE_F32, 1, shape, &fg), M40_OK);
    CHECK_ST(m40_tensor_new(G, M40_DTYPE_F16, 1, shape, &hg), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, shape, &fc), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F16, 1, shape, &hc), M40_OK);
    CHECK_ST(m40_tensor_upload(G, fg, bits, N * 4), M40_OK);
    CHECK_ST(m40_tensor_upload(C, fc, bits, N * 4), M40_OK);
    CHECK_ST(m40_convert(G, fg, hg), M40_OK);
    CHECK_ST(m40_convert(C, fc, hc), M40_OK);
    uint16_t *a = malloc(N * 2), *b = malloc(N * 2);
    CHECK_ST(m40_tensor_download(G, hg, a, N * 2), M40_OK);
    CHECK_ST(m40_tensor_download(C, hc, b, N * 2), M40_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        bool nan_a = (a[i] & 0x7C00) == 0x7C00 && (a[i] & 0x3FF);
        bool nan_b = (b[i] & 0x7C00) == 0x7C00 && (b[i] & 0x3FF);
        if (nan_a != nan_b || (!nan_a && a[i] != b[i])) {
            if (bad++ < 5) fprintf(stderr, "  f32->f16 of 0x%08x: gpu 0x%04x ref 0x%04x\n", bits[i], a[i], b[i]);
        }
    }
    CHECK(bad == 0);
    printf("%-4s %-44s n=%d mismatches=%d\n", bad ? "FAIL" : "ok", "convert f32->f16 (bits)", N, bad);
    /* f16 -> f32 over every half */
    for (int i = 0; i < 65536; i++) a[i] = (uint16_t)i;
    m40_tensor *hg2, *hc2, *fg2, *fc2;
    int64_t s2[1] = {65536};
    CHECK_ST(m40_tensor_new(G, M40_DTYPE_F16, 1, s2, &hg2), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F16, 1, s2, &hc2), M40_OK);
    CHECK_ST(m40_tensor_new(G, M40_DTYPE_F32, 1, s2, &fg2), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s2, &fc2), M40_OK);
    CHECK_ST(m40_tensor_upload(G, hg2, a, 65536 * 2), M40_OK);
    CHECK_ST(m40_tensor_upload(C, hc2, a, 65536 * 2), M40_OK);
    pair p = {fg2, fc2, 65536};
    poison(p);
    CHECK_ST(m40_convert(G, hg2, fg2), M40_OK);
    CHECK_ST(m40_convert(C, hc2, fc2), M40_OK);
    compare("convert f16->f32 (all 65536)", p, EXACT);
    m40_tensor_destroy(fg); m40_tensor_destroy(hg); m40_tensor_destroy(fc); m40_tensor_destroy(hc);
    m40_tensor_destroy(hg2); m40_tensor_destroy(hc2); pair_free(p);
    free(bits); free(a); free(b);
}

static void test_matmul(void) {
    static const int64_t mnk[][3] = {
        {1, 1, 1}, {1, 4097, 129}, {7, 127, 128}, {127, 129, 7}, {128, 128, 128},
        {129, 7, 4097}, {4097, 1, 127}, {33, 257, 1000},
    };
    for (size_t t = 0; t < sizeof mnk / sizeof mnk[0]; t++) {
        int64_t M = mnk[t][0], N = mnk[t][1], K = mnk[t][2];
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            int64_t xs[3] = {1, M, K}, ws[2] = {N, K}, ys[3] = {1, M, N};
            pair x = pair_new(M40_DTYPE_F32, 3, xs), w = pair_new(M40_DTYPE_F32, 2, ws);
            pair y = pair_new(M40_DTYPE_F32, 3, ys), b = pair_new(M40_DTYPE_F32, 1, &N);
            fill(x, 6000 + t, -1.0f, 1.0f);
            fill(w, 6100 + t, -1.0f, 1.0f);
            fill(b, 6200 + t, -1.0f, 1.0f);
            poison(y);
            CHECK_ST(m40_matmul(G, x.g, w.g, with_bias ? b.g : NULL, y.g), M40_OK);
            CHECK_ST(m40_matmul(C, x.c, w.c, with_bias ? b.c : NULL, y.c), M40_OK);
            char name[64];
            snprintf(name, sizeof name, "matmul M=%lld N=%lld K=%lld%s", (long long)M,
                     (long long)N, (long long)K, with_bias ? " +bias" : "");
            /* FP32 accumulation of K products of magnitude <= 1 against a
            ** double reference: error ~ sqrt(K)·eps·sqrt(K/3) typical, bounded
            ** here by K·2^-22 absolute; NMSE ~ K·eps² */
            m40t_tol tol = {(double)K * 2.4e-7, 1e-5, 1e-9};
            compare(name, y, tol);
            pair_free(x); pair_free(w); pair_free(y); pair_free(b);
        }
    }
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_gpu_ops");
    if (!G) return M40T_SKIP;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    test_fill();
    test_unary();
    test_binary();
    test_strided();
    test_softmax();
    test_convert();
    test_matmul();
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    m40_ctx_destroy(G);
    m40_ctx_destroy(C);
    return m40t_finish("test_gpu_ops");
}
