/* m40_kv_append and m40_attention on the GPU against the CPU reference
** (the same ops on a CPU context: lib/ref/attention.c, double sums) on
** seeded random data: f16 and f32 caches; head dims 64, 128, 80, 20, 256;
** T = 1, 7 (decode kernel, split over the KV length) and 9, 129, 1000,
** 4097 (prefill kernel); contexts up to 32768 (rows sampled for the CPU
** reference); q as a strided view into qkv rows; slot mapping; sequences of
** different lengths with -1 padding; non-contiguous positions; outputs
** poisoned first; the caches compared bit for bit after the appends. Then
** decode (one token at a time) == one prefill pass, the index guard
** reported at m40_ctx_sync, and a graph with an ATTENTION node. Exits 77
** without a GPU. */
#include "check.h"
#include "half.h"     /* m40__f16_to_f32: the caches compared */
#include "internal.h" /* m40__attn_decode_variant */
#include "m40/transformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C, *X; /* the CPU reference, the GPU */
static const m40t_tol TOL = {2e-5, 2e-4, 1e-9};

static int has(m40_ctx *ctx, const char *needle) {
    if (strstr(m40_errmsg(ctx), needle)) return 1;
    fprintf(stderr, "message lacks '%s': %s\n", needle, m40_errmsg(ctx));
    return 0;
}

static void fill(float *p, int64_t n, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((seed >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
    }
}

static m40_tensor *tnew(m40_ctx *ctx, m40_dtype dt, int nd, int64_t a, int64_t b, int64_t c,
                        int64_t d) {
    int64_t s[4] = {a, b, c, d};
    m40_tensor *t = NULL;
    if (m40_tensor_new(ctx, dt, nd, s, &t) != M40_OK) {
        fprintf(stderr, "m40_tensor_new: %s\n", m40_errmsg(ctx));
        exit(1);
    }
    return t;
}

/* A tensor on ctx holding `host` (its bytes). */
static m40_tensor *with(m40_ctx *ctx, m40_dtype dt, int nd, int64_t a, int64_t b, int64_t c,
                        int64_t d, const void *host) {
    m40_tensor *t = tnew(ctx, dt, nd, a, b, c, d);
    if (host) CHECK_ST(m40_tensor_upload(ctx, t, host, m40_tensor_get_nbytes(t)), M40_OK);
    return t;
}

static m40_tensor *cols_of(m40_ctx *ctx, m40_tensor *qkv, int64_t col0, int64_t cols) {
    m40_tensor_desc v = *m40_tensor_get_desc(qkv);
    v.shape[2] = cols;
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_view(ctx, qkv, &v, col0, &t), M40_OK);
    return t;
}

/* Caches [S,L,G,D] of dtype cdt on the CPU filled with seeded values (by
** m40_kv_append of every position), and a copy on the GPU. */
static void make_caches(int S, int L, int G, int D, m40_dtype cdt, uint64_t seed,
                        m40_tensor *cc[2], m40_tensor *gc[2]) {
    const int64_t n = (int64_t)S * L * G * D;
    float *h = malloc((size_t)n * sizeof *h);
    int32_t *p = malloc((size_t)S * L * sizeof *p);
    for (int64_t i = 0; i < (int64_t)S * L; i++) p[i] = (int32_t)(i % L);
    m40_tensor *pt = with(C, M40_DTYPE_I32, 2, S, L, 0, 0, p);
    for (int k = 0; k < 2; k++) {
        fill(h, n, seed + (uint64_t)k);
        m40_tensor *kv = with(C, M40_DTYPE_F32, 3, S, L, (int64_t)G * D, 0, h);
        cc[k] = tnew(C, cdt, 4, S, L, G, D);
        CHECK_ST(m40_kv_append(C, kv, pt, NULL, cc[k]), M40_OK);
        gc[k] = with(X, cdt, 4, S, L, G, D, m40_tensor_get_data(cc[k]));
        m40_tensor_destroy(kv);
    }
    m40_tensor_destroy(pt);
    free(p);
    free(h);
}

typedef struct acase {
    const char *name;
    int B, T, H, G, D, S, L;
    m40_dtype cdt;
    float scale;
    int nsample; /* 0: every row against the CPU reference, else this many rows */
} acase;

/* The new rows (qkv) appended at pos/slot, then attention, on both sides. */
/* M40_ATTN_QUICK=1 (the sanitizers, scripts/gpu-sanitize.sh): the cases
** whose attention does over 2^22 (row, key) pairs are skipped; =2
** (racecheck, which instruments every shared-memory access): over 2^17,
** and decode == prefill over 40 tokens instead of 300. */
static int quick;

