/* The ResNet builder (include/m40/models.h): one declaration of the graph
** that m40-plan plans and examples/resnet50 runs. Weights from a file are
** checked, BN-folded and (NHWC) reordered here; without a file the same
** tensors are declared with no data. */
#include "build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BN_EPS 1e-5
#define MAX_BASE 4096
#define MAX_BLOCKS 64
#define MAX_CLASSES (1 << 20)
#define MAX_BATCH (1 << 20)
#define MAX_SIDE (1 << 15)

static const char FN[] = "m40_resnet50_graph";

void m40_resnet50_desc_init(m40_resnet50_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->batch = 1;
    d->height = d->width = 224;
    d->layout = M40_LAYOUT_NHWC;
    d->base = 64;
    d->blocks[0] = 3, d->blocks[1] = 4, d->blocks[2] = 6, d->blocks[3] = 3;
    d->classes = 1000;
}

typedef struct rb {
    m40__mb b;
    m40_layout layout;
    m40_st_file *w;       /* NULL: no file */
    char *used;           /* [tensors in the file]: taken by the model */
    float **bufs;         /* folded host weights, alive until m40_graph_alloc */
    int nbufs, capbufs;
    struct rnd { int id; float std; } *rnd; /* random_weights: fills after alloc */
    int nrnd, caprnd, random;
} rb;

/* The file's bytes are not necessarily aligned to 4 (m40_st_get_data). */
static double ld(const void *p, size_t i) {
    float v;
    memcpy(&v, (const char *)p + 4 * i, 4);
    return v;
}

static float *keep(rb *r, size_t n) {
    if (r->nbufs == r->capbufs) {
        int nc = r->capbufs ? 2 * r->capbufs : 64;
        float **nb = realloc(r->bufs, (size_t)nc * sizeof *nb);
        if (!nb) return NULL;
        r->bufs = nb;
        r->capbufs = nc;
    }
    float *p = malloc(n * sizeof(float));
    if (p) r->bufs[r->nbufs++] = p;
    return p;
}

static void mark_used(rb *r, const m40_st_tensor *t) {
    r->used[t - m40_st_get(r->w, 0)] = 1;
}

/* The file tensor `name`, checked for F32 and `shape`; NULL (and the
** builder failed) if it is missing or differs. */
static const void *file_tensor(rb *r, const char *name, int ndim, const int64_t *shape) {
    if (r->b.st != M40_OK) return NULL;
    const m40_st_tensor *t;
    m40_status st = m40_st_expect(r->w, name, M40_DTYPE_F32, ndim, shape, &t);
    if (st != M40_OK) {
        m40__mb_fail(&r->b, st, "%s", m40_st_errmsg(r->w));
        return NULL;
    }
    mark_used(r, t);
    return m40_st_get_data(r->w, t);
}

/* Declares a weight with host data, or (data NULL) none: then, with
** random_weights, a He-style normal fill of `std` after alloc. */
static int weight(rb *r, const char *name, int ndim, const int64_t *shape, const void *data,
                  float std) {
    int id = m40__mb_weight(&r->b, name, M40_DTYPE_F32, ndim, shape, 0);
    if (id < 0) return -1;
    if (data) {
        size_t n = 1;
        for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
        m40_status st = m40_graph_set_data(r->b.g, id, data, n * sizeof(float));
        if (st != M40_OK) return m40__mb_fail(&r->b, st, "%s: %s", name, m40_errmsg(r->b.ctx));
    } else if (r->random) {
        if (r->nrnd == r->caprnd) {
            int nc = r->caprnd ? 2 * r->caprnd : 128;
            struct rnd *nr = realloc(r->rnd, (size_t)nc * sizeof *nr);
            if (!nr) return m40__mb_fail(&r->b, M40_ERR_OOM_HOST, "out of host memory");
            r->rnd = nr;
            r->caprnd = nc;
        }
        r->rnd[r->nrnd].id = id;
        r->rnd[r->nrnd++].std = std;
    }
    return id;
}

