/* Issue 16, the small transformer ops on a CPU context: RMSNorm (with the
** fused residual), RoPE, SwiGLU, embedding and TAKE_LAST against formulas
** written here (not the library's reference), their bad inputs, and their
** graph nodes (RMSNORM's STATE rule and alpha 0/1, a chain of all five). */
#include "check.h"
#include "chain.h"
#include "half.h"
#include "m40/transformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

static int has(const char *s) { return strstr(m40_errmsg(C), s) != NULL; }

static uint32_t rng_state = 12345;
static float frand(void) { /* in [-1, 1) */
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) * (1.0 / 8388608.0)) - 1.0f;
}
static void fill(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = frand();
}
static float *fdata(m40_tensor *t) { return (float *)m40_tensor_get_data(t); }

static m40_tensor *i32(int nd, int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    m40_tensor *t = NULL;
    if (m40_tensor_new(C, M40_DTYPE_I32, nd, s, &t) != M40_OK) exit(1);
    return t;
}
static m40_tensor *f16(int nd, int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    m40_tensor *t = NULL;
    if (m40_tensor_new(C, M40_DTYPE_F16, nd, s, &t) != M40_OK) exit(1);
    return t;
}
/* A [rows, W] view with row stride `stride` of a fresh [rows, stride] base. */
static m40_tensor *strided(m40_tensor **base, int64_t rows, int64_t W, int64_t stride) {
    *base = m40t_f32(C, 2, rows, stride, 0, 0);
    int64_t s[2] = {rows, W};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    d.stride[0] = stride;
    m40_tensor *v = NULL;
    if (m40_tensor_view(C, *base, &d, 0, &v) != M40_OK) exit(1);
    return v;
}

/* ---- RoPE ------------------------------------------------------------------ */

/* models.md, in double: θ_i = theta^(−2i/rope_dims), angle p·θ_i. */
static void rope_formula(const m40_rope_desc *d, int64_t rows, int64_t W, const float *x,
                         int64_t xs, const int32_t *pos, float *y) {
    int half = d->rope_dims / 2;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < W; j++) y[r * W + j] = x[r * xs + j];
        for (int h = 0; h < d->heads; h++)
            for (int i = 0; i < half; i++) {
                double th = pow(d->theta, -2.0 * i / d->rope_dims);
                double a = pos[r] * (double)d->pos_scale * th;
                int64_t ia = (int64_t)h * d->head_dim + (d->pairs == M40_ROPE_ADJACENT ? 2 * i : i);
                int64_t ib = ia + (d->pairs == M40_ROPE_ADJACENT ? 1 : half);
                double va = x[r * xs + ia], vb = x[r * xs + ib];
                y[r * W + ia] = (float)(va * cos(a) - vb * sin(a));
                y[r * W + ib] = (float)(vb * cos(a) + va * sin(a));
            }
    }
}

static void rope_case(m40_rope_pairs pairs, int heads, int hd, int rd, int64_t W, int64_t xs) {
    enum { ROWS = 3 };
    m40_rope_desc d;
    m40_rope_desc_init(&d);
    d.heads = heads, d.head_dim = hd, d.rope_dims = rd, d.pairs = pairs;
    m40_tensor *base, *x = strided(&base, ROWS, W, xs), *pos = i32(1, ROWS, 0);
    int32_t *p = (int32_t *)m40_tensor_get_data(pos);
    p[0] = 0, p[1] = 7, p[2] = 1000;
    fill(fdata(base), ROWS * xs);
    float *orig = malloc(sizeof(float) * ROWS * xs), *want = malloc(sizeof(float) * ROWS * W),
          *got = malloc(sizeof(float) * ROWS * W);
    memcpy(orig, fdata(base), sizeof(float) * ROWS * xs);
    rope_formula(&d, ROWS, W, orig, xs, p, want);
    CHECK_ST(m40_rope(C, &d, x, pos), M40_OK);
    for (int r = 0; r < ROWS; r++) memcpy(got + r * W, fdata(base) + r * xs, sizeof(float) * W);
    char name[96];
    snprintf(name, sizeof name, "rope %s h%d d%d r%d W%lld", pairs ? "half" : "adjacent", heads,
             hd, rd, (long long)W);
    /* the op's angle is FP32 (PyTorch's cache): at p = 1000 it is off the
    ** double angle by up to half an ulp of 1000 (3e-5) */
    m40t_compare(name, got, want, ROWS * W, (m40t_tol){1e-4, 1e-4, 1e-8});
    /* position 0 is the identity, bit for bit; the gap between rows is untouched */
    CHECK(memcmp(got, orig, sizeof(float) * W) == 0);
    for (int r = 0; r < ROWS; r++)
        CHECK(memcmp(fdata(base) + r * xs + W, orig + r * xs + W, sizeof(float) * (xs - W)) == 0);
    free(orig), free(want), free(got);
    m40_tensor_destroy(x), m40_tensor_destroy(base), m40_tensor_destroy(pos);
}

