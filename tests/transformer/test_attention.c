/* m40_kv_append, m40_attention and the ATTENTION node on a CPU context
** against a naive implementation written here (own f16 decoding, double
** sums), then every bad input: dtypes, shapes, heads not dividing, head_dim
** past 256, positions past the cache, slots out of range, the node's
** rules (STATE caches, pos [B,T]); the context stays usable after each. */
#include "check.h"
#include "internal.h"                 /* m40__attn_bound and its knobs */
#include "../../kernels/attention.h" /* m40k_attn_shape */
#include "m40/transformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

static int has(const char *needle) {
    if (strstr(m40_errmsg(C), needle)) return 1;
    fprintf(stderr, "message lacks '%s': %s\n", needle, m40_errmsg(C));
    return 0;
}

static void fill(float *p, int64_t n, uint32_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
}

/* binary16 -> float, written out for the test (not lib/half.h) */
static float h2f(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)(h & 0x8000 ? -v : v);
}

static m40_tensor *tnew(m40_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t s[4] = {a, b, c, d};
    m40_tensor *t = NULL;
    if (m40_tensor_new(C, dt, nd, s, &t) != M40_OK) {
        fprintf(stderr, "m40_tensor_new: %s\n", m40_errmsg(C));
        exit(1);
    }
    memset(m40_tensor_get_data(t), 0, m40_tensor_get_nbytes(t));
    return t;
}

/* A [B,T,cols] view of qkv's columns [col0, col0+cols). */
static m40_tensor *cols_of(m40_tensor *qkv, int64_t col0, int64_t cols) {
    const m40_tensor_desc *d = m40_tensor_get_desc(qkv);
    m40_tensor_desc v = *d;
    v.shape[2] = cols;
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_view(C, qkv, &v, col0, &t), M40_OK);
    return t;
}

static float cache_val(const m40_tensor *c, int64_t i) {
    const void *p = m40_tensor_get_data(c);
    return m40_tensor_get_desc(c)->dtype == M40_DTYPE_F16 ? h2f(((const uint16_t *)p)[i])
                                                         : ((const float *)p)[i];
}

/* The naive attention of query row (b,t), head h, into out[D]. */
static void naive_row(const float *q, const m40_tensor *kc, const m40_tensor *vc, int64_t L,
                      int64_t G, int64_t D, int64_t g, int64_t s, int p, double scale,
                      float *out) {
    double *w = malloc((size_t)(p + 1) * sizeof *w), m = -1e300, sum = 0;
    for (int j = 0; j <= p; j++) {
        double dot = 0;
        for (int64_t d = 0; d < D; d++) dot += q[d] * (double)cache_val(kc, ((s * L + j) * G + g) * D + d);
        w[j] = dot * scale;
        if (w[j] > m) m = w[j];
    }
    for (int j = 0; j <= p; j++) sum += (w[j] = exp(w[j] - m));
    for (int64_t d = 0; d < D; d++) {
        double a = 0;
        for (int j = 0; j <= p; j++) a += w[j] * cache_val(vc, ((s * L + j) * G + g) * D + d);
        out[d] = (float)(a / sum);
    }
    free(w);
}

