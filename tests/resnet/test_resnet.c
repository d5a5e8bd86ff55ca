/* The library's ResNet builder (m40_resnet50_graph, m40/models.h) on a
** reduced ResNet (same code path as ResNet-50: torchvision names, BN
** folding, bottlenecks, downsample) whose weights, input and PyTorch FP64
** logits are a committed fixture (tests/fixtures/resnet/make_fixture.py).
** CPU always; with --gpu the CUDA context (exit 77 without a GPU). Also:
** bad weights files give clear errors (missing, wrong shape, unknown
** tensor, truncated), and the graph that runs is the graph that is planned
** (the weights-bound build against the declared-only one, the fixture and
** ResNet-50 itself through m40_model_graph). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "m40/models.h"
#include "m40/plan.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *WEIGHTS = "tests/fixtures/resnet/reduced_resnet.safetensors";
static const char *IO = "tests/fixtures/resnet/reduced_resnet_io.safetensors";

/* [N,C,H,W] -> [N,H,W,C] on the host. */
static void nchw_to_nhwc(const float *src, float *dst, int N, int C, int H, int W) {
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H * W; i++)
                dst[((size_t)n * H * W + (size_t)i) * C + c] = src[((size_t)n * C + c) * H * W + (size_t)i];
}

/* Runs the fixture network on ctx in `layout` and compares with PyTorch's logits. */
static void run_fixture(m40_ctx *ctx, const char *label, m40_layout layout) {
    m40_st_file *w = NULL, *io = NULL;
    CHECK_ST(m40_st_open(WEIGHTS, &w), M40_OK);
    CHECK_ST(m40_st_open(IO, &io), M40_OK);
    const m40_st_tensor *in = m40_st_find(io, "input"), *lg = m40_st_find(io, "logits");
    CHECK(in && lg && in->ndim == 4);
    if (!in || !lg || m40_st_get_count(w) == 0) goto out;
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = (int)in->shape[0];
    rd.height = (int)in->shape[2];
    rd.width = (int)in->shape[3];
    rd.layout = layout;
    m40_graph *g = NULL;
    m40_resnet50_info net;
    m40_status st = m40_resnet50_graph(ctx, &rd, w, &g, &net);
    CHECK_ST(st, M40_OK);
    if (st != M40_OK) { fprintf(stderr, "%s\n", m40_errmsg(ctx)); goto out; }
    printf("%s: reduced ResNet base %d, blocks %d,%d,%d,%d, %d classes, input [%lld,3,%lld,%lld]\n",
           label, net.base, net.blocks[0], net.blocks[1], net.blocks[2], net.blocks[3], net.classes,
           (long long)in->shape[0], (long long)in->shape[2], (long long)in->shape[3]);
    CHECK(net.allocated && net.base == 8 && net.classes == 10);
    m40_tensor *tin, *tout;
    CHECK_ST(m40_graph_get_tensor(g, net.input, &tin), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, net.logits, &tout), M40_OK);
    const float *src = m40_st_get_data(io, in);
    float *nhwc = NULL;
    if (layout == M40_LAYOUT_NHWC) {
        nhwc = malloc(in->nbytes);
        nchw_to_nhwc(src, nhwc, (int)in->shape[0], 3, (int)in->shape[2], (int)in->shape[3]);
        src = nhwc;
    }
    CHECK_ST(m40_tensor_upload(ctx, tin, src, in->nbytes), M40_OK);
    free(nhwc);
    size_t n = lg->nbytes / 4;
    float *got = malloc(n * 4), *ref = malloc(n * 4);
    memcpy(ref, m40_st_get_data(io, lg), n * 4);
    for (int rep = 0; rep < 2; rep++) { /* the second run must give the same answer */
        m40t_poison(got, (int64_t)n);
        CHECK_ST(m40_tensor_upload(ctx, tout, got, n * 4), M40_OK);
        CHECK_ST(m40_graph_run(g), M40_OK);
        CHECK_ST(m40_tensor_download(ctx, tout, got, n * 4), M40_OK);
        char name[64];
        snprintf(name, sizeof name, "%s %s logits vs PyTorch FP64 (run %d)", label,
                 layout == M40_LAYOUT_NHWC ? "NHWC" : "NCHW", rep + 1);
        /* FP32 storage of activations through ~40 layers against FP64: a few
        ** 1e-6 relative; 1e-4 leaves room for accumulation order */
        m40t_compare(name, got, ref, (int64_t)n, (m40t_tol){1e-4, 1e-4, 1e-8});
    }
    free(got);
    free(ref);
    m40_graph_destroy(g);