static void test_rope(void) {
    rope_case(M40_ROPE_ADJACENT, 2, 128, 64, 2 * 128 + 5, 2 * 128 + 9); /* ChatGLM2's heads */
    rope_case(M40_ROPE_HALF, 2, 128, 64, 256, 256);
    rope_case(M40_ROPE_HALF, 3, 8, 8, 24, 30);
    rope_case(M40_ROPE_ADJACENT, 1, 6, 2, 7, 7);

    /* a hand case: head_dim 2, θ_0 = 1: (1, 0) at position 1 is (cos 1, sin 1);
    ** (0, 2) at position 2 is (−2 sin 2, 2 cos 2) */
    m40_rope_desc d;
    m40_rope_desc_init(&d);
    d.head_dim = 2, d.rope_dims = 2;
    m40_tensor *x = m40t_f32(C, 2, 2, 2, 0, 0), *pos = i32(1, 2, 0);
    float v[4] = {1, 0, 0, 2};
    memcpy(fdata(x), v, sizeof v);
    ((int32_t *)m40_tensor_get_data(pos))[0] = 1;
    ((int32_t *)m40_tensor_get_data(pos))[1] = 2;
    CHECK_ST(m40_rope(C, &d, x, pos), M40_OK);
    float hand[4] = {(float)cos(1.0), (float)sin(1.0), (float)(-2 * sin(2.0)),
                     (float)(2 * cos(2.0))};
    m40t_compare("rope hand case", fdata(x), hand, 4, (m40t_tol){1e-6, 1e-6, 1e-12});

    /* closed form: rotating by p, then by q, is rotating by p + q; the
    ** length of every pair is kept */
    m40_rope_desc_init(&d);
    d.heads = 4, d.head_dim = 32, d.rope_dims = 16, d.pairs = M40_ROPE_HALF, d.theta = 500.0f;
    m40_tensor *a = m40t_f32(C, 2, 1, 128, 0, 0), *b = m40t_f32(C, 2, 1, 128, 0, 0);
    m40_tensor *p1 = i32(1, 1, 0);
    fill(fdata(a), 128);
    memcpy(fdata(b), fdata(a), 128 * 4);
    int32_t *pp = (int32_t *)m40_tensor_get_data(p1);
    *pp = 3;
    CHECK_ST(m40_rope(C, &d, a, p1), M40_OK);
    *pp = 5;
    CHECK_ST(m40_rope(C, &d, a, p1), M40_OK);
    float *saved = malloc(128 * 4);
    memcpy(saved, fdata(b), 128 * 4);
    *pp = 8;
    CHECK_ST(m40_rope(C, &d, b, p1), M40_OK);
    m40t_compare("rope 3 then 5 = 8", fdata(a), fdata(b), 128, (m40t_tol){1e-5, 1e-5, 1e-10});
    double worst = 0;
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < 8; i++) {
            const float *o = saved + h * 32, *n = fdata(b) + h * 32;
            double l0 = hypot(o[i], o[i + 8]), l1 = hypot(n[i], n[i + 8]);
            if (fabs(l0 - l1) > worst) worst = fabs(l0 - l1);
        }
    CHECK(worst < 1e-6);
    free(saved);

    /* bad inputs: the tensors are left as they were */
    memcpy(saved = malloc(128 * 4), fdata(a), 128 * 4);
    m40_rope_desc bad = d;
    bad.rope_dims = 15;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    CHECK(has("rope_dims 15"));
    bad.rope_dims = 34;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    bad = d, bad.heads = 5; /* 5·32 > 128 */
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_SHAPE);
    CHECK(has("heads·head_dim"));
    bad = d, bad.theta = 0.0f;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    bad = d, bad.pos_scale = NAN;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    bad = d, bad.pairs = (m40_rope_pairs)7;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    bad = d, bad.struct_size = 8;
    CHECK_ST(m40_rope(C, &bad, a, p1), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_rope(C, NULL, a, p1), M40_ERR_INVALID_ARG);
    *pp = -1; /* padding: the row passes as it is, no error */
    CHECK_ST(m40_rope(C, &d, a, p1), M40_OK);
    CHECK(memcmp(saved, fdata(a), 128 * 4) == 0);
    *pp = -2;
    CHECK_ST(m40_rope(C, &d, a, p1), M40_ERR_INVALID_ARG);
    CHECK(has("position -2") && has("negative"));
    m40_tensor *p2 = i32(1, 2, 0), *pf = m40t_f32(C, 1, 1, 0, 0, 0);
    CHECK_ST(m40_rope(C, &d, a, p2), M40_ERR_SHAPE); /* two positions for one row */
    CHECK_ST(m40_rope(C, &d, a, pf), M40_ERR_DTYPE);
    CHECK(memcmp(saved, fdata(a), 128 * 4) == 0);
    free(saved);
    m40_tensor_destroy(p2), m40_tensor_destroy(pf);
    m40_tensor_destroy(a), m40_tensor_destroy(b), m40_tensor_destroy(p1);
    m40_tensor_destroy(x), m40_tensor_destroy(pos);
}