/* One case: caches filled by a history append (every slot, every
** position), then B sequences of up to T new rows appended at pos (slot
** mapping, -1 padding, a stride-2 sequence), then attention; eager and the
** graph node (when `node`) against the naive rows. */
static void attn_case(int B, int T, int H, int G, int D, int S, int L, m40_dtype cdt,
                      int use_slot, float scale) {
    const int64_t W = (int64_t)(H + 2 * G) * D, GD = (int64_t)G * D;
    /* history: [S, L, GD] K and V rows at slot s, position j */
    m40_tensor *hk = tnew(M40_DTYPE_F32, 3, S, L, GD, 0), *hv = tnew(M40_DTYPE_F32, 3, S, L, GD, 0);
    m40_tensor *hp = tnew(M40_DTYPE_I32, 2, S, L, 0, 0);
    fill(m40_tensor_get_data(hk), (int64_t)S * L * GD, 1 + D);
    fill(m40_tensor_get_data(hv), (int64_t)S * L * GD, 2 + D);
    for (int64_t i = 0; i < (int64_t)S * L; i++) ((int32_t *)m40_tensor_get_data(hp))[i] = (int32_t)(i % L);
    m40_tensor *kc = tnew(cdt, 4, S, L, G, D), *vc = tnew(cdt, 4, S, L, G, D);
    CHECK_ST(m40_kv_append(C, hk, hp, NULL, kc), M40_OK);
    CHECK_ST(m40_kv_append(C, hv, hp, NULL, vc), M40_OK);
    /* the appended values, exactly (f32) or rounded to f16 */
    int bad = 0;
    for (int64_t i = 0; i < (int64_t)S * L * GD; i++) {
        float v = ((float *)m40_tensor_get_data(hk))[i], c = cache_val(kc, i);
        if (cdt == M40_DTYPE_F32 ? c != v : fabsf(c - v) > fabsf(v) * 4.9e-4f + 6e-8f) bad++;
    }
    CHECK(bad == 0);

    /* the new rows */
    m40_tensor *qkv = tnew(M40_DTYPE_F32, 3, B, T, W, 0), *pos = tnew(M40_DTYPE_I32, 2, B, T, 0, 0);
    m40_tensor *slot = use_slot ? tnew(M40_DTYPE_I32, 1, B, 0, 0, 0) : NULL;
    fill(m40_tensor_get_data(qkv), (int64_t)B * T * W, 7 + T);
    int32_t *pp = m40_tensor_get_data(pos);
    for (int b = 0; b < B; b++) {
        int n = T - (b % 3), st = (b * 5) % 7, step = b % 2 ? 2 : 1; /* lengths, starts, strides */
        if (st + (n - 1) * step >= L) st = 0, step = 1;
        for (int t = 0; t < T; t++) pp[b * T + t] = t < n ? st + t * step : -1;
        if (use_slot) ((int32_t *)m40_tensor_get_data(slot))[b] = (S - 1 - b) % S;
    }
    m40_tensor *q = cols_of(qkv, 0, (int64_t)H * D), *k = cols_of(qkv, (int64_t)H * D, GD),
               *v = cols_of(qkv, (int64_t)(H + G) * D, GD);
    m40_tensor *y = tnew(M40_DTYPE_F32, 3, B, T, (int64_t)H * D, 0);
    m40t_poison(m40_tensor_get_data(y), (int64_t)B * T * H * D);
    m40_attention_desc ad;
    m40_attention_desc_init(&ad);
    ad.heads = H, ad.kv_heads = G, ad.head_dim = D, ad.scale = scale;
    CHECK_ST(m40_kv_append(C, k, pos, slot, kc), M40_OK);
    CHECK_ST(m40_kv_append(C, v, pos, slot, vc), M40_OK);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_OK);

    float *ref = malloc((size_t)B * T * H * D * sizeof *ref);
    const float *x = m40_tensor_get_data(qkv);
    double sc = scale != 0.0f ? scale : 1.0 / sqrt((double)D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                float *o = ref + (((int64_t)b * T + t) * H + h) * D;
                int p = pp[b * T + t];
                int64_t s = use_slot ? ((int32_t *)m40_tensor_get_data(slot))[b] : b;
                if (p < 0) memset(o, 0, (size_t)D * sizeof *o);
                else naive_row(x + ((int64_t)b * T + t) * W + (int64_t)h * D, kc, vc, L, G, D,
                               h / (H / G), s, p, sc, o);
            }
    char name[128];
    snprintf(name, sizeof name, "attention B%d T%d H%d G%d D%d %s%s", B, T, H, G, D,
             m40_dtype_name(cdt), use_slot ? " slots" : "");
    m40t_compare(name, m40_tensor_get_data(y), ref, (int64_t)B * T * H * D,
                 (m40t_tol){1e-5, 1e-5, 1e-10});

    /* the node: same caches (history), same new rows -> same y */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ATTENTION);
    nd.ninputs = use_slot ? 5 : 4;
    nd.heads = H, nd.kv_heads = G, nd.head_dim = D, nd.attn_scale = scale;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "qkv", m40_tensor_get_desc(qkv), &nd.inputs[0]), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_STATE, "k", m40_tensor_get_desc(kc), &nd.inputs[1]), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_STATE, "v", m40_tensor_get_desc(vc), &nd.inputs[2]), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "pos", m40_tensor_get_desc(pos), &nd.inputs[3]), M40_OK);
    if (use_slot)
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "slot", m40_tensor_get_desc(slot), &nd.inputs[4]), M40_OK);
    int yid = -1;
    CHECK_ST(m40_graph_node(g, &nd, &yid), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, yid), M40_OK);
    /* bind every input and the caches (after the history only: the node appends) */
    m40_tensor *kc2 = tnew(cdt, 4, S, L, G, D), *vc2 = tnew(cdt, 4, S, L, G, D);
    CHECK_ST(m40_kv_append(C, hk, hp, NULL, kc2), M40_OK);
    CHECK_ST(m40_kv_append(C, hv, hp, NULL, vc2), M40_OK);
    CHECK_ST(m40_graph_bind(g, nd.inputs[0], qkv), M40_OK);
    CHECK_ST(m40_graph_bind(g, nd.inputs[1], kc2), M40_OK);
    CHECK_ST(m40_graph_bind(g, nd.inputs[2], vc2), M40_OK);
    CHECK_ST(m40_graph_bind(g, nd.inputs[3], pos), M40_OK);
    if (use_slot) CHECK_ST(m40_graph_bind(g, nd.inputs[4], slot), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    m40_tensor *gy = NULL;
    CHECK_ST(m40_graph_get_tensor(g, yid, &gy), M40_OK);
    snprintf(name + strlen(name), sizeof name - strlen(name), " (node)");
    if (gy) m40t_compare(name, m40_tensor_get_data(gy), ref, (int64_t)B * T * H * D,
                         (m40t_tol){1e-5, 1e-5, 1e-10});
    CHECK(memcmp(m40_tensor_get_data(kc2), m40_tensor_get_data(kc), m40_tensor_get_nbytes(kc)) == 0);
    CHECK(memcmp(m40_tensor_get_data(vc2), m40_tensor_get_data(vc), m40_tensor_get_nbytes(vc)) == 0);
    m40_graph_destroy(g);

    free(ref);
    m40_tensor *all[] = {hk, hv, hp, kc, vc, qkv, pos, slot, q, k, v, y, kc2, vc2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
}

/* The node with RoPE (rope_dims > 0) against a ROPE node and then the node
** without: the same y and caches bit for bit (the same references), and
** qkv left as it was. pad: row (0, T-1) at position -1. */
static void rope_fused(int B, int T, int H, int G, int D, int L, int rd, m40_rope_pairs pairs,
                       float pos_scale, m40_dtype cdt, int pad) {
    const int64_t W = (int64_t)(H + 2 * G) * D;
    m40_tensor *qkv = tnew(M40_DTYPE_F32, 3, B, T, W, 0), *pos = tnew(M40_DTYPE_I32, 2, B, T, 0, 0);
    m40_tensor *hist = tnew(M40_DTYPE_F32, 3, B, L, (int64_t)G * D, 0), *hp = tnew(M40_DTYPE_I32, 2, B, L, 0, 0);
    m40_tensor *kc[2], *vc[2], *y[2] = {NULL, NULL};
    fill(m40_tensor_get_data(qkv), (int64_t)B * T * W, 11);
    fill(m40_tensor_get_data(hist), (int64_t)B * L * G * D, 12);
    int32_t *pp = m40_tensor_get_data(pos), *hpp = m40_tensor_get_data(hp);
    for (int i = 0; i < B * L; i++) hpp[i] = i % L;
    for (int i = 0; i < B * T; i++) pp[i] = (int32_t)((i / T) * 3 + i % T) % L;
    if (pad) pp[T - 1] = -1;
    float *x0 = malloc((size_t)(B * T * W) * sizeof *x0);
    memcpy(x0, m40_tensor_get_data(qkv), (size_t)(B * T * W) * sizeof *x0);
    m40_graph *g[2] = {NULL, NULL};
    int yid[2] = {-1, -1};
    for (int s = 0; s < 2; s++) {
        kc[s] = tnew(cdt, 4, B, L, G, D), vc[s] = tnew(cdt, 4, B, L, G, D);
        CHECK_ST(m40_kv_append(C, hist, hp, NULL, kc[s]), M40_OK);
        CHECK_ST(m40_kv_append(C, hist, hp, NULL, vc[s]), M40_OK);
        CHECK_ST(m40_graph_create(C, &g[s]), M40_OK);
        if (!g[s]) return;
        int ids[4];
        const m40_tensor *t[4] = {qkv, kc[s], vc[s], pos};
        const m40_tensor_role role[4] = {M40_ROLE_INPUT, M40_ROLE_STATE, M40_ROLE_STATE, M40_ROLE_INPUT};
        for (int i = 0; i < 4; i++) {
            CHECK_ST(m40_graph_tensor(g[s], role[i], NULL, m40_tensor_get_desc(t[i]), &ids[i]), M40_OK);
            CHECK_ST(m40_graph_bind(g[s], ids[i], (m40_tensor *)t[i]), M40_OK);
        }
        m40_node_desc nd;
        int x = ids[0];
        if (s == 0) { /* a ROPE node first */
            m40_node_desc_init(&nd, M40_OP_ROPE);
            nd.ninputs = 2;
            nd.inputs[0] = ids[0], nd.inputs[1] = ids[3];
            nd.heads = H + G, nd.head_dim = D, nd.rope_dims = rd, nd.rope_pairs = pairs;
            nd.rope_theta = 5000.0f, nd.rope_scale = pos_scale;
            CHECK_ST(m40_graph_node(g[s], &nd, &x), M40_OK);
        }
        m40_node_desc_init(&nd, M40_OP_ATTENTION);
        nd.ninputs = 4;
        nd.inputs[0] = x, nd.inputs[1] = ids[1], nd.inputs[2] = ids[2], nd.inputs[3] = ids[3];
        nd.heads = H, nd.kv_heads = G, nd.head_dim = D;
        if (s == 1) {
            nd.rope_dims = rd, nd.rope_pairs = pairs;
            nd.rope_theta = 5000.0f, nd.rope_scale = pos_scale;
        }
        CHECK_ST(m40_graph_node(g[s], &nd, &yid[s]), M40_OK);
        CHECK_ST(m40_graph_mark_output(g[s], yid[s]), M40_OK);
        CHECK_ST(m40_graph_alloc(g[s]), M40_OK);
        CHECK_ST(m40_graph_run(g[s]), M40_OK);
        CHECK_ST(m40_graph_get_tensor(g[s], yid[s], &y[s]), M40_OK);
        if (s == 1) /* the fused node leaves its input as it was */
            CHECK(memcmp(x0, m40_tensor_get_data(qkv), (size_t)(B * T * W) * sizeof *x0) == 0);
        memcpy(m40_tensor_get_data(qkv), x0, (size_t)(B * T * W) * sizeof *x0);
    }
    int same = y[0] && y[1] &&
               memcmp(m40_tensor_get_data(y[0]), m40_tensor_get_data(y[1]), m40_tensor_get_nbytes(y[0])) == 0 &&
               memcmp(m40_tensor_get_data(kc[0]), m40_tensor_get_data(kc[1]), m40_tensor_get_nbytes(kc[0])) == 0 &&
               memcmp(m40_tensor_get_data(vc[0]), m40_tensor_get_data(vc[1]), m40_tensor_get_nbytes(vc[0])) == 0;
    if (!same)
        fprintf(stderr, "rope fused B%d T%d H%d G%d D%d rope_dims %d pairs %d: differs from ROPE + "
                "ATTENTION\n", B, T, H, G, D, rd, (int)pairs);
    CHECK(same);
    for (int s = 0; s < 2; s++) {
        m40_graph_destroy(g[s]);
        m40_tensor_destroy(kc[s]);
        m40_tensor_destroy(vc[s]);
    }
    m40_tensor *all[] = {qkv, pos, hist, hp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
    free(x0);
}

/* Bad inputs: statuses and messages; a valid call afterwards succeeds. */
static void bad_inputs(void) {
    const int B = 2, T = 3, H = 4, G = 2, D = 8, S = 2, L = 6;
    m40_tensor *q = tnew(M40_DTYPE_F32, 3, B, T, H * D, 0), *y = tnew(M40_DTYPE_F32, 3, B, T, H * D, 0);
    m40_tensor *kc = tnew(M40_DTYPE_F16, 4, S, L, G, D), *vc = tnew(M40_DTYPE_F16, 4, S, L, G, D);
    m40_tensor *vc32 = tnew(M40_DTYPE_F32, 4, S, L, G, D), *kv = tnew(M40_DTYPE_F32, 3, B, T, G * D, 0);
    m40_tensor *pos = tnew(M40_DTYPE_I32, 2, B, T, 0, 0), *slot = tnew(M40_DTYPE_I32, 1, B, 0, 0, 0);
    m40_tensor *pos1 = tnew(M40_DTYPE_I32, 1, 1, 0, 0, 0), *posf = tnew(M40_DTYPE_F32, 2, B, T, 0, 0);
    m40_tensor *qi = tnew(M40_DTYPE_I32, 3, B, T, H * D, 0), *k3 = tnew(M40_DTYPE_F16, 3, S, L, G * D, 0);
    m40_tensor *big = tnew(M40_DTYPE_F32, 3, 3, T, H * D, 0), *kbig = tnew(M40_DTYPE_F32, 3, 3, T, G * D, 0);
    int32_t *pp = m40_tensor_get_data(pos), *sp = m40_tensor_get_data(slot);
    for (int i = 0; i < B * T; i++) pp[i] = i % T;
    sp[0] = 1, sp[1] = 0;
    m40_attention_desc ad;
    m40_attention_desc_init(&ad);
    CHECK(ad.struct_size == sizeof ad && ad.heads == 1 && ad.kv_heads == 1 && ad.head_dim == 128 &&
          ad.scale == 0.0f);
    ad.heads = H, ad.kv_heads = G, ad.head_dim = D;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_OK);
    CHECK_ST(m40_kv_append(C, kv, pos, slot, kc), M40_OK);
    /* rows of no values (a cache of head_dim 0) with a stride the span rule
    ** never bounds: nothing appended, no overflow (UBSan) */
    {
        m40_tensor_desc dk = {.dtype = M40_DTYPE_F32, .ndim = 3, .shape = {3, 1, 0},
                              .stride = {(int64_t)1 << 62, 0, 1}};
        m40_tensor_desc dc = {.dtype = M40_DTYPE_F32, .ndim = 4, .shape = {3, 1, 1, 0},
                              .stride = {0, 0, 0, 1}};
        m40_tensor_desc dp = {.dtype = M40_DTYPE_I32, .ndim = 2, .shape = {3, 1}, .stride = {1, 1}};
        static int32_t p0[3];
        static float buf[4];
        m40_tensor *ke = NULL, *ce = NULL, *pe = NULL;
        CHECK_ST(m40_tensor_wrap(C, &dk, M40_LOC_HOST, buf, &ke), M40_OK);
        CHECK_ST(m40_tensor_wrap(C, &dc, M40_LOC_HOST, buf, &ce), M40_OK);
        CHECK_ST(m40_tensor_wrap(C, &dp, M40_LOC_HOST, p0, &pe), M40_OK);
        CHECK_ST(m40_kv_append(C, ke, pe, NULL, ce), M40_OK);
        m40_tensor_destroy(ke), m40_tensor_destroy(ce), m40_tensor_destroy(pe);
    }

    /* dtypes */
    CHECK_ST(m40_attention(C, &ad, qi, kc, vc, pos, slot, y), M40_ERR_DTYPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc32, pos, slot, y), M40_ERR_DTYPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, posf, slot, y), M40_ERR_DTYPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, qi), M40_ERR_DTYPE);
    CHECK_ST(m40_kv_append(C, kv, posf, NULL, kc), M40_ERR_DTYPE);
    CHECK_ST(m40_kv_append(C, kv, pos, NULL, pos), M40_ERR_DTYPE);
    /* shapes */
    CHECK_ST(m40_attention(C, &ad, q, k3, vc, pos, slot, y), M40_ERR_SHAPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos1, slot, y), M40_ERR_SHAPE);
    CHECK(has("pos"));
    CHECK_ST(m40_attention(C, &ad, kv, kc, vc, pos, slot, y), M40_ERR_SHAPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, pos, y), M40_ERR_SHAPE);
    CHECK_ST(m40_attention(C, &ad, big, kc, vc, pos, slot, big), M40_ERR_SHAPE);
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, big), M40_ERR_SHAPE);
    CHECK_ST(m40_kv_append(C, q, pos, NULL, kc), M40_ERR_SHAPE);
    CHECK_ST(m40_kv_append(C, kbig, pos1, NULL, kc), M40_ERR_SHAPE);
    /* 3 sequences, no slot tensor, 2 slots */
    m40_tensor *pos3 = tnew(M40_DTYPE_I32, 2, 3, T, 0, 0);
    CHECK_ST(m40_kv_append(C, kbig, pos3, NULL, kc), M40_ERR_SHAPE);
    CHECK(has("slots"));
    ad.head_dim = 16;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_SHAPE);
    /* parameters */
    ad.head_dim = D, ad.heads = 3;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK(has("divisible"));
    ad.heads = H, ad.kv_heads = 0;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    ad.kv_heads = G, ad.head_dim = 300;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    ad.head_dim = D, ad.scale = NAN;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    ad.scale = 0.0f;
    CHECK_ST(m40_attention(C, NULL, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    m40_attention_desc old = ad;
    old.struct_size = 8;
    CHECK_ST(m40_attention(C, &old, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_attention(C, &ad, NULL, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_kv_append(C, kv, NULL, NULL, kc), M40_ERR_INVALID_ARG);
    /* a strided cache: not taken */
    m40_tensor_desc vd = *m40_tensor_get_desc(kc);
    vd.shape[1] = L - 1;
    m40_tensor *kview = NULL, *vview = NULL;
    CHECK_ST(m40_tensor_view(C, kc, &vd, 0, &kview), M40_OK);
    CHECK_ST(m40_tensor_view(C, vc, &vd, 0, &vview), M40_OK);
    CHECK_ST(m40_attention(C, &ad, q, kview, vview, pos, slot, y), M40_ERR_UNSUPPORTED);

    /* indices: positions past the cache, below -1, slots out of range; nothing written */
    memset(m40_tensor_get_data(y), 0x7f, m40_tensor_get_nbytes(y));
    pp[4] = L;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK(has("pos[1,1] = 6 past the cache length 6"));
    CHECK(((uint32_t *)m40_tensor_get_data(y))[0] == 0x7f7f7f7fu);
    void *before = malloc(m40_tensor_get_nbytes(kc));
    memcpy(before, m40_tensor_get_data(kc), m40_tensor_get_nbytes(kc));
    CHECK_ST(m40_kv_append(C, kv, pos, slot, kc), M40_ERR_INVALID_ARG);
    CHECK(has("past the cache"));
    CHECK(memcmp(before, m40_tensor_get_data(kc), m40_tensor_get_nbytes(kc)) == 0);
    pp[4] = -2;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK(has("below -1"));
    pp[4] = 1;
    sp[1] = S;
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_ERR_INVALID_ARG);
    CHECK(has("slot[1] = 2 out of range [0, 2)"));
    CHECK_ST(m40_kv_append(C, kv, pos, slot, kc), M40_ERR_INVALID_ARG);
    sp[1] = -1;
    CHECK_ST(m40_kv_append(C, kv, pos, slot, kc), M40_ERR_INVALID_ARG);
    CHECK(memcmp(before, m40_tensor_get_data(kc), m40_tensor_get_nbytes(kc)) == 0);
    free(before);
    sp[1] = 0;
    /* still usable */
    CHECK_ST(m40_attention(C, &ad, q, kc, vc, pos, slot, y), M40_OK);
    CHECK_ST(m40_kv_append(C, kv, pos, NULL, kc), M40_OK);

    m40_tensor *all[] = {q, y, kc, vc, vc32, kv, pos, slot, pos1, posf, qi, k3, big, kbig, pos3,
                         kview, vview};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
}

/* The node's rules: shapes, dtypes, parameters, STATE caches; node_rope:
** its rope_dims (0: none), node_rope_theta its base. */
static int node_rope = 0;
static float node_rope_theta = 10000.0f;
static m40_status node_with(int H, int G, int D, const int64_t *qs, const int64_t *ks,
                            m40_dtype kdt, m40_dtype vdt, const int64_t *ps, int pn,
                            m40_tensor_role cache_role, int with_slot, int64_t slot_n) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    if (!g) return M40_ERR_STATE;
    m40_tensor_desc dq, dk, dv, dp, ds;
    m40_tensor_desc_make(&dq, M40_DTYPE_F32, 3, qs);
    m40_tensor_desc_make(&dk, kdt, 4, ks);
    m40_tensor_desc_make(&dv, vdt, 4, ks);
    m40_tensor_desc_make(&dp, M40_DTYPE_I32, pn, ps);
    m40_tensor_desc_make(&ds, M40_DTYPE_I32, 1, &slot_n);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_ATTENTION);
    nd.ninputs = with_slot ? 5 : 4;
    nd.heads = H, nd.kv_heads = G, nd.head_dim = D;
    nd.rope_dims = node_rope, nd.rope_theta = node_rope_theta;
    m40_graph_tensor(g, M40_ROLE_INPUT, "qkv", &dq, &nd.inputs[0]);
    m40_graph_tensor(g, cache_role, "k", &dk, &nd.inputs[1]);
    m40_graph_tensor(g, cache_role, "v", &dv, &nd.inputs[2]);
    m40_graph_tensor(g, M40_ROLE_INPUT, "pos", &dp, &nd.inputs[3]);
    if (with_slot) m40_graph_tensor(g, M40_ROLE_INPUT, "slot", &ds, &nd.inputs[4]);
    int y;
    m40_status st = m40_graph_node(g, &nd, &y);
    if (st == M40_OK) {
        m40_plan_info pi;
        CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
        CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    }
    m40_graph_destroy(g);
    return st;
}

