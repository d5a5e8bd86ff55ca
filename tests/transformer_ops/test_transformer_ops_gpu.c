/* Issue 16 on a GPU: every small transformer op (RMSNorm with and without
** the residual, RoPE in both layouts, SwiGLU, embedding from f16 and f32
** tables, TAKE_LAST) against the same op on a CPU context, on seeded
** random data with odd shapes, strided rows and poisoned outputs; the index
** guard (a bad embedding id, a negative position) reported at the next
** m40_ctx_sync; and the chain of chain.h on the GPU against the CPU.
** Exits 77 without a GPU. */
#include "check.h"
#include "chain.h"
#include "half.h"
#include "m40/transformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *G, *H; /* the GPU and a CPU context */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static void fill(float *p, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) p[i] = frand() * scale;
}

/* A contiguous tensor on c, with data when given (exits when it cannot). */
static m40_tensor *mk(m40_ctx *c, m40_dtype dt, int nd, int64_t a, int64_t b, int64_t e,
                      const void *data) {
    int64_t s[3] = {a, b, e};
    m40_tensor *t = NULL;
    if (m40_tensor_new(c, dt, nd, s, &t) != M40_OK) {
        fprintf(stderr, "tensor: %s\n", m40_errmsg(c));
        exit(1);
    }
    if (data && m40_tensor_upload(c, t, data, m40_tensor_get_nbytes(t)) != M40_OK) exit(1);
    return t;
}
/* A [rows, W] view at row stride `stride` of base (a [rows, stride] tensor). */
static m40_tensor *view(m40_ctx *c, m40_tensor *base, int64_t rows, int64_t W, int64_t stride) {
    int64_t s[2] = {rows, W};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    d.stride[0] = stride;
    m40_tensor *v = NULL;
    if (m40_tensor_view(c, base, &d, 0, &v) != M40_OK) exit(1);
    return v;
}
static void get(m40_ctx *c, const m40_tensor *t, void *dst) {
    CHECK_ST(m40_tensor_download(c, t, dst, m40_tensor_get_nbytes(t)), M40_OK);
}
static int has(const char *s) { return strstr(m40_errmsg(G), s) != NULL; }

/* ---- RMSNorm ------------------------------------------------------------------- */

static void rms_case(int64_t C, int64_t R, int w16, int residual, int64_t xs, int inplace) {
    float *x0 = malloc(sizeof(float) * R * xs), *r0 = malloc(sizeof(float) * R * C);
    float *w0 = malloc(sizeof(float) * C), *yp = malloc(sizeof(float) * R * C);
    float *gx = malloc(sizeof(float) * R * xs), *gy = malloc(sizeof(float) * R * C);
    float *hx = malloc(sizeof(float) * R * xs), *hy = malloc(sizeof(float) * R * C);
    uint16_t *wh = malloc(2 * C);
    fill(x0, R * xs, 2.0f), fill(r0, R * C, 1.0f), fill(w0, C, 1.5f);
    for (int64_t c = 0; c < C; c++) wh[c] = m40__f32_to_f16(w0[c]);
    m40t_poison(yp, R * C);
    m40_dtype wdt = w16 ? M40_DTYPE_F16 : M40_DTYPE_F32;
    const void *wd = w16 ? (const void *)wh : (const void *)w0;
    m40_ctx *cs[2] = {G, H};
    float *ox[2] = {gx, hx}, *oy[2] = {gy, hy};
    for (int k = 0; k < 2; k++) {
        m40_ctx *c = cs[k];
        m40_tensor *xb = mk(c, M40_DTYPE_F32, 2, R, xs, 0, x0), *x = view(c, xb, R, C, xs);
        m40_tensor *w = mk(c, wdt, 1, C, 0, 0, wd);
        m40_tensor *r = residual ? mk(c, M40_DTYPE_F32, 2, R, C, 0, r0) : NULL;
        m40_tensor *y = inplace ? x : mk(c, M40_DTYPE_F32, 2, R, C, 0, yp);
        CHECK_ST(m40_rmsnorm(c, 1e-5f, x, w, r, y), M40_OK);
        CHECK_ST(m40_ctx_sync(c), M40_OK);
        get(c, xb, ox[k]);
        if (!inplace) get(c, y, oy[k]);
        m40_tensor_destroy(x), m40_tensor_destroy(xb), m40_tensor_destroy(w);
        m40_tensor_destroy(r);
        if (!inplace) m40_tensor_destroy(y);
    }
    char name[96];
    snprintf(name, sizeof name, "rmsnorm C%lld R%lld%s%s xs%lld%s", (long long)C, (long long)R,
             w16 ? " w16" : "", residual ? " +res" : "", (long long)xs, inplace ? " inplace" : "");
    const m40t_tol tol = {1e-5, 1e-4, 1e-10};
    if (inplace) {
        m40t_compare(name, gx, hx, R * xs, tol);
    } else {
        /* x: the residual sum is the same FP32 add on both sides; gaps untouched */
        CHECK(memcmp(gx, hx, sizeof(float) * R * xs) == 0);
        m40t_compare(name, gy, hy, R * C, tol);
    }
    free(x0), free(r0), free(w0), free(yp), free(gx), free(gy), free(hx), free(hy), free(wh);
}