static void run_case(acase c, const int32_t *pos, const int32_t *slot) {
    if (quick && (int64_t)c.B * c.T * c.H * c.L > (quick > 1 ? 1 << 17 : 1 << 22)) {
        printf("skip (M40_ATTN_QUICK) %s: B%d T%d H%d L%lld\n", c.name, c.B, c.T, c.H, (long long)c.L);
        return;
    }
    const int64_t W = (int64_t)(c.H + 2 * c.G) * c.D, HD = (int64_t)c.H * c.D;
    const int64_t GD = (int64_t)c.G * c.D, BT = (int64_t)c.B * c.T;
    m40_tensor *cc[2], *gc[2];
    make_caches(c.S, c.L, c.G, c.D, c.cdt, (uint64_t)c.L * 31 + c.D, cc, gc);
    float *x = malloc((size_t)(BT * W) * sizeof *x);
    fill(x, BT * W, 99 + (uint64_t)c.T);
    m40_tensor *cq = with(C, M40_DTYPE_F32, 3, c.B, c.T, W, 0, x),
               *gq = with(X, M40_DTYPE_F32, 3, c.B, c.T, W, 0, x);
    m40_tensor *cp = with(C, M40_DTYPE_I32, 2, c.B, c.T, 0, 0, pos),
               *gp = with(X, M40_DTYPE_I32, 2, c.B, c.T, 0, 0, pos);
    m40_tensor *cs = slot ? with(C, M40_DTYPE_I32, 1, c.B, 0, 0, 0, slot) : NULL,
               *gs = slot ? with(X, M40_DTYPE_I32, 1, c.B, 0, 0, 0, slot) : NULL;
    m40_attention_desc ad;
    m40_attention_desc_init(&ad);
    ad.heads = c.H, ad.kv_heads = c.G, ad.head_dim = c.D, ad.scale = c.scale;
    /* appends on both sides; the caches must agree bit for bit */
    m40_tensor *v[6] = {cols_of(C, cq, HD, GD), cols_of(C, cq, HD + GD, GD), cols_of(X, gq, HD, GD),
                        cols_of(X, gq, HD + GD, GD), cols_of(C, cq, 0, HD), cols_of(X, gq, 0, HD)};
    for (int k = 0; k < 2; k++) {
        CHECK_ST(m40_kv_append(C, v[k], cp, cs, cc[k]), M40_OK);
        CHECK_ST(m40_kv_append(X, v[2 + k], gp, gs, gc[k]), M40_OK);
    }
    float *y = malloc((size_t)(BT * HD) * sizeof *y);
    m40t_poison(y, BT * HD);
    m40_tensor *gy = with(X, M40_DTYPE_F32, 3, c.B, c.T, HD, 0, y);
    CHECK_ST(m40_attention(X, &ad, v[5], gc[0], gc[1], gp, gs, gy), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_OK);
    CHECK_ST(m40_tensor_download(X, gy, y, (size_t)(BT * HD) * sizeof *y), M40_OK);
    size_t cb = m40_tensor_get_nbytes(cc[0]);
    void *dl = malloc(cb);
    for (int k = 0; k < 2; k++) {
        CHECK_ST(m40_tensor_download(X, gc[k], dl, cb), M40_OK);
        CHECK(memcmp(dl, m40_tensor_get_data(cc[k]), cb) == 0);
    }
    free(dl);

    /* the reference: every row, or nsample rows (b, t) spread over the call */
    char name[160];
    snprintf(name, sizeof name, "%s: B%d T%d H%d G%d D%d L%d %s", c.name, c.B, c.T, c.H, c.G,
             c.D, c.L, m40_dtype_name(c.cdt));
    if (c.nsample == 0) {
        m40_tensor *ry = tnew(C, M40_DTYPE_F32, 3, c.B, c.T, HD, 0);
        CHECK_ST(m40_attention(C, &ad, v[4], cc[0], cc[1], cp, cs, ry), M40_OK);
        m40t_compare(name, y, m40_tensor_get_data(ry), BT * HD, TOL);
        m40_tensor_destroy(ry);
    } else {
        float *got = malloc((size_t)c.nsample * HD * sizeof *got);
        float *ref = malloc((size_t)c.nsample * HD * sizeof *ref);
        m40_tensor *rq = tnew(C, M40_DTYPE_F32, 3, 1, 1, HD, 0), *rp = tnew(C, M40_DTYPE_I32, 2, 1, 1, 0, 0);
        m40_tensor *rs = tnew(C, M40_DTYPE_I32, 1, 1, 0, 0, 0), *ry = tnew(C, M40_DTYPE_F32, 3, 1, 1, HD, 0);
        for (int k = 0; k < c.nsample; k++) {
            int64_t r = c.nsample == 1 ? BT - 1 : (BT - 1) * k / (c.nsample - 1), b = r / c.T;
            memcpy(m40_tensor_get_data(rq), x + r * W, (size_t)HD * sizeof(float));
            *(int32_t *)m40_tensor_get_data(rp) = pos[r];
            *(int32_t *)m40_tensor_get_data(rs) = slot ? slot[b] : (int32_t)b;
            CHECK_ST(m40_attention(C, &ad, rq, cc[0], cc[1], rp, rs, ry), M40_OK);
            memcpy(ref + k * HD, m40_tensor_get_data(ry), (size_t)HD * sizeof(float));
            memcpy(got + k * HD, y + r * HD, (size_t)HD * sizeof(float));
        }
        snprintf(name + strlen(name), sizeof name - strlen(name), " (%d rows)", c.nsample);
        m40t_compare(name, got, ref, (int64_t)c.nsample * HD, TOL);
        m40_tensor *t[] = {rq, rp, rs, ry};
        for (int k = 0; k < 4; k++) m40_tensor_destroy(t[k]);
        free(got);
        free(ref);
    }
    m40_tensor *all[] = {cc[0], cc[1], gc[0], gc[1], cq, gq, cp, gp, cs, gs, gy,
                         v[0], v[1], v[2], v[3], v[4], v[5]};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) m40_tensor_destroy(all[k]);
    free(x);
    free(y);
}

/* pos of B sequences of T rows: sequence b has n[b] rows (the rest -1) at
** start[b] + t·step[b]. */
static int32_t *positions(int B, int T, const int *n, const int *start, const int *step) {
    int32_t *p = malloc((size_t)B * T * sizeof *p);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) p[b * T + t] = t < n[b] ? start[b] + t * step[b] : -1;
    return p;
}