out:
    m40_st_destroy(w);
    m40_st_destroy(io);
}

/* ---- the graph that runs is the graph that is planned ------------------ */

/* Compares an allocated graph `run` (planned as *rp) with a declared-only
** graph `decl` of the same model: counts, the plan's every number, the
** execution order, every tensor (name, role, dtype, shape, region, offset,
** size, liveness, sharing) and, after allocating `decl` too, every node's
** kind and parameters as far as the public API shows them (conv nodes
** through m40_graph_get_conv_choice's shape string; other nodes by name). */
static void same_graph(const char *what, m40_graph *run, const m40_plan_info *rp, m40_graph *decl) {
    int bad = 0;
    m40_plan_info pp;
    CHECK_ST(m40_graph_plan(decl, NULL, &pp), M40_OK);
    bad += m40_graph_get_node_count(run) != m40_graph_get_node_count(decl);
    bad += m40_graph_get_tensor_count(run) != m40_graph_get_tensor_count(decl);
    for (int r = 0; r < M40_REGION_COUNT; r++) bad += rp->region_bytes[r] != pp.region_bytes[r];
    bad += rp->total_bytes != pp.total_bytes || rp->arena_lower_bound != pp.arena_lower_bound ||
           rp->peak_step != pp.peak_step || rp->nodes != pp.nodes || rp->tensors != pp.tensors ||
           rp->inplace != pp.inplace || rp->external_bytes != pp.external_bytes;
    CHECK(bad == 0);
    for (int i = 0; i < pp.nodes; i++) bad += m40_graph_get_step_node(run, i) != m40_graph_get_step_node(decl, i);
    for (int i = 0; i < m40_graph_get_tensor_count(run) && i < m40_graph_get_tensor_count(decl); i++) {
        m40_graph_tensor_info a, b;
        CHECK_ST(m40_graph_get_tensor_info(run, i, &a), M40_OK);
        CHECK_ST(m40_graph_get_tensor_info(decl, i, &b), M40_OK);
        int diff = strcmp(a.name, b.name) || a.role != b.role || a.desc.dtype != b.desc.dtype ||
                   a.desc.ndim != b.desc.ndim || a.region != b.region || a.offset != b.offset ||
                   a.size != b.size || a.bytes != b.bytes || a.is_output != b.is_output ||
                   a.first_step != b.first_step || a.last_step != b.last_step ||
                   a.shares_with != b.shares_with;
        for (int k = 0; k < a.desc.ndim && k < 8; k++) diff |= a.desc.shape[k] != b.desc.shape[k];
        if (diff && bad < 5) fprintf(stderr, "%s: tensor %d '%s' differs from '%s'\n", what, i, a.name, b.name);
        bad += diff;
    }
    CHECK(bad == 0);
    int convs = 0;
    CHECK_ST(m40_graph_alloc(decl), M40_OK);
    for (int i = 0; i < m40_graph_get_node_count(run); i++) {
        m40_conv_choice a, b;
        m40_status sa = m40_graph_get_conv_choice(run, i, &a), sb = m40_graph_get_conv_choice(decl, i, &b);
        int diff = sa != sb || (sa == M40_OK && (strcmp(a.shape, b.shape) || strcmp(a.node_name, b.node_name)));
        if (diff && bad < 5) fprintf(stderr, "%s: node %d differs\n", what, i);
        bad += diff;
        convs += sa == M40_OK;
    }
    CHECK(bad == 0);
    printf("%s: run graph vs plan graph: %d nodes (%d conv), %d tensors, %llu bytes "
           "(weights %llu, workspace %llu, activations %llu)%s\n", what, pp.nodes, convs, pp.tensors,
           (unsigned long long)pp.total_bytes, (unsigned long long)pp.region_bytes[M40_REGION_WEIGHTS],
           (unsigned long long)pp.region_bytes[M40_REGION_WORKSPACE],
           (unsigned long long)pp.region_bytes[M40_REGION_ACTIVATIONS], bad ? " -- they DIFFER" : ", the same");
}