static void node_rules(void) {
    const int64_t q[3] = {2, 1, 64}, k[4] = {2, 16, 2, 8}, p[2] = {2, 1}, p1[1] = {1};
    const m40_dtype F16 = M40_DTYPE_F16, F32 = M40_DTYPE_F32;
    const m40_tensor_role ST = M40_ROLE_STATE;
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_OK);
    CHECK_ST(node_with(4, 2, 8, q, k, F32, F32, p, 2, ST, 1, 2), M40_OK);
    CHECK_ST(node_with(3, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_INVALID_ARG);
    CHECK_ST(node_with(4, 0, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_INVALID_ARG);
    CHECK_ST(node_with(4, 2, 300, q, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_INVALID_ARG);
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F32, p, 2, ST, 0, 0), M40_ERR_DTYPE);
    CHECK_ST(node_with(4, 2, 8, q, k, M40_DTYPE_I32, M40_DTYPE_I32, p, 2, ST, 0, 0), M40_ERR_DTYPE);
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p1, 1, ST, 0, 0), M40_ERR_SHAPE); /* old pos [1] */
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 1, 3), M40_ERR_SHAPE);  /* slot [3] */
    const int64_t q2[3] = {2, 1, 65}, k2[4] = {1, 16, 2, 8};
    CHECK_ST(node_with(4, 2, 8, q2, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_SHAPE);
    CHECK_ST(node_with(4, 2, 8, q, k2, F16, F16, p, 2, ST, 0, 0), M40_ERR_SHAPE); /* B > S */
    CHECK_ST(node_with(4, 2, 8, q, k2, F16, F16, p, 2, ST, 1, 2), M40_OK);       /* slots */
    /* the caches must be STATE tensors (the node writes them) */
    CHECK(node_with(4, 2, 8, q, k, F16, F16, p, 2, M40_ROLE_WEIGHT, 0, 0) != M40_OK);
    /* RoPE's parameters: rope_dims even, 2 .. head_dim; pairs; theta */
    node_rope = 4;
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_OK);
    node_rope = 8;
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_OK);
    const int bad_rd[] = {3, 10, -2};
    for (int i = 0; i < 3; i++) {
        node_rope = bad_rd[i];
        CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_INVALID_ARG);
        CHECK(has("rope_dims"));
    }
    node_rope = 4, node_rope_theta = -1.0f;
    CHECK_ST(node_with(4, 2, 8, q, k, F16, F16, p, 2, ST, 0, 0), M40_ERR_INVALID_ARG);
    CHECK(has("rope_theta"));
    node_rope = 0, node_rope_theta = 10000.0f;
    CHECK(m40_op_runs(M40_OP_ATTENTION) == 1);
}