/* ---- RMSNorm ----------------------------------------------------------------- */

static void rms_formula(int64_t rows, int64_t n, const float *x, const float *w, float eps,
                        float *y) {
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < n; c++) s += (double)x[r * n + c] * x[r * n + c];
        double k = 1.0 / sqrt(s / n + eps);
        for (int64_t c = 0; c < n; c++) y[r * n + c] = (float)(x[r * n + c] * k * w[c]);
    }
}

static void test_rmsnorm(void) {
    enum { R = 3, N = 37 };
    m40_tensor *x = m40t_f32(C, 2, R, N, 0, 0), *y = m40t_f32(C, 2, R, N, 0, 0);
    m40_tensor *w = m40t_f32(C, 1, N, 0, 0, 0), *wh = f16(1, N, 0);
    m40_tensor *res = m40t_f32(C, 2, R, N, 0, 0);
    float x0[R * N], want[R * N], wv[N], sum[R * N];
    fill(x0, R * N);
    for (int c = 0; c < N; c++) { /* f16-exact weights */
        wv[c] = (float)((c % 9) - 4) / 8.0f;
        fdata(w)[c] = wv[c];
        ((uint16_t *)m40_tensor_get_data(wh))[c] = m40__f32_to_f16(wv[c]);
    }
    const m40t_tol tol = {1e-6, 1e-5, 1e-12};
    memcpy(fdata(x), x0, sizeof x0);
    rms_formula(R, N, x0, wv, 1e-5f, want);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w, NULL, y), M40_OK);
    m40t_compare("rmsnorm f32 w", fdata(y), want, R * N, tol);
    m40t_poison(fdata(y), R * N);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, wh, NULL, y), M40_OK);
    m40t_compare("rmsnorm f16 w", fdata(y), want, R * N, tol);
    CHECK(memcmp(fdata(x), x0, sizeof x0) == 0);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w, NULL, x), M40_OK); /* in place */
    m40t_compare("rmsnorm in place", fdata(x), want, R * N, tol);

    /* the fused residual: x += r, then y = norm(x)·w */
    memcpy(fdata(x), x0, sizeof x0);
    fill(fdata(res), R * N);
    for (int i = 0; i < R * N; i++) sum[i] = x0[i] + fdata(res)[i];
    rms_formula(R, N, sum, wv, 0.5f, want);
    CHECK_ST(m40_rmsnorm(C, 0.5f, x, w, res, y), M40_OK);
    CHECK(memcmp(fdata(x), sum, sizeof sum) == 0);
    m40t_compare("rmsnorm residual", fdata(y), want, R * N, tol);

    /* bad inputs */
    memcpy(fdata(x), x0, sizeof x0);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w, res, x), M40_ERR_INVALID_ARG);
    CHECK(has("residual"));
    const float eps[] = {0.0f, -1.0f, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        CHECK_ST(m40_rmsnorm(C, eps[i], x, w, NULL, y), M40_ERR_INVALID_ARG);
        CHECK(has("eps"));
    }
    m40_tensor *w2 = m40t_f32(C, 1, N + 1, 0, 0, 0), *r2 = m40t_f32(C, 2, R + 1, N, 0, 0);
    m40_tensor *wi = i32(1, N, 0), *y2 = m40t_f32(C, 2, R, N + 1, 0, 0);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w2, NULL, y), M40_ERR_SHAPE);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w, r2, y), M40_ERR_SHAPE);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, wi, NULL, y), M40_ERR_DTYPE);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, w, NULL, y2), M40_ERR_SHAPE);
    CHECK_ST(m40_rmsnorm(C, 1e-5f, x, NULL, NULL, y), M40_ERR_INVALID_ARG);
    CHECK(memcmp(fdata(x), x0, sizeof x0) == 0);
    /* an empty x with a stride the span rule never bounds (it has no
    ** elements): nothing to do, and no overflow in the row check (UBSan) */
    {
        m40_tensor_desc de = {.dtype = M40_DTYPE_F32, .ndim = 3, .shape = {0, 2, 4},
                              .stride = {1, (int64_t)1 << 62, 1}};
        m40_tensor *xe = NULL, *w4 = m40t_f32(C, 1, 4, 0, 0, 0);
        CHECK_ST(m40_tensor_wrap(C, &de, M40_LOC_HOST, fdata(x), &xe), M40_OK);
        CHECK_ST(m40_rmsnorm(C, 1e-5f, xe, w4, NULL, xe), M40_OK);
        m40_tensor_destroy(xe), m40_tensor_destroy(w4);
    }
    m40_tensor_destroy(w2), m40_tensor_destroy(r2), m40_tensor_destroy(wi), m40_tensor_destroy(y2);
    m40_tensor_destroy(x), m40_tensor_destroy(y), m40_tensor_destroy(w), m40_tensor_destroy(wh);
    m40_tensor_destroy(res);
}