/* conv (no bias) + BatchNorm `bn`, declared as one conv with the folded
** bias; `residual` (a tensor id, or -1) is added and ReLU applied in the
** conv's epilogue. */
static int conv_bn(rb *r, int x, const char *conv, const char *bn, int64_t cin, int64_t cout,
                   int k, int stride, int residual, int relu) {
    if (r->b.st != M40_OK) return -1;
    char wn[128], bname[128];
    snprintf(wn, sizeof wn, "%s.weight", conv);
    snprintf(bname, sizeof bname, "%s.folded_bias", conv);
    int64_t ws[4] = {cout, cin, k, k}, bs[1] = {cout};
    const int nhwc = r->layout == M40_LAYOUT_NHWC;
    float *wf = NULL, *bf = NULL;
    if (r->w) {
        const void *w = file_tensor(r, wn, 4, ws), *p[4];
        static const char *const parts[4] = {"weight", "bias", "running_mean", "running_var"};
        char n[160];
        for (int i = 0; i < 4; i++) {
            snprintf(n, sizeof n, "%s.%s", bn, parts[i]);
            p[i] = file_tensor(r, n, 1, bs);
        }
        snprintf(n, sizeof n, "%s.num_batches_tracked", bn); /* a training counter */
        const m40_st_tensor *nbt = m40_st_find(r->w, n);
        if (nbt) mark_used(r, nbt);
        if (r->b.st != M40_OK) return -1;
        const size_t per = (size_t)(cin * k * k); /* one output channel's weights */
        wf = keep(r, (size_t)cout * per);
        bf = keep(r, (size_t)cout);
        if (!wf || !bf)
            return m40__mb_fail(&r->b, M40_ERR_OOM_HOST, "out of host memory folding %s", conv);
        for (int64_t o = 0; o < cout; o++) {
            double var = ld(p[3], (size_t)o);
            if (!(var >= 0)) /* also catches NaN */
                return m40__mb_fail(&r->b, M40_ERR_FORMAT,
                                    "weights: %s.running_var[%lld] = %g is negative", bn,
                                    (long long)o, var);
            double s = ld(p[0], (size_t)o) / sqrt(var + BN_EPS);
            /* [K,C,R,S] as in the file, or reordered to [K,R,S,C] for NHWC */
            for (int64_t c = 0; c < cin; c++)
                for (int64_t rs = 0; rs < k * k; rs++) {
                    size_t src = (size_t)o * per + (size_t)(c * k * k + rs);
                    size_t dst = (size_t)o * per + (size_t)(nhwc ? rs * cin + c : c * k * k + rs);
                    wf[dst] = (float)(ld(w, src) * s);
                }
            bf[o] = (float)(ld(p[1], (size_t)o) - ld(p[2], (size_t)o) * s);
        }
    }
    if (nhwc) ws[1] = k, ws[2] = k, ws[3] = cin;
    int w = weight(r, wn, 4, ws, wf, sqrtf(2.0f / (float)(cin * k * k)));
    int bias = weight(r, bname, 1, bs, bf, 0.01f);
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
    nd.layout = r->layout;
    nd.fuse_relu = relu;
    return m40__mb_node(&r->b, &nd);
}

/* torchvision's Bottleneck (v1.5: the stride sits on the 3x3); the residual
** add and the last ReLU run in conv3's epilogue. */
static int bottleneck(rb *r, int x, const char *p, int64_t cin, int64_t width, int stride,
                      int downsample) {
    char c[96], n[96];
    int idn = x;
    if (downsample) {
        snprintf(c, sizeof c, "%s.downsample.0", p);
        snprintf(n, sizeof n, "%s.downsample.1", p);
        idn = conv_bn(r, x, c, n, cin, width * 4, 1, stride, -1, 0);
    }
    snprintf(c, sizeof c, "%s.conv1", p);
    snprintf(n, sizeof n, "%s.bn1", p);
    int y = conv_bn(r, x, c, n, cin, width, 1, 1, -1, 1);
    snprintf(c, sizeof c, "%s.conv2", p);
    snprintf(n, sizeof n, "%s.bn2", p);
    y = conv_bn(r, y, c, n, width, width, 3, stride, -1, 1);
    snprintf(c, sizeof c, "%s.conv3", p);
    snprintf(n, sizeof n, "%s.bn3", p);
    return conv_bn(r, y, c, n, width, width * 4, 1, 1, idn, 1);
}