/* Scores of ±40,000 (q = k = 100s, D 4): the softmax subtracts the row's
** maximum before exp, so the answer is v of the first key, exactly, not
** inf/inf (a mutation run found no case with scores past exp's range). */
static void large_scores(void) {
    m40_attention_desc d;
    m40_attention_desc_init(&d);
    d.head_dim = 4;
    m40_tensor *q = tnew(M40_DTYPE_F32, 3, 1, 1, 4, 0), *k = tnew(M40_DTYPE_F32, 4, 1, 2, 1, 4),
               *v = tnew(M40_DTYPE_F32, 4, 1, 2, 1, 4), *pos = tnew(M40_DTYPE_I32, 2, 1, 1, 0, 0),
               *y = tnew(M40_DTYPE_F32, 3, 1, 1, 4, 0);
    float *fq = m40_tensor_get_data(q), *fk = m40_tensor_get_data(k), *fv = m40_tensor_get_data(v);
    for (int i = 0; i < 4; i++) fq[i] = 100, fk[i] = 100, fk[4 + i] = -100, fv[i] = 1, fv[4 + i] = 2;
    ((int32_t *)m40_tensor_get_data(pos))[0] = 1;
    CHECK_ST(m40_attention(C, &d, q, k, v, pos, NULL, y), M40_OK);
    const float *fy = m40_tensor_get_data(y);
    for (int i = 0; i < 4; i++) CHECK(fy[i] == 1.0f);
    m40_tensor *all[5] = {q, k, v, pos, y};
    for (int i = 0; i < 5; i++) m40_tensor_destroy(all[i]);
}