/* ---- SwiGLU and embedding ------------------------------------------------------ */

static void test_swiglu(void) {
    enum { R = 4, F = 9 };
    m40_tensor *base, *x = strided(&base, R, 2 * F, 2 * F + 3), *y = m40t_f32(C, 2, R, F, 0, 0);
    fill(fdata(base), R * (2 * F + 3));
    float want[R * F];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < F; c++) {
            float *xr = fdata(base) + r * (2 * F + 3);
            double g = 4 * xr[c], u = xr[F + c];
            xr[c] = (float)g;
            want[r * F + c] = (float)(g * u / (1 + exp(-g)));
        }
    m40t_poison(fdata(y), R * F);
    CHECK_ST(m40_swiglu(C, x, y), M40_OK);
    m40t_compare("swiglu strided rows", fdata(y), want, R * F, (m40t_tol){1e-6, 1e-5, 1e-12});
    m40_tensor *odd = m40t_f32(C, 2, R, 7, 0, 0), *ybad = m40t_f32(C, 2, R, F + 1, 0, 0);
    CHECK_ST(m40_swiglu(C, odd, y), M40_ERR_SHAPE);
    CHECK(has("even"));
    CHECK_ST(m40_swiglu(C, x, ybad), M40_ERR_SHAPE);
    m40_tensor *xi = i32(2, R, 2 * F);
    CHECK_ST(m40_swiglu(C, xi, y), M40_ERR_DTYPE);
    m40_tensor_destroy(xi), m40_tensor_destroy(odd), m40_tensor_destroy(ybad);
    m40_tensor_destroy(x), m40_tensor_destroy(base), m40_tensor_destroy(y);
}