/* base, blocks and classes from the file's names and shapes. */
static m40_status arch_from_file(m40__mb *b, m40_st_file *w, m40_resnet50_desc *d) {
    const m40_st_tensor *c1 = m40_st_find(w, "conv1.weight"), *fc = m40_st_find(w, "fc.weight");
    if (!c1 || !fc || c1->ndim != 4 || fc->ndim != 2)
        return m40__mb_fail(b, M40_ERR_FORMAT,
                            "weights: no %s: not a torchvision-style ResNet checkpoint",
                            !c1 || c1->ndim != 4 ? "4-D conv1.weight" : "2-D fc.weight"),
               b->st;
    if (c1->shape[0] < 1 || c1->shape[0] > MAX_BASE || fc->shape[0] < 1 ||
        fc->shape[0] > MAX_CLASSES)
        return m40__mb_fail(b, M40_ERR_SHAPE,
                            "weights: conv1.weight has %lld outputs (1..%d) and fc.weight %lld "
                            "classes (1..%d)",
                            (long long)c1->shape[0], MAX_BASE, (long long)fc->shape[0],
                            MAX_CLASSES),
               b->st;
    d->base = (int)c1->shape[0];
    d->classes = (int)fc->shape[0];
    for (int s = 0; s < 4; s++) {
        int n = 0;
        char name[64];
        for (; n <= MAX_BLOCKS; n++) {
            snprintf(name, sizeof name, "layer%d.%d.conv1.weight", s + 1, n);
            if (!m40_st_find(w, name)) break;
        }
        if (n == 0 || n > MAX_BLOCKS)
            return m40__mb_fail(b, M40_ERR_FORMAT, "weights: stage layer%d has %s", s + 1,
                                n ? "more than 64 blocks" : "no blocks (no layer<s>.0.conv1.weight)"),
                   b->st;
        d->blocks[s] = n;
    }
    if (fc->shape[1] != (int64_t)d->base * 32)
        return m40__mb_fail(b, M40_ERR_SHAPE,
                            "weights: fc.weight has %lld inputs, expected %d (8 x 4 x base %d)",
                            (long long)fc->shape[1], d->base * 32, d->base),
               b->st;
    return M40_OK;
}

static m40_status check_desc(m40__mb *b, const m40_resnet50_desc *d) {
    if (d->struct_size < sizeof *d)
        return m40__mb_fail(b, M40_ERR_INVALID_ARG,
                            "desc->struct_size is %zu, expected %zu (call "
                            "m40_resnet50_desc_init first)", d->struct_size, sizeof *d), b->st;
    if (d->batch < 1 || d->batch > MAX_BATCH || d->height < 32 || d->height > MAX_SIDE ||
        d->width < 32 || d->width > MAX_SIDE)
        return m40__mb_fail(b, M40_ERR_INVALID_ARG,
                            "batch %d and size %dx%d: need batch 1..%d and sides 32..%d",
                            d->batch, d->height, d->width, MAX_BATCH, MAX_SIDE), b->st;
    if (d->layout != M40_LAYOUT_NCHW && d->layout != M40_LAYOUT_NHWC)
        return m40__mb_fail(b, M40_ERR_INVALID_ARG, "layout %d is not NCHW or NHWC",
                            (int)d->layout), b->st;
    int ok = d->base >= 1 && d->base <= MAX_BASE && d->classes >= 1 && d->classes <= MAX_CLASSES;
    for (int s = 0; s < 4; s++) ok &= d->blocks[s] >= 1 && d->blocks[s] <= MAX_BLOCKS;
    if (!ok)
        return m40__mb_fail(b, M40_ERR_INVALID_ARG,
                            "base %d, blocks %d,%d,%d,%d, classes %d: need base 1..%d, blocks "
                            "1..%d, classes 1..%d", d->base, d->blocks[0], d->blocks[1],
                            d->blocks[2], d->blocks[3], d->classes, MAX_BASE, MAX_BLOCKS,
                            MAX_CLASSES), b->st;
    return M40_OK;
}