static void kernels_vs_reference(void) {
    const m40_dtype F16 = M40_DTYPE_F16, F32 = M40_DTYPE_F32;
    /* decode, one sequence at the end of a 32K context (ChatGLM2's heads) */
    {
        int n[1] = {1}, st[1] = {32767}, sp[1] = {1};
        int32_t *p = positions(1, 1, n, st, sp);
        run_case((acase){"decode 32K", 1, 1, 32, 2, 128, 1, 32768, F16, 0.0f, 0}, p, NULL);
        free(p);
    }
    /* decode, 4 sequences of different lengths, slots, one padded; f16 and f32 */
    {
        int n[4] = {1, 1, 0, 1}, st[4] = {8191, 100, 0, 4000}, sp[4] = {1, 1, 1, 1};
        int32_t *p = positions(4, 1, n, st, sp), slot[4] = {5, 0, 3, 2};
        run_case((acase){"decode mixed", 4, 1, 8, 2, 128, 6, 8192, F16, 0.0f, 0}, p, slot);
        run_case((acase){"decode mixed", 4, 1, 8, 2, 64, 6, 8192, F32, 1.0f, 0}, p, slot);
        free(p);
    }
    /* T = 3, 4 heads a group: 12 rows of three positions in one decode
    ** block (decode v2's per-row masks), the second sequence padded */
    {
        int n[2] = {3, 2}, st[2] = {70, 4}, sp[2] = {2, 1};
        int32_t *p = positions(2, 3, n, st, sp);
        run_case((acase){"T3 12 rows", 2, 3, 8, 2, 128, 2, 256, F16, 0.0f, 0}, p, NULL);
        run_case((acase){"T3 12 rows", 2, 3, 8, 2, 64, 2, 256, F32, 0.0f, 0}, p, NULL);
        free(p);
    }
    /* T = 7 (decode kernel, rows > 16: the prefill tiles split), non-contiguous */
    {
        int n[2] = {7, 4}, st[2] = {1000, 30}, sp[2] = {3, 1};
        int32_t *p = positions(2, 7, n, st, sp), slot[2] = {1, 0};
        run_case((acase){"T7 strided pos", 2, 7, 16, 2, 64, 2, 2048, F32, 0.0f, 0}, p, slot);
        run_case((acase){"T7 strided pos", 2, 7, 16, 2, 128, 2, 2048, F16, 0.0f, 0}, p, slot);
        free(p);
    }
    /* odd head dims: 80 (the 128 path), 20 (scalar loads), 256 */
    {
        int n[2] = {1, 1}, st[2] = {511, 300}, sp[2] = {1, 1};
        int32_t *p = positions(2, 1, n, st, sp);
        run_case((acase){"D80 decode", 2, 1, 4, 4, 80, 2, 512, F16, 0.0f, 0}, p, NULL);
        run_case((acase){"D20 decode", 2, 1, 6, 2, 20, 2, 512, F16, 0.0f, 0}, p, NULL);
        run_case((acase){"D256 decode", 2, 1, 4, 2, 256, 2, 512, F32, 0.0f, 0}, p, NULL);
        free(p);
        int n2[2] = {129, 77}, st2[2] = {0, 200}, sp2[2] = {1, 2};
        int32_t *q = positions(2, 129, n2, st2, sp2);
        run_case((acase){"D80 prefill", 2, 129, 4, 4, 80, 2, 512, F16, 0.0f, 0}, q, NULL);
        run_case((acase){"D20 prefill", 2, 129, 6, 2, 20, 2, 512, F32, 0.0f, 0}, q, NULL);
        run_case((acase){"D256 prefill", 2, 129, 4, 2, 256, 2, 512, F16, 0.0f, 0}, q, NULL);
        free(q);
    }
    /* prefill: T 9, 129 (mixed lengths, padding, slots), 1000, 4097, and a
    ** chunk at the end of a 32K context */
    {
        int n[3] = {9, 5, 0}, st[3] = {0, 17, 0}, sp[3] = {1, 1, 1};
        int32_t *p = positions(3, 9, n, st, sp), slot[3] = {2, 0, 1};
        run_case((acase){"prefill T9", 3, 9, 8, 2, 128, 3, 64, F16, 0.0f, 0}, p, slot);
        free(p);
        int n2[2] = {129, 100}, st2[2] = {0, 40}, sp2[2] = {1, 1};
        p = positions(2, 129, n2, st2, sp2);
        int32_t slot2[2] = {1, 0};
        run_case((acase){"prefill mixed", 2, 129, 8, 2, 128, 2, 256, F16, 0.0f, 0}, p, slot2);
        run_case((acase){"prefill mixed", 2, 129, 8, 2, 64, 2, 256, F32, 0.5f, 0}, p, slot2);
        free(p);
        int n3[1] = {1000}, st3[1] = {10}, sp3[1] = {1};
        p = positions(1, 1000, n3, st3, sp3);
        run_case((acase){"prefill 1000", 1, 1000, 4, 1, 64, 1, 1024, F32, 0.0f, 0}, p, NULL);
        run_case((acase){"prefill 1000", 1, 1000, 4, 2, 128, 1, 1024, F16, 0.0f, 0}, p, NULL);
        free(p);
        int n4[1] = {4097}, st4[1] = {0}, sp4[1] = {1};
        p = positions(1, 4097, n4, st4, sp4);
        run_case((acase){"prefill 4097", 1, 4097, 8, 2, 128, 1, 4097, F16, 0.0f, 24}, p, NULL);
        run_case((acase){"prefill 4097", 1, 4097, 4, 4, 64, 1, 8192, F32, 0.0f, 24}, p, NULL);
        free(p);
        int n5[1] = {129}, st5[1] = {32768 - 129}, sp5[1] = {1};
        p = positions(1, 129, n5, st5, sp5);
        run_case((acase){"prefill at 32K", 1, 129, 8, 2, 128, 1, 32768, F16, 0.0f, 12}, p, NULL);
        free(p);
    }
}

/* n tokens: one prefill pass == n decode steps (append + attend, T = 1). */
static void decode_equals_prefill(int n, int H, int G, int D, m40_dtype cdt) {
    const int64_t W = (int64_t)(H + 2 * G) * D, HD = (int64_t)H * D, GD = (int64_t)G * D;
    const int L = n + 16;
    float *x = malloc((size_t)n * W * sizeof *x), *ya = malloc((size_t)n * HD * sizeof *ya);
    float *yb = malloc((size_t)n * HD * sizeof *yb);
    fill(x, n * W, 4242);
    m40_attention_desc ad;
    m40_attention_desc_init(&ad);
    ad.heads = H, ad.kv_heads = G, ad.head_dim = D;
    m40_tensor *kc[2], *vc[2];
    for (int k = 0; k < 2; k++) {
        kc[k] = tnew(X, cdt, 4, 1, L, G, D), vc[k] = tnew(X, cdt, 4, 1, L, G, D);
    }
    /* prefill: T = n */
    int32_t *p = malloc((size_t)n * sizeof *p);
    for (int t = 0; t < n; t++) p[t] = t;
    m40_tensor *q = with(X, M40_DTYPE_F32, 3, 1, n, W, 0, x), *pt = with(X, M40_DTYPE_I32, 2, 1, n, 0, 0, p);
    m40_tensor *y = tnew(X, M40_DTYPE_F32, 3, 1, n, HD, 0);
    m40_tensor *vq = cols_of(X, q, 0, HD), *vk = cols_of(X, q, HD, GD), *vv = cols_of(X, q, HD + GD, GD);
    CHECK_ST(m40_kv_append(X, vk, pt, NULL, kc[0]), M40_OK);
    CHECK_ST(m40_kv_append(X, vv, pt, NULL, vc[0]), M40_OK);
    CHECK_ST(m40_attention(X, &ad, vq, kc[0], vc[0], pt, NULL, y), M40_OK);
    CHECK_ST(m40_tensor_download(X, y, ya, (size_t)n * HD * sizeof *ya), M40_OK);
    /* decode: one token a step */
    m40_tensor *q1 = tnew(X, M40_DTYPE_F32, 3, 1, 1, W, 0), *p1 = tnew(X, M40_DTYPE_I32, 2, 1, 1, 0, 0);
    m40_tensor *y1 = tnew(X, M40_DTYPE_F32, 3, 1, 1, HD, 0);
    m40_tensor *wq = cols_of(X, q1, 0, HD), *wk = cols_of(X, q1, HD, GD), *wv = cols_of(X, q1, HD + GD, GD);
    for (int t = 0; t < n; t++) {
        CHECK_ST(m40_tensor_upload(X, q1, x + (int64_t)t * W, (size_t)W * sizeof *x), M40_OK);
        CHECK_ST(m40_tensor_upload(X, p1, &p[t], sizeof p[t]), M40_OK);
        m40_status s1 = m40_kv_append(X, wk, p1, NULL, kc[1]), s2 = m40_kv_append(X, wv, p1, NULL, vc[1]);
        m40_status s3 = m40_attention(X, &ad, wq, kc[1], vc[1], p1, NULL, y1);
        m40_status s4 = m40_tensor_download(X, y1, yb + (int64_t)t * HD, (size_t)HD * sizeof *yb);
        if (s1 || s2 || s3 || s4) {
            CHECK(0);
            break;
        }
    }
    char name[96];
    snprintf(name, sizeof name, "decode == prefill: %d tokens H%d G%d D%d %s", n, H, G, D,
             m40_dtype_name(cdt));
    m40t_compare(name, yb, ya, (int64_t)n * HD, (m40t_tol){1e-5, 1e-4, 1e-10});
    m40_tensor *all[] = {kc[0], kc[1], vc[0], vc[1], q, pt, y, vq, vk, vv, q1, p1, y1, wq, wk, wv};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) m40_tensor_destroy(all[k]);
    free(x), free(ya), free(yb), free(p);
}