static void test_embedding(void) {
    enum { V = 11, N = 5 };
    m40_tensor *tf = m40t_f32(C, 2, V, N, 0, 0), *th = f16(2, V, N);
    m40_tensor *ids = i32(2, 2, 3), *y = m40t_f32(C, 3, 2, 3, N, 0);
    for (int i = 0; i < V * N; i++) {
        fdata(tf)[i] = (float)(i % 13) * 0.25f - 1.0f; /* f16-exact */
        ((uint16_t *)m40_tensor_get_data(th))[i] = m40__f32_to_f16(fdata(tf)[i]);
    }
    int32_t *id = (int32_t *)m40_tensor_get_data(ids);
    const int32_t v[6] = {0, 10, 3, 3, 7, 1};
    memcpy(id, v, sizeof v);
    float want[6 * N];
    for (int i = 0; i < 6; i++)
        for (int c = 0; c < N; c++) want[i * N + c] = (float)((v[i] * N + c) % 13) * 0.25f - 1.0f;
    m40t_poison(fdata(y), 6 * N);
    CHECK_ST(m40_embedding(C, ids, tf, y), M40_OK);
    m40t_compare("embedding f32", fdata(y), want, 6 * N, (m40t_tol){0, 0, 0});
    m40t_poison(fdata(y), 6 * N);
    CHECK_ST(m40_embedding(C, ids, th, y), M40_OK);
    m40t_compare("embedding f16", fdata(y), want, 6 * N, (m40t_tol){0, 0, 0});
    /* out of range, either side: refused before anything is written */
    const int32_t badv[2] = {11, -1};
    for (int i = 0; i < 2; i++) {
        id[4] = badv[i];
        m40t_poison(fdata(y), 6 * N);
        CHECK_ST(m40_embedding(C, ids, th, y), M40_ERR_INVALID_ARG);
        CHECK(has("out of range [0, 11)") && has("index 4"));
        CHECK(isnan(fdata(y)[0]));
    }
    id[4] = 7;
    m40_tensor *yb = m40t_f32(C, 3, 2, 3, N + 1, 0), *idf = m40t_f32(C, 2, 2, 3, 0, 0);
    m40_tensor *t1 = m40t_f32(C, 1, V * N, 0, 0, 0);
    CHECK_ST(m40_embedding(C, ids, th, yb), M40_ERR_SHAPE);
    CHECK_ST(m40_embedding(C, idf, th, y), M40_ERR_DTYPE);
    CHECK_ST(m40_embedding(C, ids, t1, y), M40_ERR_SHAPE);
    CHECK_ST(m40_embedding(C, ids, ids, y), M40_ERR_DTYPE);
    m40_tensor_destroy(yb), m40_tensor_destroy(idf), m40_tensor_destroy(t1);
    m40_tensor_destroy(tf), m40_tensor_destroy(th), m40_tensor_destroy(ids), m40_tensor_destroy(y);
}

/* ---- graph nodes --------------------------------------------------------------- */

/* RMSNORM with a residual: x must be STATE; alpha 1 adds, 0 sets, others refused. */
static void test_graph_rmsnorm(void) {
    enum { R = 2, N = 8 };
    for (int role = 0; role < 2; role++)
        for (int k = 0; k < 3; k++) {
            const float alpha = k == 0 ? 1.0f : k == 1 ? 0.0f : 0.5f;
            m40_graph *g = NULL;
            CHECK_ST(m40_graph_create(C, &g), M40_OK);
            int x = tchain_tensor(g, role ? M40_ROLE_STATE : M40_ROLE_INPUT, "x", M40_DTYPE_F32,
                                  2, R, N, 0);
            int r = tchain_tensor(g, M40_ROLE_INPUT, "r", M40_DTYPE_F32, 2, R, N, 0);
            int w = tchain_tensor(g, M40_ROLE_WEIGHT, "w", M40_DTYPE_F32, 1, N, 0, 0);
            float wv[N], x0[R * N], rv[R * N], want[R * N], sum[R * N];
            for (int c = 0; c < N; c++) wv[c] = 1.0f + c * 0.125f;
            fill(x0, R * N), fill(rv, R * N);
            CHECK_ST(m40_graph_set_data(g, w, wv, sizeof wv), M40_OK);
            if (role) CHECK_ST(m40_graph_set_data(g, x, x0, sizeof x0), M40_OK);
            m40_node_desc nd;
            m40_node_desc_init(&nd, M40_OP_RMSNORM);
            nd.alpha = alpha;
            int y = tchain_node(g, &nd, "norm", 3, x, w, r);
            if (k == 2) {
                CHECK(y < 0);
                CHECK(has("alpha 0.5"));
            } else if (!role) {
                CHECK(y < 0);
                CHECK(has("STATE"));
            } else {
                CHECK(y >= 0);
                CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
                CHECK_ST(m40_graph_alloc(g), M40_OK);
                m40_tensor *tr, *tx, *ty;
                CHECK_ST(m40_graph_get_tensor(g, r, &tr), M40_OK);
                CHECK_ST(m40_graph_get_tensor(g, x, &tx), M40_OK);
                CHECK_ST(m40_graph_get_tensor(g, y, &ty), M40_OK);
                CHECK_ST(m40_tensor_upload(C, tr, rv, sizeof rv), M40_OK);
                /* two runs: alpha 1 accumulates twice, alpha 0 sets twice */
                CHECK_ST(m40_graph_run(g), M40_OK);
                CHECK_ST(m40_graph_run(g), M40_OK);
                for (int i = 0; i < R * N; i++)
                    sum[i] = alpha == 1.0f ? (x0[i] + rv[i]) + rv[i] : rv[i];
                CHECK(memcmp(fdata(tx), sum, sizeof sum) == 0);
                rms_formula(R, N, sum, wv, 1e-5f, want);
                m40t_compare(alpha == 1.0f ? "graph rmsnorm alpha 1" : "graph rmsnorm alpha 0",
                             fdata(ty), want, R * N, (m40t_tol){1e-6, 1e-5, 1e-12});
            }
            m40_graph_destroy(g);
        }
    /* without a residual x may be any tensor */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tchain_tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 2, R, N, 0);
    int w = tchain_tensor(g, M40_ROLE_WEIGHT, "w", M40_DTYPE_F16, 1, N, 0, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_RMSNORM);
    CHECK(tchain_node(g, &nd, "norm", 2, x, w, -1) >= 0);
    CHECK(m40_op_runs(M40_OP_RMSNORM) && m40_op_runs(M40_OP_ROPE) && m40_op_runs(M40_OP_SWIGLU) &&
          m40_op_runs(M40_OP_EMBEDDING) && m40_op_runs(M40_OP_TAKE_LAST));
    m40_graph_destroy(g);
}