/* Declares the whole network; ids into *info. */
static void declare(rb *r, const m40_resnet50_desc *d, m40_resnet50_info *info) {
    const m40_layout lay = d->layout;
    int64_t xs[4] = {d->batch, 3, d->height, d->width};
    if (lay == M40_LAYOUT_NHWC) xs[1] = d->height, xs[2] = d->width, xs[3] = 3;
    info->input = m40__mb_tensor(&r->b, M40_ROLE_INPUT, "input", M40_DTYPE_F32, 4, xs);
    int x = conv_bn(r, info->input, "conv1", "bn1", 3, d->base, 7, 2, -1, 1);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "maxpool";
    nd.pool = M40_POOL_MAX;
    nd.kernel[0] = nd.kernel[1] = 3;
    nd.stride[0] = nd.stride[1] = 2;
    nd.pad[0] = nd.pad[1] = 1;
    nd.layout = lay;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = m40__mb_node(&r->b, &nd);
    int64_t cin = d->base;
    for (int s = 0; s < 4; s++) {
        int64_t width = (int64_t)d->base << s;
        for (int i = 0; i < d->blocks[s]; i++) {
            char p[32];
            snprintf(p, sizeof p, "layer%d.%d", s + 1, i);
            x = bottleneck(r, x, p, cin, width, i == 0 && s > 0 ? 2 : 1, i == 0);
            cin = width * 4;
        }
    }
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.name = "avgpool";
    nd.pool = M40_POOL_GLOBAL_AVG;
    nd.layout = lay;
    nd.ninputs = 1;
    nd.inputs[0] = x;
    x = m40__mb_node(&r->b, &nd);
    int64_t fws[2] = {d->classes, cin}, fbs[1] = {d->classes};
    const void *fw = NULL, *fb = NULL;
    if (r->w) { /* used as they are: set_data copies bytes, alignment does not matter */
        fw = file_tensor(r, "fc.weight", 2, fws);
        fb = file_tensor(r, "fc.bias", 1, fbs);
    }
    int w = weight(r, "fc.weight", 2, fws, fw, sqrtf(1.0f / (float)cin));
    int bias = weight(r, "fc.bias", 1, fbs, fb, 0.01f);
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.name = "fc";
    nd.ninputs = 3;
    nd.inputs[0] = x;
    nd.inputs[1] = w;
    nd.inputs[2] = bias;
    info->logits = m40__mb_node(&r->b, &nd);
    m40__mb_output(&r->b, info->logits);
}

m40_status m40_resnet50_graph(m40_ctx *ctx, const m40_resnet50_desc *desc, m40_st_file *weights,
                              m40_graph **out, m40_resnet50_info *info) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!desc || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: NULL argument", FN);
    rb r = {.b = {.ctx = ctx, .fn = FN, .st = M40_OK}, .w = weights};
    if (check_desc(&r.b, desc) != M40_OK) return r.b.st;
    m40_resnet50_desc d = *desc;
    if (weights && arch_from_file(&r.b, weights, &d) != M40_OK) return r.b.st;
    r.layout = d.layout;
    r.random = !weights && d.random_weights;
    m40_resnet50_info inf;
    memset(&inf, 0, sizeof inf);
    if (weights && !(r.used = calloc(m40_st_get_count(weights) + 1, 1)))
        return m40__err(ctx, M40_ERR_OOM_HOST, "%s: out of host memory", FN);
    if ((st = m40_graph_create(ctx, &r.b.g)) != M40_OK) {
        free(r.used);
        return st;
    }
    declare(&r, &d, &inf);

    /* every tensor in the file must belong to the model */
    for (size_t i = 0; weights && r.b.st == M40_OK && i < m40_st_get_count(weights); i++)
        if (!r.used[i])
            m40__mb_fail(&r.b, M40_ERR_FORMAT,
                         "weights: unknown tensor '%s' (not part of a ResNet with base %d and "
                         "blocks %d,%d,%d,%d)", m40_st_get(weights, i)->name, d.base,
                         d.blocks[0], d.blocks[1], d.blocks[2], d.blocks[3]);

    if (r.b.st == M40_OK && (weights || r.random)) {
        if ((st = m40_graph_plan(r.b.g, d.budget, &inf.plan)) != M40_OK ||
            (st = m40_graph_alloc(r.b.g)) != M40_OK) {
            /* the planner's message names the region and what would fit */
            m40__mb_fail(&r.b, st, "%s", m40_errmsg(ctx));
        }
        for (int i = 0; r.b.st == M40_OK && i < r.nrnd; i++) {
            m40_tensor *t;
            if ((st = m40_graph_get_tensor(r.b.g, r.rnd[i].id, &t)) != M40_OK ||
                (st = m40_fill_random(ctx, d.seed * 1000003u + (uint64_t)i, M40_RANDOM_NORMAL, 0.0f, r.rnd[i].std, t)) != M40_OK)
                m40__mb_fail(&r.b, st, "random weights: %s", m40_errmsg(ctx));
        }
        inf.allocated = r.b.st == M40_OK;
    }
    for (int i = 0; i < r.nbufs; i++) free(r.bufs[i]);
    free(r.bufs);
    free(r.rnd);
    free(r.used);
    if (r.b.st != M40_OK) {
        m40_graph_destroy(r.b.g);
        return r.b.st;
    }
    inf.base = d.base;
    memcpy(inf.blocks, d.blocks, sizeof inf.blocks);
    inf.classes = d.classes;
    inf.params = r.b.params;
    if (info) *info = inf;
    *out = r.b.g;
    return M40_OK;
}