static void test_rmsnorm(void) {
    const int64_t Cs[] = {1, 7, 4096, 16384}, Rs[] = {1, 3, 64, 129};
    int k = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++, k++)
            rms_case(Cs[i], Rs[j], k % 2, k % 3 != 0, Cs[i] + (k % 2 ? 4 : 0), 0);
    rms_case(4096, 5, 0, 1, 4097, 0);   /* odd stride: the scalar path */
    rms_case(16384, 3, 1, 0, 16384, 1); /* in place */
    rms_case(300, 129, 1, 0, 300, 1);   /* warp per row, in place */
}

/* ---- RoPE ---------------------------------------------------------------------- */

static void rope_case(m40_rope_pairs pairs, int heads, int hd, int rd, int64_t W, int64_t R,
                      int64_t xs, int maxpos, double atol) {
    m40_rope_desc d;
    m40_rope_desc_init(&d);
    d.heads = heads, d.head_dim = hd, d.rope_dims = rd, d.pairs = pairs;
    float *x0 = malloc(sizeof(float) * R * xs), *gx = malloc(sizeof(float) * R * xs);
    float *hx = malloc(sizeof(float) * R * xs);
    int32_t *p = malloc(sizeof(int32_t) * R);
    fill(x0, R * xs, 1.0f);
    for (int64_t r = 0; r < R; r++) {
        frand();
        p[r] = (int32_t)((rng >> 20) % (uint64_t)maxpos);
    }
    m40_ctx *cs[2] = {G, H};
    float *ox[2] = {gx, hx};
    for (int k = 0; k < 2; k++) {
        m40_tensor *xb = mk(cs[k], M40_DTYPE_F32, 2, R, xs, 0, x0), *x = view(cs[k], xb, R, W, xs);
        m40_tensor *pos = mk(cs[k], M40_DTYPE_I32, 1, R, 0, 0, p);
        CHECK_ST(m40_rope(cs[k], &d, x, pos), M40_OK);
        CHECK_ST(m40_ctx_sync(cs[k]), M40_OK);
        get(cs[k], xb, ox[k]);
        m40_tensor_destroy(x), m40_tensor_destroy(xb), m40_tensor_destroy(pos);
    }
    char name[96];
    snprintf(name, sizeof name, "rope %s h%d d%d r%d W%lld R%lld xs%lld",
             pairs ? "half" : "adj", heads, hd, rd, (long long)W, (long long)R, (long long)xs);
    m40t_compare(name, gx, hx, R * xs, (m40t_tol){atol, 1e-5, 1e-10});
    free(x0), free(gx), free(hx), free(p);
}