/* The chain of chain.h against the eager ops, step by step. */
static void test_graph_chain(void) {
    enum { B = 2, T = 3, V = 10, N = TCHAIN_C };
    uint16_t table[V * N];
    float w[N], tf[V * N];
    for (int i = 0; i < V * N; i++) {
        table[i] = m40__f32_to_f16(frand());
        tf[i] = m40__f16_to_f32(table[i]);
    }
    for (int c = 0; c < N; c++) w[c] = 0.5f + frand() * 0.25f;
    const int32_t ids[B * T] = {1, 4, 9, 0, 0, 7}, pos[B * T] = {0, 1, 2, 5, 6, 7};
    tchain t = {0};
    CHECK_ST(tchain_build(C, B, T, V, table, w, &t), M40_OK);
    float out[B * N / 2], h[B * T * N];
    CHECK_ST(tchain_run(C, &t, ids, pos, B, T, out, h), M40_OK);

    /* the same with the eager ops */
    m40_tensor *ti = i32(2, B, T), *tp = i32(1, B * T, 0), *tab = f16(2, V, N);
    m40_tensor *e = m40t_f32(C, 2, B * T, N, 0, 0), *y1 = m40t_f32(C, 2, B * T, N, 0, 0);
    m40_tensor *y2 = m40t_f32(C, 2, B * T, N, 0, 0), *tw = m40t_f32(C, 1, N, 0, 0, 0);
    m40_tensor *y4 = m40t_f32(C, 2, B * T, N / 2, 0, 0), *eh = m40t_f32(C, 2, B * T, N, 0, 0);
    memcpy(m40_tensor_get_data(ti), ids, sizeof ids);
    memcpy(m40_tensor_get_data(tp), pos, sizeof pos);
    memcpy(m40_tensor_get_data(tab), table, sizeof table);
    memcpy(fdata(tw), w, sizeof w);
    int64_t s3[3] = {B, T, N};
    m40_tensor_desc d3;
    m40_tensor_desc_make(&d3, M40_DTYPE_F32, 3, s3);
    m40_tensor *e3 = NULL;
    CHECK_ST(m40_tensor_view(C, e, &d3, 0, &e3), M40_OK);
    CHECK_ST(m40_embedding(C, ti, tab, e3), M40_OK);
    memcpy(fdata(eh), fdata(e), sizeof h);                        /* h = e */
    CHECK_ST(m40_rmsnorm(C, 1e-5f, eh, tw, NULL, y1), M40_OK);     /* y1 = norm(h) */
    CHECK_ST(m40_rmsnorm(C, 1e-5f, eh, tw, y1, y2), M40_OK);       /* h += y1 */
    m40_rope_desc rd;
    m40_rope_desc_init(&rd);
    rd.heads = 3, rd.head_dim = 16, rd.rope_dims = 8;
    CHECK_ST(m40_rope(C, &rd, y2, tp), M40_OK);
    CHECK_ST(m40_swiglu(C, y2, y4), M40_OK);
    float want[B * N / 2];
    for (int b = 0; b < B; b++)
        memcpy(want + b * N / 2, fdata(y4) + (b * T + T - 1) * N / 2, sizeof(float) * N / 2);
    m40t_compare("graph chain: out", out, want, B * N / 2, (m40t_tol){0, 0, 0});
    m40t_compare("graph chain: h", h, fdata(eh), B * T * N, (m40t_tol){0, 0, 0});
    (void)tf;
    m40_graph_destroy(t.g);
    m40_tensor_destroy(e3);
    m40_tensor *all[] = {ti, tp, tab, e, y1, y2, tw, y4, eh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);

    /* TAKE_LAST refuses anything but [B,T,C] */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = tchain_tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 2, 4, 5, 0);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_TAKE_LAST);
    CHECK(tchain_node(g, &nd, "last", 1, x, -1, -1) < 0);
    CHECK(has("expected 3 dims"));
    /* ROPE with W < heads·head_dim */
    m40_node_desc_init(&nd, M40_OP_ROPE);
    int p = tchain_tensor(g, M40_ROLE_INPUT, "p", M40_DTYPE_I32, 1, 4, 0, 0);
    nd.heads = 1, nd.head_dim = 6, nd.rope_dims = 4;
    CHECK(tchain_node(g, &nd, "rope", 2, x, p, -1) < 0);
    CHECK(has("heads·head_dim"));
    m40_graph_destroy(g);
}