/* Bad indices on the GPU: the calls queue, m40_ctx_sync reports; the rows
** are zeros; the context stays usable. */
/* D 64: the 64-dim tile; D 128: the default decode kernel at f16 caches
** (the first K tile fetched before Q, decode_variant 7's), whose early
** fetch must skip a bad slot and a position past the cache too */
static void guard(int D) {
    const int H = 4, G = 2, L = 32;
    enum { QMAX = 2 * 4 * 128 };
    m40_attention_desc ad;
    m40_attention_desc_init(&ad);
    ad.heads = H, ad.kv_heads = G, ad.head_dim = D;
    m40_tensor *kc = tnew(X, M40_DTYPE_F16, 4, 2, L, G, D), *vc = tnew(X, M40_DTYPE_F16, 4, 2, L, G, D);
    /* zeros: the attentions below read keys [0, pos] that were never
    ** appended (compute-sanitizer's initcheck found them uninitialized) */
    size_t cb = m40_tensor_get_nbytes(kc);
    void *zeros = calloc(1, cb);
    CHECK(zeros != NULL);
    if (zeros) {
        CHECK_ST(m40_tensor_upload(X, kc, zeros, cb), M40_OK);
        CHECK_ST(m40_tensor_upload(X, vc, zeros, cb), M40_OK);
        free(zeros);
    }
    float q[QMAX];
    fill(q, 2 * H * D, 5);
    int32_t pos[2] = {3, 40}, slot[2] = {0, 1};
    m40_tensor *tq = with(X, M40_DTYPE_F32, 3, 2, 1, H * D, 0, q), *ty = tnew(X, M40_DTYPE_F32, 3, 2, 1, H * D, 0);
    m40_tensor *tp = with(X, M40_DTYPE_I32, 2, 2, 1, 0, 0, pos), *ts = with(X, M40_DTYPE_I32, 1, 2, 0, 0, 0, slot);
    m40_tensor *tk = with(X, M40_DTYPE_F32, 3, 2, 1, G * D, 0, q);
    CHECK_ST(m40_attention(X, &ad, tq, kc, vc, tp, ts, ty), M40_OK); /* queued */
    CHECK_ST(m40_ctx_sync(X), M40_ERR_INVALID_ARG);
    CHECK(has(X, "attention position 40 out of range [-1, 32)"));
    float y[QMAX];
    CHECK_ST(m40_tensor_download(X, ty, y, sizeof(float) * 2 * H * D), M40_OK);
    int zero = 1;
    for (int i = H * D; i < 2 * H * D; i++) zero &= y[i] == 0.0f;
    CHECK(zero);
    CHECK_ST(m40_kv_append(X, tk, tp, ts, kc), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_ERR_INVALID_ARG);
    CHECK(has(X, "kv_append position 40"));
    pos[1] = 5, slot[1] = 7;
    CHECK_ST(m40_tensor_upload(X, tp, pos, sizeof pos), M40_OK);
    CHECK_ST(m40_tensor_upload(X, ts, slot, sizeof slot), M40_OK);
    CHECK_ST(m40_kv_append(X, tk, tp, ts, kc), M40_OK);
    CHECK_ST(m40_tensor_download(X, ty, y, sizeof(float) * 2 * H * D), M40_ERR_INVALID_ARG);
    CHECK(has(X, "kv_append slot 7 out of range [0, 2)"));
    CHECK_ST(m40_attention(X, &ad, tq, kc, vc, tp, ts, ty), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_ERR_INVALID_ARG);
    CHECK(has(X, "attention slot 7"));
    /* fine again */
    slot[1] = 1;
    CHECK_ST(m40_tensor_upload(X, ts, slot, sizeof slot), M40_OK);
    CHECK_ST(m40_kv_append(X, tk, tp, ts, kc), M40_OK);
    CHECK_ST(m40_attention(X, &ad, tq, kc, vc, tp, ts, ty), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_OK);
    m40_tensor *all[] = {kc, vc, tq, ty, tp, ts, tk};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) m40_tensor_destroy(all[k]);
}