/* The fixture bound to its file against the same architecture declared only. */
static void test_plan_is_run_fixture(m40_ctx *ctx, m40_layout layout) {
    m40_st_file *w = NULL;
    CHECK_ST(m40_st_open(WEIGHTS, &w), M40_OK);
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = 2;
    rd.height = rd.width = 64;
    rd.layout = layout;
    m40_graph *run = NULL, *decl = NULL;
    m40_resnet50_info ri, di;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, w, &run, &ri), M40_OK);
    m40_st_destroy(w);
    rd.base = ri.base;
    memcpy(rd.blocks, ri.blocks, sizeof rd.blocks);
    rd.classes = ri.classes;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &decl, &di), M40_OK);
    CHECK(!di.allocated && di.params == ri.params && di.input == ri.input && di.logits == ri.logits);
    if (run && decl)
        same_graph(layout == M40_LAYOUT_NHWC ? "fixture NHWC" : "fixture NCHW", run, &ri.plan, decl);
    m40_graph_destroy(run);
    m40_graph_destroy(decl);
}

/* ResNet-50 as examples/resnet50 --random-weights runs it (NHWC, 224x224)
** against what m40-plan --model resnet50 plans (m40_model_graph and
** m40_model_plan_build). */
static void test_plan_is_run_resnet50(m40_ctx *ctx, int batch) {
    m40_resnet50_desc rd;
    m40_resnet50_desc_init(&rd);
    rd.batch = batch;
    rd.random_weights = 1;
    m40_graph *run = NULL, *decl = NULL;
    m40_resnet50_info ri;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &run, &ri), M40_OK);
    CHECK(ri.allocated && ri.params == 25530472ull);
    m40_model_desc md;
    m40_model_desc_init(&md, M40_MODEL_RESNET50);
    md.batch = batch;
    CHECK_ST(m40_model_graph(ctx, &md, M40_PHASE_PREFILL, &decl), M40_OK);
    char what[48];
    snprintf(what, sizeof what, "resnet50 batch %d", batch);
    if (run && decl) same_graph(what, run, &ri.plan, decl);
    m40_budget b24;
    m40_model_plan mp;
    CHECK_ST(m40_budget_preset("m40-24g", &b24), M40_OK);
    CHECK_ST(m40_model_plan_build(ctx, &md, &b24, &mp), M40_OK);
    for (int r = 0; r < M40_REGION_COUNT; r++)
        CHECK(mp.plan.region_bytes[r] == ri.plan.region_bytes[r]);
    CHECK(mp.params == ri.params && mp.plan.nodes == ri.plan.nodes);
    /* the fused graph: 53 convs, 2 pools, fc */
    CHECK(ri.plan.nodes == 56 && ri.plan.inplace == 0);
    m40_graph_destroy(run);
    m40_graph_destroy(decl);
}