/* Cases a mutation run found unchecked (session 24): the position scale,
** and leading dimensions whose strides are not whole rows apart. */
static void test_row_rules(void) {
    /* pos_scale 0.5 at position 2: angle 1, so (1, 0) becomes (cos 1, sin 1) */
    m40_rope_desc d;
    m40_rope_desc_init(&d);
    d.head_dim = 2, d.rope_dims = 2, d.pos_scale = 0.5f;
    m40_tensor *x = m40t_f32(C, 2, 1, 2, 0, 0), *pos = i32(1, 1, 0);
    fdata(x)[0] = 1, fdata(x)[1] = 0;
    ((int32_t *)m40_tensor_get_data(pos))[0] = 2;
    CHECK_ST(m40_rope(C, &d, x, pos), M40_OK);
    CHECK(fabs(fdata(x)[0] - cos(1.0)) < 1e-6 && fabs(fdata(x)[1] - sin(1.0)) < 1e-6);
    m40_tensor_destroy(x), m40_tensor_destroy(pos);

    /* x [2,2,2] over a base of 16 with strides (8, 2, 1): rows 0-1 and 4-5
    ** of the base, with base[4..8) a gap no row owns. RoPE and RMSNorm take
    ** rows as (rows, W) with one row stride: refused, the gap untouched */
    m40_tensor *base = m40t_f32(C, 1, 16, 0, 0, 0), *v = NULL, *p2 = i32(2, 2, 2);
    int64_t s[3] = {2, 2, 2};
    m40_tensor_desc vd;
    m40_tensor_desc_make(&vd, M40_DTYPE_F32, 3, s);
    vd.stride[0] = 8, vd.stride[1] = 2, vd.stride[2] = 1;
    CHECK_ST(m40_tensor_view(C, base, &vd, 0, &v), M40_OK);
    for (int i = 0; i < 16; i++) fdata(base)[i] = (float)i + 1;
    for (int i = 0; i < 4; i++) ((int32_t *)m40_tensor_get_data(p2))[i] = 1;
    d.pos_scale = 1.0f;
    CHECK_ST(m40_rope(C, &d, v, p2), M40_ERR_UNSUPPORTED);
    m40_tensor *w = m40t_f32(C, 1, 2, 0, 0, 0);
    fdata(w)[0] = fdata(w)[1] = 1;
    CHECK_ST(m40_rmsnorm(C, 1e-5f, v, w, NULL, v), M40_ERR_UNSUPPORTED);
    for (int i = 0; i < 16; i++) CHECK(fdata(base)[i] == (float)i + 1);
    m40_tensor_destroy(v), m40_tensor_destroy(base), m40_tensor_destroy(p2), m40_tensor_destroy(w);
}

int main(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &C) != M40_OK) return 1;
    test_rope();
    test_row_rules();
    test_rmsnorm();
    test_swiglu();
    test_embedding();
    test_graph_rmsnorm();
    test_graph_chain();
    m40_ctx_destroy(C);
    return m40t_finish("test_transformer_ops");
}