/* The attention node with RoPE at a decode step (the fused RoPE + append +
** attention where it applies, kernels/attention.h): a position past the
** cache and a bad slot are reported as the append reports them, the bad
** row's y is zeros and nothing is appended for it; the context stays
** usable. */
static void guard_rope_node(void) {
    const int B = 2, H = 4, G = 2, D = 128, L = 32, W = (H + 2 * G) * D;
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(X, &g), M40_OK);
    if (!g) return;
    m40_tensor *kc = tnew(X, M40_DTYPE_F16, 4, B, L, G, D), *vc = tnew(X, M40_DTYPE_F16, 4, B, L, G, D);
    const size_t cb = m40_tensor_get_nbytes(kc);
    void *zeros = calloc(1, cb), *back = malloc(cb);
    CHECK(zeros && back);
    if (!zeros || !back) return;
    CHECK_ST(m40_tensor_upload(X, kc, zeros, cb), M40_OK);
    CHECK_ST(m40_tensor_upload(X, vc, zeros, cb), M40_OK);
    float x[2 * W];
    fill(x, 2 * W, 9);
    int32_t pos[2] = {3, 40}, slot[2] = {0, 1};
    m40_tensor *tx = with(X, M40_DTYPE_F32, 3, B, 1, W, 0, x), *tp = with(X, M40_DTYPE_I32, 2, B, 1, 0, 0, pos);
    m40_tensor *ts = with(X, M40_DTYPE_I32, 1, B, 0, 0, 0, slot);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ATTENTION);
    nd.ninputs = 5;
    nd.heads = H, nd.kv_heads = G, nd.head_dim = D;
    nd.rope_dims = 64, nd.rope_pairs = M40_ROPE_ADJACENT;
    const m40_tensor *t[5] = {tx, kc, vc, tp, ts};
    const m40_tensor_role role[5] = {M40_ROLE_INPUT, M40_ROLE_STATE, M40_ROLE_STATE, M40_ROLE_INPUT,
                                     M40_ROLE_INPUT};
    int ids[5], yid = -1;
    for (int i = 0; i < 5; i++) {
        CHECK_ST(m40_graph_tensor(g, role[i], NULL, m40_tensor_get_desc(t[i]), &ids[i]), M40_OK);
        CHECK_ST(m40_graph_bind(g, ids[i], (m40_tensor *)t[i]), M40_OK);
        nd.inputs[i] = ids[i];
    }
    CHECK_ST(m40_graph_node(g, &nd, &yid), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, yid), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_ERR_INVALID_ARG);
    CHECK(has(X, "kv_append position 40"));
    m40_tensor *yt = NULL;
    float y[2 * H * D];
    CHECK_ST(m40_graph_get_tensor(g, yid, &yt), M40_OK);
    if (yt) {
        CHECK_ST(m40_tensor_download(X, yt, y, sizeof y), M40_OK);
        int zero = 1, some = 0;
        for (int i = 0; i < H * D; i++) some |= y[i] != 0.0f;
        for (int i = H * D; i < 2 * H * D; i++) zero &= y[i] == 0.0f;
        CHECK(zero && some);
    }
    /* slot 1 untouched (its row was bad); slot 0 has position 3 only */
    CHECK_ST(m40_tensor_download(X, kc, back, cb), M40_OK);
    const uint16_t *kh = back;
    int only = 1;
    for (int64_t i = 0; i < (int64_t)B * L * G * D; i++) {
        const int64_t sl = i / ((int64_t)L * G * D), ps = i / ((int64_t)G * D) % L;
        if (!(sl == 0 && ps == 3)) only &= kh[i] == 0;
    }
    CHECK(only);
    pos[1] = 5, slot[1] = 7;
    CHECK_ST(m40_tensor_upload(X, tp, pos, sizeof pos), M40_OK);
    CHECK_ST(m40_tensor_upload(X, ts, slot, sizeof slot), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_ERR_INVALID_ARG);
    CHECK(has(X, "kv_append slot 7 out of range [0, 2)"));
    slot[1] = 1; /* fine again */
    CHECK_ST(m40_tensor_upload(X, ts, slot, sizeof slot), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    CHECK_ST(m40_ctx_sync(X), M40_OK);
    m40_graph_destroy(g);
    m40_tensor *all[] = {kc, vc, tx, tp, ts};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) m40_tensor_destroy(all[k]);
    free(zeros), free(back);
}