/* The decode kernel the node's rule (lib/ops/attention.c attn_bound) takes
** at ChatGLM2's shape (32 heads, 2 KV groups, f16 caches, T 1) with head
** dim D on a device of compute capability cc with sms SMs, under a key
** bound (0: none) in a cache of L keys: its variant (10 v5, 11 / 12 v6
** with 8 / 4 rows a lane, 0 untouched: the tile kernel), *ways v5's ways
** row (the rule's; a forced row is attn_shape's, not set here); g_wsplits
** its ways' splits as m40k_attention_splits takes them (1 without ways). */
static int64_t g_wsplits, g_batch = 1; /* the sequences (B) rule_pick asks for */
static int rule_pick(int cc, int sms, int64_t bound, int64_t L, int D, int *ways) {
    m40_ctx c;
    memset(&c, 0, sizeof c);
    c.cc_major = cc, c.sm_count = sms, c.attn_keys = bound;
    m40k_attn_shape s = {.B = g_batch, .T = 1, .H = 32, .G = 2, .D = D, .S = g_batch, .L = L,
                         .qs0 = 36 * D, .qs1 = 36 * D, .scale = 1.0f, .cache_f16 = 1};
    m40__attn_bound(&c, &s);
    *ways = s.v5_ways;
    g_wsplits = s.v5_ways > 0 ? m40k_attention_splits(&s, sms) : 1;
    return s.decode_variant;
}