/* Descriptors the builder refuses, with a message; the context stays usable. */
static void test_bad_desc(m40_ctx *ctx) {
    m40_resnet50_desc rd;
    m40_graph *g = (m40_graph *)&rd; /* must come back NULL */
    m40_resnet50_desc_init(&rd);
    rd.struct_size = 0;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    CHECK(g == NULL && strstr(m40_errmsg(ctx), "struct_size"));
    m40_resnet50_desc_init(&rd);
    rd.batch = 0;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "batch 0"));
    m40_resnet50_desc_init(&rd);
    rd.blocks[2] = 0;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    m40_resnet50_desc_init(&rd);
    rd.height = 16;
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_resnet50_graph(ctx, NULL, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    m40_resnet50_desc_init(&rd);
    CHECK_ST(m40_resnet50_graph(ctx, &rd, NULL, &g, NULL), M40_OK); /* usable afterwards */
    m40_graph_destroy(g);
}

/* ---- bad weights files, written by a tiny safetensors writer ---------- */

typedef struct edit {
    const char *drop;           /* tensor to leave out */
    const char *rename_from, *rename_to;
    int shrink_last_dim_of_fc;  /* write fc.weight with one input fewer */
    int extra;                  /* add an unknown tensor */
} edit;

static int write_variant(const char *path, m40_st_file *src, edit e) {
    size_t cap = 1 << 16, len = 0;
    char *hdr = malloc(cap);
    uint64_t off = 0;
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    int first = 1;
    size_t n = m40_st_get_count(src);
    for (size_t i = 0; i <= n; i++) {
        const m40_st_tensor *t = i < n ? m40_st_get(src, i) : NULL;
        const char *name = t ? t->name : "mystery.weight";
        if (!t && !e.extra) break;
        if (t && e.drop && !strcmp(name, e.drop)) continue;
        if (t && e.rename_from && !strcmp(name, e.rename_from)) name = e.rename_to;
        int ndim = t ? t->ndim : 1;
        int64_t shape[8] = {3};
        if (t) memcpy(shape, t->shape, sizeof shape);
        if (t && e.shrink_last_dim_of_fc && !strcmp(t->name, "fc.weight")) shape[1] -= 1;
        uint64_t bytes = 4;
        for (int k = 0; k < ndim; k++) bytes *= (uint64_t)shape[k];
        if (t && strcmp(t->dtype_name, "F32")) bytes = t->nbytes;
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                first ? "" : ",", name, t ? t->dtype_name : "F32");
        for (int k = 0; k < ndim; k++)
            len += (size_t)snprintf(hdr + len, cap - len, k ? ",%lld" : "%lld", (long long)shape[k]);
        len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}",
                                (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
        first = 0;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    FILE *f = fopen(path, "wb");
    uint64_t hl = len;
    unsigned char l8[8];
    for (int k = 0; k < 8; k++) l8[k] = (unsigned char)(hl >> (8 * k));
    fwrite(l8, 1, 8, f);
    fwrite(hdr, 1, len, f);
    /* data: the source bytes (truncated or padded with zeros to the new size) */
    char zero[4] = {0};
    for (size_t i = 0; i <= n; i++) {
        const m40_st_tensor *t = i < n ? m40_st_get(src, i) : NULL;
        if (!t && !e.extra) break;
        if (t && e.drop && !strcmp(t->name, e.drop)) continue;
        uint64_t bytes = t ? t->nbytes : 12;
        if (t && e.shrink_last_dim_of_fc && !strcmp(t->name, "fc.weight")) bytes -= 4 * (uint64_t)t->shape[0];
        if (t) fwrite(m40_st_get_data(src, t), 1, bytes, f);
        else for (int k = 0; k < 3; k++) fwrite(zero, 1, 4, f);
    }
    fclose(f);
    free(hdr);
    return 0;
}