static void test_rope(void) {
    const int64_t Rs[] = {1, 3, 64, 129};
    for (int j = 0; j < 4; j++) {
        /* a ChatGLM2 qkv row: Q and K heads (34 of 128, 64 rotated), V passes */
        rope_case(M40_ROPE_ADJACENT, 34, 128, 64, 4608, Rs[j], 4608, 32768, 2e-6);
        rope_case(M40_ROPE_HALF, 32, 128, 128, 4096, Rs[j], 4096 + 4, 8192, 2e-6);
        rope_case(M40_ROPE_ADJACENT, 3, 7, 6, 23, Rs[j], 25, 4096, 2e-6); /* odd: scalar */
    }
    /* rope_dims past 512: pairs past the host table use powf */
    rope_case(M40_ROPE_ADJACENT, 1, 1024, 1024, 1024, 5, 1024, 64, 1e-4);
    rope_case(M40_ROPE_HALF, 2, 1024, 800, 2048, 3, 2051, 64, 1e-4);

    /* the guard: a negative position is reported at the next sync, its row
    ** left as it was; the others rotate */
    m40_rope_desc d;
    m40_rope_desc_init(&d);
    d.heads = 2, d.head_dim = 8, d.rope_dims = 8;
    float x0[3 * 16], gx[3 * 16], hx[3 * 16];
    fill(x0, 48, 1.0f);
    int32_t p[3] = {4, -3, 9}, pc[3] = {4, 0, 9};
    m40_tensor *x = mk(G, M40_DTYPE_F32, 2, 3, 16, 0, x0);
    m40_tensor *pos = mk(G, M40_DTYPE_I32, 1, 3, 0, 0, p);
    CHECK_ST(m40_rope(G, &d, x, pos), M40_OK);
    CHECK_ST(m40_ctx_sync(G), M40_ERR_INVALID_ARG);
    CHECK(has("rope position -3"));
    CHECK_ST(m40_ctx_sync(G), M40_OK); /* cleared */
    get(G, x, gx);
    m40_tensor *hxt = mk(H, M40_DTYPE_F32, 2, 3, 16, 0, x0);
    m40_tensor *hp = mk(H, M40_DTYPE_I32, 1, 3, 0, 0, pc);
    CHECK_ST(m40_rope(H, &d, hxt, hp), M40_OK);
    get(H, hxt, hx);
    memcpy(hx + 16, x0 + 16, 16 * sizeof(float));
    m40t_compare("rope guard: bad row untouched", gx, hx, 48, (m40t_tol){2e-6, 1e-5, 1e-10});
    m40_tensor_destroy(x), m40_tensor_destroy(pos), m40_tensor_destroy(hxt), m40_tensor_destroy(hp);
}

/* ---- SwiGLU and embedding --------------------------------------------------------- */

static void swiglu_case(int64_t F, int64_t R, int64_t xs) {
    float *x0 = malloc(sizeof(float) * R * xs), *yp = malloc(sizeof(float) * R * F);
    float *gy = malloc(sizeof(float) * R * F), *hy = malloc(sizeof(float) * R * F);
    fill(x0, R * xs, 6.0f);
    m40t_poison(yp, R * F);
    m40_ctx *cs[2] = {G, H};
    float *oy[2] = {gy, hy};
    for (int k = 0; k < 2; k++) {
        m40_tensor *xb = mk(cs[k], M40_DTYPE_F32, 2, R, xs, 0, x0);
        m40_tensor *x = view(cs[k], xb, R, 2 * F, xs);
        m40_tensor *y = mk(cs[k], M40_DTYPE_F32, 2, R, F, 0, yp);
        CHECK_ST(m40_swiglu(cs[k], x, y), M40_OK);
        get(cs[k], y, oy[k]);
        m40_tensor_destroy(x), m40_tensor_destroy(xb), m40_tensor_destroy(y);
    }
    char name[96];
    snprintf(name, sizeof name, "swiglu F%lld R%lld xs%lld", (long long)F, (long long)R,
             (long long)xs);
    m40t_compare(name, gy, hy, R * F, (m40t_tol){1e-6, 1e-5, 1e-12});
    free(x0), free(yp), free(gy), free(hy);
}

