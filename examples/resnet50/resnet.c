/* ResNet on the libm40 graph API: see resnet.h. */
#include "resnet.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BN_EPS 1e-5

rn_config rn_resnet50(void) {
    rn_config c = {64, {3, 4, 6, 3}, 1000};
    return c;
}

typedef struct bld {
    m40_layout layout;
    m40_ctx *ctx;
    m40_graph *g;
    m40_st_file *w;       /* NULL: random weights */
    char *used;           /* per file tensor: consumed by the model */
    float **bufs;         /* folded host weights, alive until m40_graph_alloc */
    int nbufs, capbufs;
    struct { int id; float std; } *rnd; /* weights to fill after alloc */
    int nrnd, caprnd;
    m40_status st;
    char *err;
    size_t errlen;
} bld;

static int fail(bld *b, m40_status st, const char *fmt, ...) {
    if (b->st == M40_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->errlen, fmt, ap);
        va_end(ap);
        b->st = st;
    }
    return -1;
}

/* Records a graph-API failure with the context's message. */
static int gfail(bld *b, m40_status st, const char *what) {
    return fail(b, st, "%s: %s", what, m40_errmsg(b->ctx));
}

static float *keep(bld *b, size_t n) {
    if (b->nbufs == b->capbufs) {
        int nc = b->capbufs ? 2 * b->capbufs : 64;
        float **nb = realloc(b->bufs, (size_t)nc * sizeof *nb);
        if (!nb) return NULL;
        b->bufs = nb;
        b->capbufs = nc;
    }
    float *p = malloc(n * sizeof(float));
    if (p) b->bufs[b->nbufs++] = p;
    return p;
}

/* A file tensor checked by name, F32 dtype and shape; marks it used. */
static const float *file_tensor(bld *b, const char *name, int ndim, const int64_t *shape) {
    const m40_st_tensor *t;
    m40_status st = m40_st_expect(b->w, name, M40_DTYPE_F32, ndim, shape, &t);
    if (st != M40_OK) {
        fail(b, st, "%s", m40_st_errmsg(b->w));
        return NULL;
    }
    b->used[t - m40_st_get(b->w, 0)] = 1;
    return m40_st_data(b->w, t);
}

/* Declares a WEIGHT; data = host values, or NULL for a random fill (std). */
static int weight(bld *b, const char *name, int ndim, const int64_t *shape, const float *data,
                  float std) {
    if (b->st != M40_OK) return -1;
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, ndim, shape);
    int id;
    m40_status st = m40_graph_tensor(b->g, M40_ROLE_WEIGHT, name, &d, &id);
    if (st != M40_OK) return gfail(b, st, name);
    if (data) {
        st = m40_graph_set_data(b->g, id, data, (size_t)m40_tensor_desc_numel(&d) * 4);
        if (st != M40_OK) return gfail(b, st, name);
    } else {
        if (b->nrnd == b->caprnd) {
            int nc = b->caprnd ? 2 * b->caprnd : 128;
            void *nr = realloc(b->rnd, (size_t)nc * sizeof *b->rnd);
            if (!nr) return fail(b, M40_ERR_OOM_HOST, "out of host memory");
            b->rnd = nr;
            b->caprnd = nc;
        }
        b->rnd[b->nrnd].id = id;
        b->rnd[b->nrnd++].std = std;
    }
    return id;
}

static int node(bld *b, m40_node_desc *nd) {
    if (b->st != M40_OK) return -1;
    int out;
    m40_status st = m40_graph_node(b->g, nd, &out);
    return st == M40_OK ? out : gfail(b, st, nd->name);
}