/* A graph with one ATTENTION node on each side: alloc, run, compare; then
** new positions (the next decode step) and a run again, captured on the GPU.
** rope_dims > 0: the node turns Q and K first (m40k_rope_kv_append on the
** GPU, the ROPE reference on the CPU); pairs: its layout. */
/* graph_node's attention key bound (m40_graph_set_attention_keys) on both
** graphs; the GPU graph's is dropped to none at step 2 (its CUDA graph with
** it), so a run with the bound, a replay and a run without all compare */
static int64_t g_keys, g_pos0; /* the key bound (0 none); the first position (sequence 0) */
static void graph_node(int B, int T, int H, int G, int D, int L, m40_dtype cdt, int rope_dims,
                       m40_rope_pairs pairs) {
    const int64_t W = (int64_t)(H + 2 * G) * D, HD = (int64_t)H * D, BT = (int64_t)B * T;
    m40_graph *g[2] = {NULL, NULL};
    m40_ctx *ctx[2] = {C, X};
    int ids[6], yid[2] = {-1, -1};
    m40_tensor *kc[2], *vc[2];
    make_caches(B, L, G, D, cdt, 77, kc, vc); /* kc = CPU (k, v), vc = GPU (k, v) */
    m40_tensor *caches[2][2] = {{kc[0], kc[1]}, {vc[0], vc[1]}};
    float *x = malloc((size_t)(BT * W) * sizeof *x);
    float *out[2] = {malloc((size_t)(BT * HD) * sizeof(float)), malloc((size_t)(BT * HD) * sizeof(float))};
    int32_t *p = malloc((size_t)BT * sizeof *p);
    m40_tensor *ins[2][2]; /* qkv, pos bound on each side */
    for (int s = 0; s < 2; s++) {
        CHECK_ST(m40_graph_create(ctx[s], &g[s]), M40_OK);
        if (!g[s]) return;
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        nd.ninputs = 4;
        nd.heads = H, nd.kv_heads = G, nd.head_dim = D;
        nd.rope_dims = rope_dims, nd.rope_pairs = pairs;
        ins[s][0] = tnew(ctx[s], M40_DTYPE_F32, 3, B, T, W, 0);
        ins[s][1] = tnew(ctx[s], M40_DTYPE_I32, 2, B, T, 0, 0);
        const m40_tensor *t[4] = {ins[s][0], caches[s][0], caches[s][1], ins[s][1]};
        const m40_tensor_role role[4] = {M40_ROLE_INPUT, M40_ROLE_STATE, M40_ROLE_STATE, M40_ROLE_INPUT};
        for (int i = 0; i < 4; i++) {
            CHECK_ST(m40_graph_tensor(g[s], role[i], NULL, m40_tensor_get_desc(t[i]), &ids[i]), M40_OK);
            CHECK_ST(m40_graph_bind(g[s], ids[i], (m40_tensor *)t[i]), M40_OK);
            nd.inputs[i] = ids[i];
        }
        CHECK_ST(m40_graph_node(g[s], &nd, &yid[s]), M40_OK);
        CHECK_ST(m40_graph_mark_output(g[s], yid[s]), M40_OK);
        CHECK_ST(m40_graph_alloc(g[s]), M40_OK);
        if (g_keys) CHECK_ST(m40_graph_set_attention_keys(g[s], g_keys), M40_OK);
    }
    for (int step = 0; step < 3; step++) {
        fill(x, BT * W, 1000 + (uint64_t)step);
        for (int64_t r = 0; r < BT; r++) /* sequence b at length 100·b + step·T + t */
            p[r] = (int32_t)((g_pos0 + (r / T) * 100 + step * T + r % T) % L);
        for (int s = 0; s < 2; s++) {
            CHECK_ST(m40_tensor_upload(ctx[s], ins[s][0], x, (size_t)(BT * W) * sizeof *x), M40_OK);
            CHECK_ST(m40_tensor_upload(ctx[s], ins[s][1], p, (size_t)BT * sizeof *p), M40_OK);
            if (s == 1 && step == 1) CHECK_ST(m40_graph_capture(g[s], 1), M40_OK);
            if (s == 1 && step == 2 && g_keys) {
                CHECK_ST(m40_graph_set_attention_keys(g[s], 0), M40_OK);
                CHECK(m40_graph_get_launch_count(g[s]) == -1); /* the CUDA graph dropped */
            }
            CHECK_ST(m40_graph_run(g[s]), M40_OK);
            m40_tensor *yt = NULL;
            CHECK_ST(m40_graph_get_tensor(g[s], yid[s], &yt), M40_OK);
            CHECK_ST(m40_ctx_sync(ctx[s]), M40_OK);
            if (yt) CHECK_ST(m40_tensor_download(ctx[s], yt, out[s], (size_t)(BT * HD) * sizeof(float)), M40_OK);
        }
        char name[96];
        snprintf(name, sizeof name, "graph node step %d: B%d T%d H%d G%d D%d %s rope %d/%d", step,
                 B, T, H, G, D, m40_dtype_name(cdt), rope_dims, (int)pairs);
        m40t_compare(name, out[1], out[0], BT * HD, TOL);
    }
    /* the caches after the steps: every appended row (K turned), and every
    ** other row as it was (the fused RoPE + append writes only its own) */
    const int64_t nc = (int64_t)B * L * G * D, es = cdt == M40_DTYPE_F16 ? 2 : 4;
    void *raw = malloc((size_t)(nc * es));
    float *cv[2] = {malloc((size_t)nc * sizeof(float)), malloc((size_t)nc * sizeof(float))};
    for (int kv = 0; kv < 2 && raw && cv[0] && cv[1]; kv++) {
        for (int s = 0; s < 2; s++) {
            CHECK_ST(m40_ctx_sync(ctx[s]), M40_OK);
            CHECK_ST(m40_tensor_download(ctx[s], caches[s][kv], raw, (size_t)(nc * es)), M40_OK);
            for (int64_t i = 0; i < nc; i++)
                cv[s][i] = es == 2 ? m40__f16_to_f32(((const uint16_t *)raw)[i]) : ((const float *)raw)[i];
        }
        char name[96];
        snprintf(name, sizeof name, "graph node %s cache: B%d T%d H%d G%d D%d %s rope %d/%d",
                 kv ? "V" : "K", B, T, H, G, D, m40_dtype_name(cdt), rope_dims, (int)pairs);
        /* f16: the GPU's and the reference's turned K may round to
        ** neighbouring halves (1 ulp: 2^-10 relative, or a subnormal's
        ** 2^-24) */
        m40t_compare(name, cv[1], cv[0], nc, es == 2 ? (m40t_tol){1e-7, 1.5e-3, 1e-9} : TOL);
    }
    free(raw), free(cv[0]), free(cv[1]);
    for (int s = 0; s < 2; s++) {
        m40_graph_destroy(g[s]);
        m40_tensor_destroy(ins[s][0]);
        m40_tensor_destroy(ins[s][1]);
        m40_tensor_destroy(caches[s][0]);
        m40_tensor_destroy(caches[s][1]);
        free(out[s]);
    }
    free(x);
    free(p);
}

/* kernels/attention.h's prefill knobs; weak: absent from a CPU-only build */
extern int m40k_attn_prefill_variant __attribute__((weak));
extern int m40k_attn_prefill_pair __attribute__((weak));
extern int m40k_attn_skip_empty __attribute__((weak));
extern int m40k_attn_fuse_rope __attribute__((weak));
extern int m40k_attn_fuse_combine __attribute__((weak));
extern int m40k_attn_warp_pv __attribute__((weak));
extern int m40k_attn_rows8 __attribute__((weak));

/* graph nodes at T 1 with the RoPE fused (and without), under key bounds
** from, from·mul, ... <= to, with *knob at v (restored after) */
static void bound_nodes(int *knob, int v, int64_t from, int64_t to, int64_t mul, const char *what) {
    const int saved = *knob;
    *knob = v;
    for (g_keys = from; g_keys <= to; g_keys *= mul) {
        printf("attention key bound %lld, %s\n", (long long)g_keys, what);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
    }
    *knob = saved;
    g_keys = 0;
}