static void test_swiglu(void) {
    const int64_t Fs[] = {1, 7, 4096, 13696}, Rs[] = {1, 3, 64, 129};
    int k = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++, k++) /* row strides: +0, +4, +8, some odd */
            swiglu_case(Fs[i], Rs[j], 2 * Fs[i] + (k % 3) * 4 + (k % 5 == 0));
}

static void embedding_case(int64_t V, int64_t C, int64_t n, int f16) {
    /* one table of the two kinds (ChatGLM2's f16 one is 512 MiB: no f32 copy) */
    float *t0 = f16 ? NULL : malloc(sizeof(float) * V * C), *yp = malloc(sizeof(float) * n * C);
    float *gy = malloc(sizeof(float) * n * C), *hy = malloc(sizeof(float) * n * C);
    uint16_t *th = f16 ? malloc(2 * V * C) : NULL;
    int32_t *ids = malloc(sizeof(int32_t) * n);
    for (int64_t i = 0; i < V * C; i++) {
        float v = frand() * 3.0f;
        if (f16) th[i] = m40__f32_to_f16(v);
        else t0[i] = v;
    }
    for (int64_t i = 0; i < n; i++) {
        frand();
        ids[i] = (int32_t)((rng >> 17) % (uint64_t)V);
    }
    ids[n - 1] = (int32_t)V - 1;
    m40t_poison(yp, n * C);
    m40_ctx *cs[2] = {G, H};
    float *oy[2] = {gy, hy};
    for (int k = 0; k < 2; k++) {
        m40_tensor *t = f16 ? mk(cs[k], M40_DTYPE_F16, 2, V, C, 0, th)
                            : mk(cs[k], M40_DTYPE_F32, 2, V, C, 0, t0);
        m40_tensor *id = mk(cs[k], M40_DTYPE_I32, 1, n, 0, 0, ids);
        m40_tensor *y = mk(cs[k], M40_DTYPE_F32, 2, n, C, 0, yp);
        CHECK_ST(m40_embedding(cs[k], id, t, y), M40_OK);
        CHECK_ST(m40_ctx_sync(cs[k]), M40_OK);
        get(cs[k], y, oy[k]);
        m40_tensor_destroy(t), m40_tensor_destroy(id), m40_tensor_destroy(y);
    }
    char name[96];
    snprintf(name, sizeof name, "embedding V%lld C%lld n%lld %s", (long long)V, (long long)C,
             (long long)n, f16 ? "f16" : "f32");
    m40t_compare(name, gy, hy, n * C, (m40t_tol){0, 0, 0});
    free(t0), free(yp), free(gy), free(hy), free(th), free(ids);
}

static void test_embedding(void) {
    const int64_t Cs[] = {1, 7, 4096}, ns[] = {1, 3, 64, 129};
    int k = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++, k++) embedding_case(i == 2 ? 300 : 1000, Cs[i], ns[j], k % 2);
    embedding_case(65024, 4096, 3, 1); /* ChatGLM2's table */

    /* the guard: id 70000 of 65024 is reported at the next sync; its row is zeros */
    const int64_t V = 65024, C = 8;
    uint16_t *ones = malloc(2 * V * C);
    for (int64_t i = 0; i < V * C; i++) ones[i] = 0x3C00u; /* 1.0 */
    m40_tensor *t = mk(G, M40_DTYPE_F16, 2, V, C, 0, ones);
    m40_tensor *y = mk(G, M40_DTYPE_F32, 2, 3, C, 0, NULL);
    free(ones);
    int32_t bad[3] = {5, 70000, -1};
    m40_tensor *id = mk(G, M40_DTYPE_I32, 1, 3, 0, 0, bad);
    CHECK_ST(m40_embedding(G, id, t, y), M40_OK);
    CHECK_ST(m40_ctx_sync(G), M40_ERR_INVALID_ARG);
    CHECK(has("embedding id") && has("out of range [0, 65024)") && has("2 times"));
    CHECK_ST(m40_ctx_sync(G), M40_OK);
    float got[3 * 8], want[3 * 8] = {0};
    for (int c = 0; c < 8; c++) want[c] = 1.0f;
    get(G, y, got);
    m40t_compare("embedding guard: zero rows", got, want, 24, (m40t_tol){0, 0, 0});
    m40_tensor_destroy(t), m40_tensor_destroy(y), m40_tensor_destroy(id);
}