/* conv (no bias) + BatchNorm, folded into one conv with bias; `residual`
** (a tensor id, or -1) is added and ReLU applied in the conv's epilogue. */
static int conv_bn(bld *b, int x, const char *conv, const char *bn, int64_t cin, int64_t cout,
                   int k, int stride, int residual, int relu) {
    if (b->st != M40_OK) return -1;
    char wn[128], bname[128];
    snprintf(wn, sizeof wn, "%s.weight", conv);
    snprintf(bname, sizeof bname, "%s.folded_bias", conv);
    int64_t ws[4] = {cout, cin, k, k}, bs[1] = {cout};
    int nhwc = b->layout == M40_LAYOUT_NHWC;
    float *wf = NULL, *bf = NULL;
    if (b->w) {
        const float *w = file_tensor(b, wn, 4, ws);
        char n[128];
        const float *p[4];
        static const char *const parts[4] = {"weight", "bias", "running_mean", "running_var"};
        for (int i = 0; i < 4; i++) {
            snprintf(n, sizeof n, "%s.%s", bn, parts[i]);
            p[i] = file_tensor(b, n, 1, bs);
        }
        snprintf(n, sizeof n, "%s.num_batches_tracked", bn); /* training counter: unused */
        const m40_st_tensor *nbt = m40_st_find(b->w, n);
        if (nbt) b->used[nbt - m40_st_get(b->w, 0)] = 1;
        if (b->st != M40_OK) return -1;
        size_t per = (size_t)(cin * k * k);
        wf = keep(b, (size_t)cout * per);
        bf = keep(b, (size_t)cout);
        if (!wf || !bf) return fail(b, M40_ERR_OOM_HOST, "out of host memory folding %s", conv);
        for (int64_t o = 0; o < cout; o++) {
            if (!(p[3][o] >= 0)) /* also catches NaN */
                return fail(b, M40_ERR_FORMAT, "weights: %s.running_var[%lld] = %g is negative",
                            bn, (long long)o, p[3][o]);
            double s = p[0][o] / sqrt((double)p[3][o] + BN_EPS);
            /* [K,C,R,S] as in the file, or reordered to [K,R,S,C] for NHWC */
            for (int64_t c = 0; c < cin; c++)
                for (int64_t rs = 0; rs < k * k; rs++) {
                    size_t src = (size_t)o * per + (size_t)(c * k * k + rs);
                    size_t dst = (size_t)o * per + (size_t)(nhwc ? rs * cin + c : c * k * k + rs);
                    wf[dst] = (float)(w[src] * s);
                }
            bf[o] = (float)(p[1][o] - p[2][o] * s);
        }
    }
    if (nhwc) ws[1] = k, ws[2] = k, ws[3] = cin;
    int w = weight(b, wn, 4, ws, wf, sqrtf(2.0f / (float)(cin * k * k)));
    int bias = weight(b, bname, 1, bs, bf, 0.01f);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.name = conv;
    nd.ninputs = residual >= 0 ? 4 : 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = bias;
    if (residual >= 0) nd.inputs[3] = residual;
    nd.stride[0] = nd.stride[1] = stride;
    nd.pad[0] = nd.pad[1] = k / 2;
    nd.layout = b->layout;
    nd.fuse_relu = relu;
    return node(b, &nd);
}

/* torchvision's Bottleneck (v1.5: the stride sits on the 3x3); the residual
** add and the last ReLU run in conv3's epilogue. */
static int bottleneck(bld *b, int x, const char *p, int64_t cin, int64_t width, int stride,
                      int downsample) {
    char c[96], n[96];
    int idn = x;
    if (downsample) {
        snprintf(c, sizeof c, "%s.downsample.0", p);
        snprintf(n, sizeof n, "%s.downsample.1", p);
        idn = conv_bn(b, x, c, n, cin, width * 4, 1, stride, -1, 0);
    }
    snprintf(c, sizeof c, "%s.conv1", p);
    snprintf(n, sizeof n, "%s.bn1", p);
    int y = conv_bn(b, x, c, n, cin, width, 1, 1, -1, 1);
    snprintf(c, sizeof c, "%s.conv2", p);
    snprintf(n, sizeof n, "%s.bn2", p);
    y = conv_bn(b, y, c, n, width, width, 3, stride, -1, 1);
    snprintf(c, sizeof c, "%s.conv3", p);
    snprintf(n, sizeof n, "%s.bn3", p);
    return conv_bn(b, y, c, n, width, width * 4, 1, 1, idn, 1);
}

m40_status rn_config_from_weights(m40_st_file *w, rn_config *cfg, char *err, size_t errlen) {
    const m40_st_tensor *c1 = m40_st_find(w, "conv1.weight"), *fc = m40_st_find(w, "fc.weight");
    if (!c1 || !fc || c1->ndim != 4 || fc->ndim != 2) {
        snprintf(err, errlen, "weights: no %s: not a torchvision-style ResNet checkpoint",
                 !c1 || c1->ndim != 4 ? "4-D conv1.weight" : "2-D fc.weight");
        return M40_ERR_FORMAT;
    }
    cfg->base = (int)c1->shape[0];
    cfg->classes = (int)fc->shape[0];
    for (int s = 0; s < 4; s++) {
        int n = 0;
        char name[64];
        for (;; n++) {
            snprintf(name, sizeof name, "layer%d.%d.conv1.weight", s + 1, n);
            if (!m40_st_find(w, name)) break;
        }
        if (n == 0) {
            snprintf(err, errlen, "weights: stage layer%d has no blocks (no %s)", s + 1, name);
            return M40_ERR_FORMAT;
        }
        cfg->blocks[s] = n;
    }
    if (cfg->base < 1 || cfg->classes < 1 || fc->shape[1] != (int64_t)cfg->base * 32) {
        snprintf(err, errlen, "weights: fc.weight has %lld inputs, expected %d (8 x 4 x base %d)",
                 (long long)fc->shape[1], cfg->base * 32, cfg->base);
        return M40_ERR_SHAPE;
    }
    return M40_OK;
}

void rn_free(rn_model *m) {
    if (!m) return;
    m40_graph_destroy(m->g);
    m->g = NULL;
}