int main(void) {
    const char *qe = getenv("M40_ATTN_QUICK");
    quick = qe ? (atoi(qe) > 1 ? 2 : 1) : 0;
    /* The prefill cases here are small grids, which the launcher's auto rule
    ** gives the BM-32 tile kernel (decode's T 2..8 tiles are that kernel
    ** too); so each pass of the loop below picks the prefill kernel itself:
    ** the BM-64 kernel (1), the tile kernel (0), BM-64, auto (2), unless
    ** M40_ATTN_PREFILL_VARIANT says which */
    const char *pv = getenv("M40_ATTN_PREFILL_VARIANT");
    if (!(X = m40t_gpu_ctx_or_skip("test_attention_gpu"))) return M40T_SKIP;
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) {
        fprintf(stderr, "CPU context: %s\n", m40_errmsg(C));
        return 1;
    }
    /* every decode kernel (lib/ops/attention.c's knob): 0 the default, the
    ** tile kernel; decode v3 with 4 (2) and 8 (3) rows a warp where it
    ** applies (16-byte aligned rows, T·HPG <= 16, D <= 128); 4 the tile
    ** kernel with its loads a phase early (f16, D 128); 0 is the tile kernel
    ** with 32 keys a tile and a split at D 65..128, 1 with 64 (the old
    ** default), 6 with 16 (f16: K-first, + RoPE), 5 with 32 (the default's tile), 7 the 32-key tile
    ** with its loads early and the first K before Q (f16); 8 and 9 decode v4
    ** (v3 with 4 keys a lane: 128-key steps, 4 and 8 rows a warp) */
    static const int variants[] = {0, 2, 3, 4, 1, 6, 7, 5, 8, 9, 10, 11, 12}; /* 10: decode v5, a warp a row; 11, 12: v6 */
    for (int vi = 0; vi < (int)(sizeof variants / sizeof variants[0]); vi++) {
        const int variant = variants[vi];
        static const int prefill_variant[] = {1, 0, 1, 2, 2, 1, 2, 0, 2, 1, 2, 0, 1};
        /* the small grids here fit one wave: paired query tiles (1) or not */
        static const int prefill_pair[] = {1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1};
        m40__attn_decode_variant = variant;
        if (&m40k_attn_prefill_variant)
            m40k_attn_prefill_variant = pv && *pv ? atoi(pv) : prefill_variant[vi];
        if (&m40k_attn_prefill_pair) m40k_attn_prefill_pair = prefill_pair[vi];
        printf("decode kernel variant %d, prefill variant %d, paired tiles %d\n", variant,
               &m40k_attn_prefill_variant ? m40k_attn_prefill_variant : -1,
               &m40k_attn_prefill_pair ? m40k_attn_prefill_pair : -1);
        kernels_vs_reference();
        decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
        decode_equals_prefill(70, 4, 4, 64, M40_DTYPE_F32);
        decode_equals_prefill(90, 16, 1, 64, M40_DTYPE_F16); /* 16 rows a group */
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT); /* decode: split KV + combine */
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT); /* + RoPE (ChatGLM2) */
    }
    m40__attn_decode_variant = 0;
    /* prefill's key shares (kernels/attention.h): the loop above ran the rule
    ** (its prefill grids are small: 2..4 shares on a large GPU, none on a
    ** small one); here none (1: the paired tiles) and 2 or 3 forced, on the
    ** BM-64 kernel (1), the tile kernel (0) and auto (2) */
    if (&m40k_attn_prefill_variant) {
        static const int pss[] = {1, 1, 3, 3, 2}, psv[] = {1, 0, 1, 0, 2};
        const int keep = m40k_attn_prefill_variant, keep_pair = &m40k_attn_prefill_pair ? m40k_attn_prefill_pair : 1;
        if (&m40k_attn_prefill_pair) m40k_attn_prefill_pair = 1;
        for (int i = 0; i < 5; i++) {
            m40__attn_prefill_splits = pss[i];
            m40k_attn_prefill_variant = psv[i];
            printf("prefill key shares %d, prefill variant %d\n", pss[i], psv[i]);
            kernels_vs_reference();
            decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
            graph_node(3, 130, 4, 1, 128, 300, M40_DTYPE_F16, 32, M40_ROPE_ADJACENT);
        }
        m40__attn_prefill_splits = 0;
        m40k_attn_prefill_variant = keep;
        if (&m40k_attn_prefill_pair) m40k_attn_prefill_pair = keep_pair;
    }
    if (&m40k_attn_skip_empty) {
        /* the default kernels with every split run and read (0), and with
        ** v5 and v6 skipping too (2: the rule until session 28); v5 under
        ** a key bound, v6 past it */
        for (int sk = 0; sk <= 2; sk += 2) {
            m40k_attn_skip_empty = sk;
            printf("decode kernel variant 0, empty-split skip %d\n", sk);
            kernels_vs_reference();
            decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
            for (g_keys = 512; g_keys <= 16384; g_keys *= 32) /* v5, then v6 */
                graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
            g_keys = 0;
        }
        m40k_attn_skip_empty = 1;
    }
    if (&m40k_attn_fuse_combine) {
        /* the decode splits' combine inside the decode kernel: the tile
        ** kernel's last blocks (variant 0), decode v5's last block (10,
        ** v5_fold); each with every split in too (no skip: all count) */
        const int saved = m40k_attn_fuse_combine;
        static const int fv[] = {0, 10};
        m40k_attn_fuse_combine = !saved;
        for (int i = 0; i < 2; i++) {
            m40__attn_decode_variant = fv[i];
            printf("decode kernel variant %d, combine inside the kernel %d\n", fv[i], m40k_attn_fuse_combine);
            kernels_vs_reference();
            decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
            if (fv[i] == 10) {
                decode_equals_prefill(90, 16, 1, 64, M40_DTYPE_F16);
                graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
            }
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
            if (&m40k_attn_skip_empty) {
                m40k_attn_skip_empty = 0;
                printf("decode kernel variant %d, combine inside, empty splits not skipped\n", fv[i]);
                decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
                graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
                m40k_attn_skip_empty = 1;
            }
        }
        m40__attn_decode_variant = 0;
        m40k_attn_fuse_combine = saved;
    }
    /* decode v5's ways (lib/ops/attention.c's m40__attn_v5_ways: the rows
    ** 1..8 of kernels/attention.h's M40K_ATTN_V5_WAYS, W warps a row folded
    ** in the block, no attn_combine): v5 forced (variant 10; T 3 leaves
    ** dead rows in 8-row groups), then the node's choice under key bounds,
    ** with and without the fused RoPE (whose blocks each append) */
    const int saved_ways = m40__attn_v5_ways;
    for (int wv = 1; wv <= 8; wv++) {
        m40__attn_v5_ways = wv;
        m40__attn_decode_variant = 10;
        printf("decode kernel variant 10, ways %d\n", wv);
        kernels_vs_reference();
        decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
        decode_equals_prefill(90, 16, 1, 128, M40_DTYPE_F16); /* 16 rows a group */
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
        m40__attn_decode_variant = 0;
        for (g_keys = 128; g_keys <= 512; g_keys *= 4) {
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
            graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        }
        g_keys = 0;
        /* the ways with 2..4 splits of the keys (m40__attn_v5_wsplits; session
        ** 40): each block's fold a partial, attn_combine folding every split */
        const int saved_ws = m40__attn_v5_wsplits;
        m40__attn_v5_wsplits = 2 + wv % 3;
        m40__attn_decode_variant = 10;
        printf("decode kernel variant 10, ways %d, %d splits\n", wv, m40__attn_v5_wsplits);
        kernels_vs_reference();
        decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
        decode_equals_prefill(90, 16, 1, 128, M40_DTYPE_F16);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
        m40__attn_decode_variant = 0;
        m40__attn_v5_wsplits = saved_ws;
    }
    m40__attn_v5_ways = saved_ways;
    if (&m40k_attn_warp_pv) { /* P·V split over the warps: the 32- and 64-key tiles (+ RoPE) */
        const int saved = m40k_attn_warp_pv;
        m40k_attn_warp_pv = !saved;
        static const int wv[] = {0, 1, 7, 5};
        for (int i = 0; i < 4; i++) {
            m40__attn_decode_variant = wv[i];
            printf("decode kernel variant %d, P·V split over the warps %d\n", wv[i], m40k_attn_warp_pv);
            kernels_vs_reference();
            decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
            decode_equals_prefill(70, 4, 4, 64, M40_DTYPE_F32);
            decode_equals_prefill(90, 16, 1, 128, M40_DTYPE_F32); /* 16 rows a group */
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        }
        m40__attn_decode_variant = 0;
        m40k_attn_warp_pv = saved;
    }
    if (&m40k_attn_rows8) { /* the K-first 32-key tile (+ RoPE) in blocks of 8 rows */
        const int saved = m40k_attn_rows8;
        m40k_attn_rows8 = !saved;
        static const int rv[] = {0, 7};
        for (int i = 0; i < 2; i++) {
            m40__attn_decode_variant = rv[i];
            printf("decode kernel variant %d, 8 rows a block %d\n", rv[i], m40k_attn_rows8);
            kernels_vs_reference();
            decode_equals_prefill(quick > 1 ? 40 : 300, 8, 2, 128, M40_DTYPE_F16);
            decode_equals_prefill(90, 16, 1, 128, M40_DTYPE_F16); /* 16 rows a group: two blocks */
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
            graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
            graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
        }
        m40__attn_decode_variant = 0;
        m40k_attn_rows8 = saved;
    }
    if (&m40k_attn_fuse_rope) { /* the node's RoPE + append as their own launch */
        m40k_attn_fuse_rope = 0;
        printf("attention node: RoPE + append not fused into the attention kernel\n");
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
        m40k_attn_fuse_rope = 1;
    }
    /* a key bound (where it applies: T 1, f16, D 128; decode v5 at <= 512
    ** keys, for one sequence its ways with splits to 1024, v6 beyond, its
    ** rows a lane by keys a SM: lib/ops/attention.c): the positions (<= 103)
    ** under it, and past a bound of 16 (the same results) */
    static const int64_t kbs[] = {512, 128, 1024, 768, 16384, 16};
    for (int i = 0; i < (int)(sizeof kbs / sizeof kbs[0]); i++) {
        g_keys = kbs[i];
        printf("attention key bound %lld\n", (long long)g_keys);
        /* one sequence, at 700 where the bound allows (its 701 keys in 3 or 4 splits:
        ** v5_keys shares the keys there are, the new row in the last split) */
        g_pos0 = g_keys >= 768 ? 700 : 0;
        graph_node(1, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(1, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        g_pos0 = 0;
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 64, M40_ROPE_ADJACENT);
        graph_node(2, 1, 32, 2, 128, 1024, M40_DTYPE_F16, 0, M40_ROPE_ADJACENT);
        graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
        graph_node(2, 1, 8, 2, 64, 256, M40_DTYPE_F32, 0, M40_ROPE_ADJACENT); /* the tile kernel */
        graph_node(3, 130, 4, 1, 128, 300, M40_DTYPE_F16, 32, M40_ROPE_ADJACENT); /* prefill: the bound changes nothing there */
    }
    /* v5's ways past 512 keys (m40__attn_v5_ways_keys, an A/B knob): where v6
    ** would run, with the rule's splits (4 at 1024 keys, 32 at 16384), then none */
    bound_nodes(&m40__attn_v5_ways_keys, 16384, 1024, 16384, 16, "v5's ways up to 16384 keys");
    {
        const int saved_ws = m40__attn_v5_wsplits;
        m40__attn_v5_wsplits = 0;
        bound_nodes(&m40__attn_v5_ways_keys, 16384, 1024, 16384, 16, "v5's ways up to 16384 keys, no splits");
        m40__attn_v5_wsplits = saved_ws;
    }
    /* a Maxwell card's edge (m40__attn_short_keys; 128 on cc 5.x): v6 under
    ** bounds 256 and 512, v5's ways under 128 and 64 */
    bound_nodes(&m40__attn_short_keys, 128, 64, 512, 2, "v5 to 128 keys");
    /* fused: every dim turned, 8 heads a group, a short cache */
    graph_node(3, 1, 16, 2, 128, 300, M40_DTYPE_F16, 128, M40_ROPE_ADJACENT);
    graph_node(1, 1, 2, 2, 128, 40, M40_DTYPE_F16, 32, M40_ROPE_ADJACENT);
    guard(64);
    guard(128);
    guard_rope_node();
    if (&m40k_attn_fuse_rope) { /* the same through the two launches */
        m40k_attn_fuse_rope = 0;
        guard_rope_node();
        m40k_attn_fuse_rope = 1;
    }
    graph_node(2, 20, 8, 2, 64, 256, M40_DTYPE_F32, 0, M40_ROPE_ADJACENT); /* prefill */
    graph_node(2, 20, 8, 2, 64, 256, M40_DTYPE_F32, 64, M40_ROPE_HALF);   /* + RoPE, every dim */
    graph_node(3, 130, 4, 1, 128, 300, M40_DTYPE_F16, 32, M40_ROPE_ADJACENT); /* 256-thread rows */
    graph_node(1, 3, 6, 2, 40, 64, M40_DTYPE_F32, 20, M40_ROPE_HALF);   /* odd shapes */
    graph_node(2, 5, 4, 2, 40, 64, M40_DTYPE_F16, 18, M40_ROPE_ADJACENT); /* a float4 half turned */
    m40_ctx_destroy(C);
    m40_ctx_destroy(X);
    return m40t_finish("test_attention_gpu");
}