/* ---- graphs --------------------------------------------------------------------- */

static void take_last_case(int64_t B, int64_t T, int64_t C) {
    float *x0 = malloc(sizeof(float) * B * T * C), *out[2];
    fill(x0, B * T * C, 1.0f);
    m40_ctx *cs[2] = {G, H};
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(sizeof(float) * B * C);
        m40t_poison(out[k], B * C);
        m40_graph *g = NULL;
        CHECK_ST(m40_graph_create(cs[k], &g), M40_OK);
        int x = tchain_tensor(g, M40_ROLE_INPUT, "x", M40_DTYPE_F32, 3, B, T, C);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_TAKE_LAST);
        int y = tchain_node(g, &nd, "last", 1, x, -1, -1);
        CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
        CHECK_ST(m40_graph_alloc(g), M40_OK);
        m40_tensor *tx, *ty;
        CHECK_ST(m40_graph_get_tensor(g, x, &tx), M40_OK);
        CHECK_ST(m40_graph_get_tensor(g, y, &ty), M40_OK);
        CHECK_ST(m40_tensor_upload(cs[k], ty, out[k], sizeof(float) * B * C), M40_OK);
        CHECK_ST(m40_tensor_upload(cs[k], tx, x0, sizeof(float) * B * T * C), M40_OK);
        CHECK_ST(m40_graph_run(g), M40_OK);
        get(cs[k], ty, out[k]);
        m40_graph_destroy(g);
    }
    char name[64];
    snprintf(name, sizeof name, "take_last B%lld T%lld C%lld", (long long)B, (long long)T,
             (long long)C);
    m40t_compare(name, out[0], out[1], B * C, (m40t_tol){0, 0, 0});
    free(x0), free(out[0]), free(out[1]);
}

static void test_chain(void) {
    enum { B = 3, T = 5, V = 50, N = TCHAIN_C };
    uint16_t table[V * N];
    float w[N];
    for (int i = 0; i < V * N; i++) table[i] = m40__f32_to_f16(frand());
    for (int c = 0; c < N; c++) w[c] = 0.5f + frand() * 0.25f;
    int32_t ids[B * T], pos[B * T];
    for (int i = 0; i < B * T; i++) ids[i] = (i * 7 + 3) % V, pos[i] = 11 + i;
    tchain tg = {0}, th = {0};
    CHECK_ST(tchain_build(G, B, T, V, table, w, &tg), M40_OK);
    CHECK_ST(tchain_build(H, B, T, V, table, w, &th), M40_OK);
    float go[B * N / 2], ho[B * N / 2], gh[B * T * N], hh[B * T * N];
    for (int run = 0; run < 2; run++) { /* the second run: h is set again (alpha 0) */
        CHECK_ST(tchain_run(G, &tg, ids, pos, B, T, go, gh), M40_OK);
        CHECK_ST(tchain_run(H, &th, ids, pos, B, T, ho, hh), M40_OK);
        m40t_compare("chain gpu vs cpu: out", go, ho, B * N / 2, (m40t_tol){1e-5, 1e-4, 1e-10});
        m40t_compare("chain gpu vs cpu: h", gh, hh, B * T * N, (m40t_tol){1e-6, 1e-5, 1e-10});
    }
    m40_graph_destroy(tg.g), m40_graph_destroy(th.g);
}

int main(void) {
    G = m40t_gpu_ctx_or_skip("test_transformer_ops_gpu");
    if (!G) return M40T_SKIP;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &H) != M40_OK) return 1;
    test_rmsnorm();
    test_rope();
    test_swiglu();
    test_embedding();
    take_last_case(3, 5, 7);
    take_last_case(2, 129, 4096);
    take_last_case(1, 1, 1);
    test_chain();
    m40_ctx_destroy(H);
    m40_ctx_destroy(G);
    return m40t_finish("test_transformer_ops_gpu");
}