void rn_nchw_to_nhwc(const float *src, float *dst, int N, int C, int H, int W) {
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H * W; i++)
                dst[((size_t)n * H * W + (size_t)i) * C + c] = src[((size_t)n * C + c) * H * W + (size_t)i];
}

m40_status rn_build(m40_ctx *ctx, const rn_config *cfg, m40_st_file *weights, uint64_t seed,
                    int N, int H, int W, m40_layout layout, const m40_budget *budget,
                    rn_model *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->batch = N;
    m->height = H;
    m->width = W;
    m->layout = layout;
    bld b = {.layout = layout, .ctx = ctx, .w = weights, .st = M40_OK, .err = err, .errlen = errlen};
    err[0] = '\0';
    if (N < 1 || H < 32 || W < 32)
        return fail(&b, M40_ERR_INVALID_ARG, "batch %d and size %dx%d: need batch >= 1 and "
                    "images of at least 32x32", N, H, W), b.st;
    if (weights && !(b.used = calloc(m40_st_count(weights) + 1, 1)))
        return fail(&b, M40_ERR_OOM_HOST, "out of host memory"), b.st;
    m40_status st = m40_graph_create(ctx, &m->g);
    if (st != M40_OK) {
        free(b.used);
        snprintf(err, errlen, "%s", m40_errmsg(ctx));
        return st;
    }
    b.g = m->g;

    m40_tensor_desc d;
    int64_t xs[4] = {N, 3, H, W};
    if (layout == M40_LAYOUT_NHWC) xs[1] = H, xs[2] = W, xs[3] = 3;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 4, xs);
    if ((st = m40_graph_tensor(b.g, M40_ROLE_INPUT, "input", &d, &m->input_id)) != M40_OK)
        gfail(&b, st, "input");
    int x = conv_bn(&b, m->input_id, "conv1", "bn1", 3, cfg->base, 7, 2, -1, 1);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "maxpool";
    nd.pool = M40_POOL_MAX;
    nd.kernel[0] = nd.kernel[1] = 3;
    nd.stride[0] = nd.stride[1] = 2;
    nd.pad[0] = nd.pad[1] = 1;
    nd.layout = layout;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = node(&b, &nd);
    int64_t cin = cfg->base;
    for (int s = 0; s < 4; s++) {
        int64_t width = (int64_t)cfg->base << s;
        for (int i = 0; i < cfg->blocks[s]; i++) {
            char p[32];
            snprintf(p, sizeof p, "layer%d.%d", s + 1, i);
            x = bottleneck(&b, x, p, cin, width, i == 0 && s > 0 ? 2 : 1, i == 0);
            cin = width * 4;
        }
    }
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "avgpool";
    nd.pool = M40_POOL_GLOBAL_AVG;
    nd.layout = layout;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = node(&b, &nd);
    int64_t fws[2] = {cfg->classes, cin}, fbs[1] = {cfg->classes};
    const float *fw = NULL, *fb = NULL;
    if (weights) {
        fw = file_tensor(&b, "fc.weight", 2, fws);
        fb = file_tensor(&b, "fc.bias", 1, fbs);
    }
    int w = weight(&b, "fc.weight", 2, fws, fw, sqrtf(1.0f / (float)cin));
    int bias = weight(&b, "fc.bias", 1, fbs, fb, 0.01f);
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.name = "fc";
    nd.ninputs = 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = bias;
    m->logits_id = node(&b, &nd);
    if (b.st == M40_OK && (st = m40_graph_mark_output(b.g, m->logits_id)) != M40_OK)
        gfail(&b, st, "logits");

    /* every tensor in the file must belong to the model */
    for (size_t i = 0; weights && b.st == M40_OK && i < m40_st_count(weights); i++)
        if (!b.used[i])
            fail(&b, M40_ERR_FORMAT, "weights: unknown tensor '%s' (not part of a ResNet with "
                 "base %d and blocks %d,%d,%d,%d)", m40_st_get(weights, i)->name, cfg->base,
                 cfg->blocks[0], cfg->blocks[1], cfg->blocks[2], cfg->blocks[3]);

    if (b.st == M40_OK && (st = m40_graph_plan(b.g, budget, &m->plan)) != M40_OK)
        gfail(&b, st, "plan");
    if (b.st == M40_OK && (st = m40_graph_alloc(b.g)) != M40_OK) gfail(&b, st, "alloc");
    for (int i = 0; b.st == M40_OK && i < b.nrnd; i++) {
        m40_tensor *t;
        if ((st = m40_graph_get_tensor(b.g, b.rnd[i].id, &t)) != M40_OK ||
            (st = m40_fill_random(ctx, t, seed * 1000003u + (uint64_t)i, M40_RANDOM_NORMAL, 0.0f,
                                  b.rnd[i].std)) != M40_OK)
            gfail(&b, st, "random weights");
    }
    for (int i = 0; i < b.nbufs; i++) free(b.bufs[i]);
    free(b.bufs);
    free(b.rnd);
    free(b.used);
    if (b.st != M40_OK) rn_free(m);
    return b.st;
}