static void expect_build_error(m40_ctx *ctx, const char *path, m40_status want, const char *needle) {
    m40_st_file *w = NULL;
    m40_status st = m40_st_open(path, &w);
    char err[512] = "";
    if (st == M40_OK) {
        m40_resnet50_desc rd;
        m40_resnet50_desc_init(&rd);
        rd.height = rd.width = 64;
        rd.layout = M40_LAYOUT_NCHW;
        m40_graph *g = NULL;
        st = m40_resnet50_graph(ctx, &rd, w, &g, NULL);
        snprintf(err, sizeof err, "%s", st == M40_OK ? "" : m40_errmsg(ctx));
        CHECK(st == M40_OK ? g != NULL : g == NULL);
        m40_graph_destroy(g);
    } else {
        snprintf(err, sizeof err, "%s", m40_st_errmsg(w));
    }
    printf("bad weights (%s): %s: %s\n", needle, m40_status_str(st), err);
    CHECK_ST(st, want);
    CHECK(strstr(err, needle) != NULL);
    m40_st_destroy(w);
}

static void test_bad_weights(m40_ctx *ctx) {
    m40_st_file *src = NULL;
    if (m40_st_open(WEIGHTS, &src) != M40_OK) { m40t_failures++; m40_st_destroy(src); return; }
    char path[64];
    snprintf(path, sizeof path, "/tmp/m40_rn_bad_%d.safetensors", (int)getpid());
    write_variant(path, src, (edit){.drop = "layer2.0.bn3.running_var"});
    expect_build_error(ctx, path, M40_ERR_FORMAT, "layer2.0.bn3.running_var' is missing");
    write_variant(path, src, (edit){.shrink_last_dim_of_fc = 1});
    expect_build_error(ctx, path, M40_ERR_SHAPE, "fc.weight");
    write_variant(path, src, (edit){.extra = 1});
    expect_build_error(ctx, path, M40_ERR_FORMAT, "unknown tensor 'mystery.weight'");
    write_variant(path, src, (edit){.rename_from = "conv1.weight", .rename_to = "conv0.weight"});
    expect_build_error(ctx, path, M40_ERR_FORMAT, "conv1.weight");
    write_variant(path, src, (edit){0});
    expect_build_error(ctx, path, M40_OK, ""); /* the writer itself is faithful */
    /* truncated: the original file cut short */
    FILE *f = fopen(WEIGHTS, "rb"), *g = fopen(path, "wb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f), left = size - 1000; /* cut inside the last tensors */
    fseek(f, 0, SEEK_SET);
    char buf[4096];
    while (left > 0) {
        size_t k = fread(buf, 1, left < (long)sizeof buf ? (size_t)left : sizeof buf, f);
        if (k == 0) break;
        fwrite(buf, 1, k, g);
        left -= (long)k;
    }
    fclose(f);
    fclose(g);
    expect_build_error(ctx, path, M40_ERR_FORMAT, "truncated");
    expect_build_error(ctx, "tests/fixtures/resnet/no-such-file.safetensors", M40_ERR_IO, "cannot open");
    remove(path);
    m40_st_destroy(src);
}

int main(int argc, char **argv) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    m40_ctx *ctx = NULL;
    if (argc > 1 && !strcmp(argv[1], "--gpu")) {
        ctx = m40t_gpu_ctx_or_skip("test_gpu_resnet");
        if (!ctx) return M40T_SKIP;
        run_fixture(ctx, "GPU", M40_LAYOUT_NCHW);
        run_fixture(ctx, "GPU", M40_LAYOUT_NHWC);
        test_plan_is_run_fixture(ctx, M40_LAYOUT_NHWC);
        test_plan_is_run_resnet50(ctx, 8);
        m40_ctx_destroy(ctx);
        return m40t_finish("test_gpu_resnet");
    }
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &ctx) != M40_OK) return 1;
    run_fixture(ctx, "CPU", M40_LAYOUT_NCHW);
    run_fixture(ctx, "CPU", M40_LAYOUT_NHWC);
    test_bad_weights(ctx);
    test_bad_desc(ctx);
    test_plan_is_run_fixture(ctx, M40_LAYOUT_NCHW);
    test_plan_is_run_fixture(ctx, M40_LAYOUT_NHWC);
    test_plan_is_run_resnet50(ctx, 2);
    m40_ctx_destroy(ctx);
    return m40t_finish("test_resnet");
}
