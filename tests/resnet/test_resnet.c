/* The ResNet example's model code on a reduced ResNet (same code path as
** ResNet-50: torchvision names, BN folding, bottlenecks, downsample) whose
** weights, input and PyTorch FP64 logits are a committed fixture
** (tests/fixtures/resnet/make_fixture.py). CPU always; with --gpu the CUDA
** context (exit 77 without a GPU). Also: bad weights files give clear
** errors (missing, wrong shape, unknown tensor, truncated). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "resnet.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *WEIGHTS = "tests/fixtures/resnet/reduced_resnet.safetensors";
static const char *IO = "tests/fixtures/resnet/reduced_resnet_io.safetensors";

/* Runs the fixture network on ctx in `layout` and compares with PyTorch's logits. */
static void run_fixture(m40_ctx *ctx, const char *label, m40_layout layout) {
    m40_st_file *w = NULL, *io = NULL;
    CHECK_ST(m40_st_open(WEIGHTS, &w), M40_OK);
    CHECK_ST(m40_st_open(IO, &io), M40_OK);
    const m40_st_tensor *in = m40_st_find(io, "input"), *lg = m40_st_find(io, "logits");
    CHECK(in && lg && in->ndim == 4);
    if (!in || !lg || m40_st_count(w) == 0) goto out;
    rn_config cfg;
    char err[512];
    CHECK_ST(rn_config_from_weights(w, &cfg, err, sizeof err), M40_OK);
    printf("%s: reduced ResNet base %d, blocks %d,%d,%d,%d, %d classes, input [%lld,3,%lld,%lld]\n",
           label, cfg.base, cfg.blocks[0], cfg.blocks[1], cfg.blocks[2], cfg.blocks[3], cfg.classes,
           (long long)in->shape[0], (long long)in->shape[2], (long long)in->shape[3]);
    rn_model m;
    m40_status st = rn_build(ctx, &cfg, w, 0, (int)in->shape[0], (int)in->shape[2],
                             (int)in->shape[3], layout, NULL, &m, err, sizeof err);
    CHECK_ST(st, M40_OK);
    if (st != M40_OK) { fprintf(stderr, "%s\n", err); goto out; }
    m40_tensor *tin, *tout;
    CHECK_ST(m40_graph_get_tensor(m.g, m.input_id, &tin), M40_OK);
    CHECK_ST(m40_graph_get_tensor(m.g, m.logits_id, &tout), M40_OK);
    const float *src = m40_st_data(io, in);
    float *nhwc = NULL;
    if (layout == M40_LAYOUT_NHWC) {
        nhwc = malloc(in->nbytes);
        rn_nchw_to_nhwc(src, nhwc, (int)in->shape[0], 3, (int)in->shape[2], (int)in->shape[3]);
        src = nhwc;
    }
    CHECK_ST(m40_tensor_upload(ctx, tin, src, in->nbytes), M40_OK);
    free(nhwc);
    size_t n = lg->nbytes / 4;
    float *got = malloc(n * 4), *ref = malloc(n * 4);
    memcpy(ref, m40_st_data(io, lg), n * 4);
    for (int rep = 0; rep < 2; rep++) { /* the second run must give the same answer */
        m40t_poison(got, (int64_t)n);
        CHECK_ST(m40_tensor_upload(ctx, tout, got, n * 4), M40_OK);
        CHECK_ST(m40_graph_run(m.g), M40_OK);
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
    rn_free(&m);
out:
    m40_st_close(w);
    m40_st_close(io);
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
    size_t n = m40_st_count(src);
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
        if (t) fwrite(m40_st_data(src, t), 1, bytes, f);
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
        rn_config cfg;
        st = rn_config_from_weights(w, &cfg, err, sizeof err);
        if (st == M40_OK) {
            rn_model m;
            st = rn_build(ctx, &cfg, w, 0, 1, 64, 64, M40_LAYOUT_NCHW, NULL, &m, err, sizeof err);
            if (st == M40_OK) rn_free(&m);
        }
    } else {
        snprintf(err, sizeof err, "%s", m40_st_errmsg(w));
    }
    printf("bad weights (%s): %s: %s\n", needle, m40_status_str(st), err);
    CHECK_ST(st, want);
    CHECK(strstr(err, needle) != NULL);
    m40_st_close(w);
}

static void test_bad_weights(m40_ctx *ctx) {
    m40_st_file *src = NULL;
    if (m40_st_open(WEIGHTS, &src) != M40_OK) { m40t_failures++; m40_st_close(src); return; }
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
    m40_st_close(src);
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
        m40_ctx_destroy(ctx);
        return m40t_finish("test_gpu_resnet");
    }
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &ctx) != M40_OK) return 1;
    run_fixture(ctx, "CPU", M40_LAYOUT_NCHW);
    run_fixture(ctx, "CPU", M40_LAYOUT_NHWC);
    test_bad_weights(ctx);
    m40_ctx_destroy(ctx);
    return m40t_finish("test_resnet");
}