/* v5 (its ways, row 8) under bounds <= 512, for one sequence to 1024 with a
** split a 256 keys past 512, v6 past them; on a Maxwell card (cc 5.x) v5
** only to 128 keys (ATTN_SHORT_KEYS_MAXWELL: a projection); the
** knobs move each edge (each restored after) */
static void rule_cases(void) {
    const int sk = m40__attn_short_keys, wy = m40__attn_v5_ways, wk = m40__attn_v5_ways_keys,
              ws = m40__attn_v5_wsplits;
    int w = -1;
    CHECK(rule_pick(9, 132, 128, 8192, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1);
    CHECK(rule_pick(9, 132, 513, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 3);
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 4);
    CHECK(rule_pick(9, 132, 1025, 8192, 128, &w) == 12); /* 1025 x 2 key-groups < 256 x 132 */
    CHECK(rule_pick(9, 132, 16384, 1024, 128, &w) == 12); /* the bound decides, not L */
    CHECK(rule_pick(6, 30, 1024, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 4);
    g_batch = 2; /* two sequences: the ways to v5's edge only (not measured past it) */
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1);
    CHECK(rule_pick(9, 132, 513, 8192, 128, &w) == 12);
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 12);
    g_batch = 1;
    CHECK(rule_pick(9, 132, 0, 32768, 128, &w) == 11);  /* no bound: the cache, 8 rows */
    CHECK(rule_pick(6, 30, 256, 8192, 128, &w) == 10 && w == 8); /* Pascal: the H100's rule */
    CHECK(rule_pick(5, 24, 128, 8192, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(5, 24, 64, 8192, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(5, 24, 129, 8192, 128, &w) == 12);
    CHECK(rule_pick(5, 24, 512, 8192, 128, &w) == 12);
    CHECK(rule_pick(5, 24, 4096, 8192, 128, &w) == 11); /* 4096 x 2 >= 256 x 24 */
    CHECK(rule_pick(5, 24, 0, 8192, 128, &w) == 11);
    CHECK(rule_pick(5, 24, 100, 100, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(5, 24, 200, 100, 128, &w) == 12); /* the bound decides, not L */
    CHECK(rule_pick(9, 132, 128, 8192, 64, &w) == 0);  /* D 64: neither v5 nor v6 */
    CHECK(rule_pick(5, 24, 128, 8192, 64, &w) == 0);
    m40__attn_short_keys = 512; /* the H100's edge on a Maxwell card */
    CHECK(rule_pick(5, 24, 512, 8192, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(5, 24, 1024, 8192, 128, &w) == 12);
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 12); /* the knob's edge for the ways too */
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8);
    m40__attn_short_keys = 1024; /* v5 to 1024 by the knob: its splits past 512, the ways to 512 as before */
    CHECK(rule_pick(9, 132, 700, 8192, 128, &w) == 10 && w == 0);
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1);
    CHECK(rule_pick(5, 24, 1024, 8192, 128, &w) == 10 && w == 0);
    g_batch = 2;
    CHECK(rule_pick(9, 132, 700, 8192, 128, &w) == 10 && w == 0);
    g_batch = 1;
    m40__attn_short_keys = 64;
    CHECK(rule_pick(9, 132, 128, 8192, 128, &w) == 12);
    CHECK(rule_pick(9, 132, 64, 8192, 128, &w) == 10 && w == 8);
    m40__attn_short_keys = sk;
    m40__attn_v5_ways = 0; /* v5's splits where v5 runs */
    CHECK(rule_pick(5, 24, 128, 8192, 128, &w) == 10 && w == 0);
    CHECK(rule_pick(5, 24, 256, 8192, 128, &w) == 12);
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 0);
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 12); /* the ways' edge is theirs */
    m40__attn_v5_ways = wy;
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1); /* no splits to 512 */
    m40__attn_v5_ways_keys = 1024; /* the ways past the edge too, a split a 256 keys past 512 */
    CHECK(rule_pick(5, 24, 1024, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 4);
    CHECK(rule_pick(9, 132, 1000, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 4);
    CHECK(rule_pick(9, 132, 513, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 3);
    CHECK(rule_pick(9, 132, 512, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1);
    CHECK(rule_pick(5, 24, 2048, 8192, 128, &w) == 12);
    m40__attn_v5_ways_keys = 16384; /* a bound past the cache: the cache's keys set the splits */
    CHECK(rule_pick(9, 132, 16384, 1024, 128, &w) == 10 && w == 8 && g_wsplits == 4);
    m40__attn_v5_ways_keys = 1024;
    m40__attn_v5_wsplits = 64; /* forced: capped at 32, and at a 16-key share each */
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 32);
    CHECK(rule_pick(9, 132, 100, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 7);
    m40__attn_v5_wsplits = 0; /* none */
    CHECK(rule_pick(9, 132, 1024, 8192, 128, &w) == 10 && w == 8 && g_wsplits == 1);
    m40__attn_v5_wsplits = ws;
    m40__attn_v5_ways_keys = 64; /* shorter than the edge: the splits from 65 */
    CHECK(rule_pick(5, 24, 64, 8192, 128, &w) == 10 && w == 8);
    CHECK(rule_pick(5, 24, 128, 8192, 128, &w) == 10 && w == 0);
    m40__attn_v5_ways_keys = wk;
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) {
        fprintf(stderr, "CPU context: %s\n", m40_errmsg(C));
        return 1;
    }
    attn_case(1, 1, 1, 1, 8, 1, 4, M40_DTYPE_F32, 0, 0.0f);
    attn_case(3, 4, 4, 2, 16, 3, 12, M40_DTYPE_F32, 1, 0.0f);
    attn_case(3, 5, 6, 3, 8, 4, 16, M40_DTYPE_F16, 1, 0.3f);
    attn_case(2, 9, 8, 1, 12, 2, 24, M40_DTYPE_F16, 0, 0.0f);
    attn_case(2, 3, 2, 2, 5, 2, 10, M40_DTYPE_F32, 0, 0.0f);
    rope_fused(2, 3, 4, 2, 16, 8, 8, M40_ROPE_ADJACENT, 1.0f, M40_DTYPE_F16, 0);
    rope_fused(1, 5, 6, 3, 12, 9, 12, M40_ROPE_HALF, 0.5f, M40_DTYPE_F32, 1);
    rope_fused(3, 1, 8, 2, 32, 6, 16, M40_ROPE_ADJACENT, 1.0f, M40_DTYPE_F16, 1);
    large_scores();
    bad_inputs();
    node_rules();
    rule_cases();
    m40_ctx_destroy(C);
    return m40t_finish("test_attention");
}
