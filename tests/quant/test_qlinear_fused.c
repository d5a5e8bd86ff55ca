/* LINEAR_Q's three fusions, as graph nodes (lib/ops/quant_linear.c):
** norm_w (x is first rmsnorm(x)·norm_w), residual (y += residual) and glu
** (y = SWIGLU of the outputs: in the GEMV's store, or through scratch and
** the SWIGLU kernel where the kernel cannot pair the rows).
** - CPU (always): the fused node equals RMSNORM, then LINEAR_Q, then ADD,
**   bit for bit, for every format, with and without each fusion.
** - GPU (--gpu; exits 77 without one): the GPU graph against the CPU graph
**   on the same data: M = 1 (the norm inside the GEMV's staging of x for
**   int8/int4: v2's chunks at int4's N <= 8192, else v3's; fp16 and larger
**   M: the norm kernel first, then the GEMV),
**   20 (8-row slices), 130 (the SGEMM, the residual in its epilogue),
**   K = 200 (int4's generic kernel: not a multiple of 32), f16 and f32
**   norm weights, N past one block; the output poisoned before a
**   replay of the captured CUDA graph; and the fused GPU graph against the
**   unfused GPU graph. */
#include "check.h"
#include "m40/graph.h"
#include "m40/quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *CPU, *GPU;

static void fill(float *p, int64_t n, uint32_t seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
}

/* kernels/quant.h's dispatch knobs (weak: absent from a CPU-only build) */
extern int m40k_quant_gemv_small_v2_q8 __attribute__((weak));
extern int m40k_quant_gemv_v2_whole __attribute__((weak));
extern int m40k_quant_gemv_v2_deep __attribute__((weak));
extern int m40k_quant_gemv_v2_ks __attribute__((weak));
extern int m40k_quant_gemv_v2_ez __attribute__((weak));
extern int m40k_quant_gemv_q4_split __attribute__((weak));
extern int m40k_quant_gemv_v2_pass __attribute__((weak));
extern int m40k_quant_gemv_v2_pass_depth __attribute__((weak));
extern int m40k_quant_gemv_v2_pass_db __attribute__((weak));
extern int m40k_quant_gemv_v2_r1 __attribute__((weak));

/* binary16 of v (round to nearest even; |v| < 65504, no subnormals needed here) */
static uint16_t f2h(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    uint32_t s = (b >> 16) & 0x8000u, e = (b >> 23) & 0xFF, m = b & 0x7FFFFFu;
    if (e < 113) return (uint16_t)s; /* below 2^-14: zero is close enough for weights */
    uint32_t h = ((e - 112) << 10) | (m >> 13), rest = m & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)(s | h);
}

typedef struct qcase {
    m40_quant_format f;
    int64_t M, N, K;
    int bias, norm, res, nw_f16;
    int glu; /* fused: LINEAR_Q glu 1; unfused: LINEAR_Q then SWIGLU */
} qcase;

/* One graph on ctx: fused (one LINEAR_Q with its norm_w and residual
** inputs) or not (RMSNORM, LINEAR_Q, ADD); y into out. capture (GPU): a
** second run replayed from the captured CUDA graph with y poisoned first. */
static void run_graph(m40_ctx *ctx, const qcase *c, int fused, int capture, const m40_tensor *hd,
                      const m40_tensor *hs, const float *x, const void *nw, const float *bias,
                      const float *res, float *out) {
    const int f16 = c->f.wtype == M40_DTYPE_F16;
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    if (!g) return;
    m40_tensor_desc dx, dr, dn, db;
    const int64_t NY = c->glu ? c->N / 2 : c->N; /* y's columns */
    const int64_t xs[2] = {c->M, c->K}, rs[2] = {c->M, c->N};
    m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, xs);
    m40_tensor_desc_make(&dr, M40_DTYPE_F32, 2, rs);
    m40_tensor_desc_make(&dn, c->nw_f16 ? M40_DTYPE_F16 : M40_DTYPE_F32, 1, &c->K);
    m40_tensor_desc_make(&db, M40_DTYPE_F32, 1, &c->N);
    int ix, iw, is = M40_NO_TENSOR, ib = M40_NO_TENSOR, in = M40_NO_TENSOR, ir = M40_NO_TENSOR, iy;
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &ix), M40_OK);
    CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "wq", m40_tensor_get_desc(hd), &iw), M40_OK);
    CHECK_ST(m40_graph_set_data(g, iw, m40_tensor_get_data(hd), m40_tensor_get_nbytes(hd)), M40_OK);
    if (!f16) {
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "scale", m40_tensor_get_desc(hs), &is), M40_OK);
        CHECK_ST(m40_graph_set_data(g, is, m40_tensor_get_data(hs), m40_tensor_get_nbytes(hs)), M40_OK);
    }
    if (c->bias) {
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "bias", &db, &ib), M40_OK);
        CHECK_ST(m40_graph_set_data(g, ib, bias, (size_t)c->N * 4), M40_OK);
    }
    if (c->norm) {
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "norm_w", &dn, &in), M40_OK);
        CHECK_ST(m40_graph_set_data(g, in, nw, (size_t)c->K * (c->nw_f16 ? 2 : 4)), M40_OK);
    }
    if (c->res) CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "res", &dr, &ir), M40_OK);
    m40_node_desc nd;
    int xin = ix;
    if (!fused && c->norm) {
        m40_node_desc_init(&nd, M40_OP_RMSNORM);
        nd.eps = 1e-6f;
        nd.ninputs = 2;
        nd.inputs[0] = ix, nd.inputs[1] = in;
        CHECK_ST(m40_graph_node(g, &nd, &xin), M40_OK);
    }
    m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
    nd.bits = f16 ? 16 : c->f.wtype == M40_DTYPE_Q4 ? 4 : 8;
    nd.group = c->f.group;
    nd.eps = 1e-6f;
    nd.ninputs = 4;
    nd.inputs[0] = xin, nd.inputs[1] = iw, nd.inputs[2] = is, nd.inputs[3] = ib;
    if (fused && (c->norm || c->res)) {
        nd.inputs[4] = in;
        nd.ninputs = 5;
        if (c->res) nd.inputs[5] = ir, nd.ninputs = 6;
    }
    if (fused) nd.glu = c->glu;
    CHECK_ST(m40_graph_node(g, &nd, &iy), M40_OK);
    if (!fused && c->glu) {
        int y0 = iy;
        m40_node_desc_init(&nd, M40_OP_SWIGLU);
        nd.ninputs = 1;
        nd.inputs[0] = y0;
        CHECK_ST(m40_graph_node(g, &nd, &iy), M40_OK);
    }
    if (!fused && c->res) {
        int y0 = iy;
        m40_node_desc_init(&nd, M40_OP_ADD);
        nd.ninputs = 2;
        nd.inputs[0] = y0, nd.inputs[1] = ir;
        CHECK_ST(m40_graph_node(g, &nd, &iy), M40_OK);
    }
    CHECK_ST(m40_graph_mark_output(g, iy), M40_OK);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    m40_tensor *gx = NULL, *gr = NULL, *gy = NULL;
    CHECK_ST(m40_graph_get_tensor(g, ix, &gx), M40_OK);
    CHECK_ST(m40_graph_get_tensor(g, iy, &gy), M40_OK);
    const size_t ybytes = (size_t)(c->M * NY) * 4;
    if (gx) CHECK_ST(m40_tensor_upload(ctx, gx, x, (size_t)(c->M * c->K) * 4), M40_OK);
    if (c->res) {
        CHECK_ST(m40_graph_get_tensor(g, ir, &gr), M40_OK);
        if (gr) CHECK_ST(m40_tensor_upload(ctx, gr, res, (size_t)(c->M * c->N) * 4), M40_OK);
    }
    CHECK_ST(m40_graph_run(g), M40_OK);
    if (capture) {
        CHECK_ST(m40_graph_capture(g, 1), M40_OK);
        float *poison = malloc(ybytes);
        m40t_poison(poison, c->M * NY);
        if (gy) CHECK_ST(m40_tensor_upload(ctx, gy, poison, ybytes), M40_OK);
        free(poison);
        CHECK_ST(m40_graph_run(g), M40_OK);
    }
    m40t_poison(out, c->M * NY);
    if (gy) CHECK_ST(m40_tensor_download(ctx, gy, out, ybytes), M40_OK);
    m40_graph_destroy(g);
}

static void one_case(qcase c) {
    const int f16 = c.f.wtype == M40_DTYPE_F16;
    const int64_t M = c.M, N = c.N, K = c.K, NY = c.glu ? N / 2 : N;
    m40_tensor_desc dd, ds;
    CHECK_ST(m40_quant_descs(&c.f, N, K, &dd, &ds), M40_OK);
    m40_tensor *w = m40t_f32(CPU, 2, N, K, 0, 0), *hd = NULL, *hs = NULL;
    CHECK_ST(m40_tensor_new(CPU, dd.dtype, dd.ndim, dd.shape, &hd), M40_OK);
    if (!f16) CHECK_ST(m40_tensor_new(CPU, ds.dtype, ds.ndim, ds.shape, &hs), M40_OK);
    if (!hd || (!f16 && !hs)) return;
    fill(m40_tensor_get_data(w), N * K, 21);
    CHECK_ST(m40_quantize(CPU, &c.f, w, hd, hs), M40_OK);
    float *x = malloc((size_t)(M * K) * 4), *b = malloc((size_t)N * 4), *r = malloc((size_t)(M * N) * 4);
    float *nwf = malloc((size_t)K * 4);
    uint16_t *nwh = malloc((size_t)K * 2);
    fill(x, M * K, 22);
    for (int64_t i = 0; i < M * K; i++) x[i] *= 3.0f; /* rms ~1.7: the norm does something */
    fill(b, N, 23);
    fill(r, M * N, 24);
    fill(nwf, K, 25);
    for (int64_t i = 0; i < K; i++) {
        nwf[i] = 0.5f + 0.5f * nwf[i];
        nwh[i] = f2h(nwf[i]);
    }
    const void *nw = c.nw_f16 ? (const void *)nwh : (const void *)nwf;
    float *y[4];
    for (int i = 0; i < 4; i++) y[i] = malloc((size_t)(M * N) * 4);
    char name[160];
    snprintf(name, sizeof name, "%s M%lld N%lld K%lld%s%s%s%s", m40_quant_format_name(&c.f),
             (long long)M, (long long)N, (long long)K, c.bias ? " bias" : "",
             c.norm ? (c.nw_f16 ? " norm(f16 w)" : " norm(f32 w)") : "", c.res ? " residual" : "",
             c.glu ? " glu" : "");
    /* CPU: fused == the separate nodes, bit for bit */
    run_graph(CPU, &c, 1, 0, hd, hs, x, nw, b, r, y[0]);
    run_graph(CPU, &c, 0, 0, hd, hs, x, nw, b, r, y[1]);
    char n2[200];
    snprintf(n2, sizeof n2, "cpu fused == unfused: %s", name);
    CHECK(m40t_compare(n2, y[0], y[1], M * NY, (m40t_tol){0, 0, 0}));
    if (GPU) {
        /* the GPU graphs (the same host weights, set as graph data) against the CPU */
        run_graph(GPU, &c, 1, 1, hd, hs, x, nw, b, r, y[2]);
        run_graph(GPU, &c, 0, 0, hd, hs, x, nw, b, r, y[3]);
        double mx = 0;
        for (int64_t i = 0; i < M * NY; i++) mx = fmax(mx, fabs(y[0][i]));
        const m40t_tol tol = {1e-5 * mx + 1e-6, 1e-4, 1e-9};
        snprintf(n2, sizeof n2, "gpu fused vs cpu: %s", name);
        CHECK(m40t_compare(n2, y[2], y[0], M * NY, tol));
        snprintf(n2, sizeof n2, "gpu fused vs gpu unfused: %s", name);
        CHECK(m40t_compare(n2, y[2], y[3], M * NY, tol));
    }
    for (int i = 0; i < 4; i++) free(y[i]);
    free(x), free(b), free(r), free(nwf), free(nwh);
    m40_tensor_destroy(w);
    m40_tensor_destroy(hd);
    m40_tensor_destroy(hs);
}

/* The batch-1 v2 knobs' common cases (int4/int8, row and group scales):
** the norm fused or not, residual, bias, K 4096 / 2048 / 1792 / 96, few rows. */
static void batch1_cases(void) {
    const m40_quant_format q8 = {M40_DTYPE_Q8, 0, M40_DTYPE_F16}, q4 = {M40_DTYPE_Q4, 0, M40_DTYPE_F16},
                           q4g = {M40_DTYPE_Q4, 128, M40_DTYPE_F16}, q8g = {M40_DTYPE_Q8, 64, M40_DTYPE_F32};
    one_case((qcase){q4, 1, 4608, 4096, 1, 1, 0, 1, 0});
    one_case((qcase){q8, 1, 4096, 4096, 0, 0, 1, 0, 0});
    one_case((qcase){q4g, 1, 300, 2048, 1, 1, 1, 0, 0});
    one_case((qcase){q8g, 1, 301, 1792, 1, 1, 1, 1, 0});
    one_case((qcase){q4, 1, 7, 96, 1, 1, 1, 0, 0});
}

/* Bad fused inputs: a norm weight of the wrong length or dtype, a residual
** of the wrong shape, eps <= 0, glu not 0/1, with a residual or an odd N:
** statuses with messages at m40_graph_node. */
static void bad_inputs(m40_ctx *ctx) {
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(ctx, &g), M40_OK);
    if (!g) return;
    m40_tensor_desc dx, dw, dn, dn2, dni, dr, dr2;
    const int64_t xs[2] = {2, 64}, ws[2] = {16, 64}, ns = 64, ns2 = 63, rs[2] = {2, 16}, rs2[2] = {2, 15};
    m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, xs);
    m40_tensor_desc_make(&dw, M40_DTYPE_F16, 2, ws);
    m40_tensor_desc_make(&dn, M40_DTYPE_F16, 1, &ns);
    m40_tensor_desc_make(&dn2, M40_DTYPE_F32, 1, &ns2);
    m40_tensor_desc_make(&dni, M40_DTYPE_I32, 1, &ns);
    m40_tensor_desc_make(&dr, M40_DTYPE_F32, 2, rs);
    m40_tensor_desc_make(&dr2, M40_DTYPE_F32, 2, rs2);
    int ix, iw, iw15, in, in2, ini, ir, ir2, y;
    m40_tensor_desc dw15;
    const int64_t ws15[2] = {15, 64};
    m40_tensor_desc_make(&dw15, M40_DTYPE_F16, 2, ws15);
    m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &ix);
    m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &dw, &iw);
    m40_graph_tensor(g, M40_ROLE_WEIGHT, "w15", &dw15, &iw15);
    m40_graph_tensor(g, M40_ROLE_WEIGHT, "n", &dn, &in);
    m40_graph_tensor(g, M40_ROLE_WEIGHT, "n2", &dn2, &in2);
    m40_graph_tensor(g, M40_ROLE_WEIGHT, "ni", &dni, &ini);
    m40_graph_tensor(g, M40_ROLE_INPUT, "r", &dr, &ir);
    m40_graph_tensor(g, M40_ROLE_INPUT, "r2", &dr2, &ir2);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
    nd.bits = 16;
    nd.ninputs = 6;
    nd.inputs[0] = ix, nd.inputs[1] = iw, nd.inputs[4] = in, nd.inputs[5] = ir;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    nd.inputs[4] = in2;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_SHAPE);
    CHECK(strstr(m40_errmsg(ctx), "norm weight") != NULL);
    nd.inputs[4] = ini;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_DTYPE);
    nd.inputs[4] = in, nd.inputs[5] = ir2;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_SHAPE);
    CHECK(strstr(m40_errmsg(ctx), "residual") != NULL);
    nd.inputs[5] = ir, nd.eps = 0.0f;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "eps") != NULL);
    nd.eps = 1e-5f;
    nd.glu = 1; /* glu with a residual */
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "glu") != NULL);
    nd.ninputs = 5, nd.glu = 2;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "glu") != NULL);
    nd.glu = 1;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK); /* N 16: y [2, 8] */
    nd.inputs[1] = iw15; /* N 15: odd */
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(ctx), "even") != NULL);
    nd.inputs[1] = iw, nd.ninputs = 6, nd.glu = 0;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK); /* still usable */
    m40_graph_destroy(g);
}

/* The batch-1 shapes the passes GEMV takes (dense_4h_to_h, int4 / int8,
** row and group scales, bias and residual, a 32-column second pass, rows
** past N); norm: also one with the norm, which the chooser keeps off the
** passes; six: a group-scaled K of 6 chunks, 2 passes */
static void passes_shapes(m40_quant_format q4, m40_quant_format q8, m40_quant_format q4g, m40_quant_format q8g,
                          int norm, int six) {
    one_case((qcase){q4, 1, 4096, 13696, 1, 0, 1, 0, 0}); /* dense_4h_to_h */
    one_case((qcase){q8, 1, 4096, 13696, 1, 0, 1, 0, 0});
    one_case((qcase){q4g, 1, 300, 13696, 0, 0, 1, 0, 0});
    one_case((qcase){q8g, 1, 300, 13696, 1, 0, 0, 0, 0});
    one_case((qcase){q4, 1, 300, 4128, 1, 0, 0, 0, 0});
    if (norm) one_case((qcase){q4, 1, 300, 4128, 1, 1, 1, 0, 0}); /* the norm: not in passes */
    if (six) one_case((qcase){q4g, 1, 300, 5152, 1, 0, 1, 0, 0}); /* 6 chunks, 2 passes */
}

int main(int argc, char **argv) {
    int gpu = 0;
    int rc = m40t_side(argc, argv, &gpu);
    if (rc) return rc;
    CPU = m40t_ctx(0);
    if (!CPU) return 1;
    if (gpu && !(GPU = m40t_ctx(1))) return 1;
    const m40_quant_format q8 = {M40_DTYPE_Q8, 0, M40_DTYPE_F16}, q4 = {M40_DTYPE_Q4, 0, M40_DTYPE_F16},
                           q4g = {M40_DTYPE_Q4, 128, M40_DTYPE_F16}, q8g = {M40_DTYPE_Q8, 64, M40_DTYPE_F32},
                           h = {M40_DTYPE_F16, 0, M40_DTYPE_F16};
    const m40_quant_format fmts[5] = {q8, q4, q4g, h, q8g};
    /* M 1: fused into the GEMV; 2, 5: norm kernel + GEMV; 20: slices; 130: the SGEMM */
    const int64_t Ms[5] = {1, 2, 5, 20, 130};
    for (int fi = 0; fi < 5; fi++)
        for (int mi = 0; mi < 5; mi++) {
            const int64_t M = Ms[mi];
            if (!gpu && M > 5) continue; /* the CPU's check is the same code at any M */
            one_case((qcase){fmts[fi], M, 300, 1024, fi != 4, 1, 1, fi % 2, 0});
        }
    /* each fusion alone, the bias absent; an odd K (int4's generic kernel);
    ** K past the v3 staging's budget at M 1 (int8 13696: the norm kernel
    ** first) */
    one_case((qcase){q4, 1, 70, 512, 0, 1, 0, 1, 0});
    one_case((qcase){q8, 1, 70, 512, 1, 0, 1, 0, 0});
    one_case((qcase){h, 3, 70, 512, 0, 0, 1, 1, 0});
    one_case((qcase){q4, 1, 40, 200, 1, 1, 1, 1, 0});
    one_case((qcase){h, 1, 40, 200, 1, 1, 1, 0, 0});
    if (gpu) {
        one_case((qcase){q8, 1, 4096, 13696, 0, 1, 1, 1, 0});
        one_case((qcase){q4, 1, 4608, 4096, 1, 1, 0, 1, 0}); /* ChatGLM2's query_key_value */
        one_case((qcase){h, 1, 4608, 4096, 1, 1, 0, 1, 0});
        one_case((qcase){q4g, 1, 4096, 4096, 0, 0, 1, 1, 0}); /* its dense */
        one_case((qcase){q4, 1, 4096, 4096, 1, 0, 1, 0, 0});  /* int4's dense: v2 */
        /* int4 at M 1: v2 with the norm up to N 8192 (f32 norm weights
        ** here), v3 with it above */
        one_case((qcase){q4, 1, 300, 2048, 1, 1, 1, 0, 0});
        one_case((qcase){q4, 1, 9000, 1024, 1, 1, 1, 1, 0});
        one_case((qcase){q4g, 1, 9000, 1024, 0, 1, 0, 0, 0});
        if (&m40k_quant_gemv_small_v2_q8 && &m40k_quant_gemv_v2_whole) {
            /* int8's small shapes (v2 with x staged whole by default) on
            ** v3, then int4's on v2 with x staged whole (the A/B knobs) */
            one_case((qcase){q8g, 1, 300, 1024, 1, 1, 1, 1, 0});
            one_case((qcase){q8, 1, 4096, 4096, 0, 0, 1, 0, 0});
            m40k_quant_gemv_small_v2_q8 = 0;
            one_case((qcase){q8, 1, 4608, 4096, 1, 1, 0, 1, 0});
            m40k_quant_gemv_small_v2_q8 = 1;
            const int wh0 = m40k_quant_gemv_v2_whole;
            m40k_quant_gemv_v2_whole = 1;
            one_case((qcase){q4, 1, 4608, 4096, 1, 1, 0, 1, 0});
            one_case((qcase){q4g, 1, 300, 2048, 1, 1, 1, 0, 0});
            m40k_quant_gemv_v2_whole = wh0;
        }
        if (&m40k_quant_gemv_v2_pass) {
            /* batch-1 GEMVs with K past 4096 on v2 with x staged in passes
            ** (the knob): int4 and int8 (instead of split-K), group scales,
            ** bias and residual, a 32-column second pass, rows past N; with
            ** the norm the chooser keeps its own path. Every setting: 0 the
            ** chunked staging and int8's split-K, 1 passes, 2 passes with
            ** the exponent-zero decode for int4, 3 for int8 too. int4's
            ** weights one chunk ahead (m40k_quant_gemv_v2_pass_depth 1),
            ** then in a ring of four chunks with any scales (4; the rule, 0,
            ** takes one of the two) for 1-3: a last pass of one chunk, the
            ** ring's refill stopping at the end of K (test_quant_gpu runs it
            ** below the ring's K); int8 stays one chunk ahead */
            const int p0 = m40k_quant_gemv_v2_pass;
            const int d0 = &m40k_quant_gemv_v2_pass_depth ? m40k_quant_gemv_v2_pass_depth : 0;
            for (int dv = 0; dv < (&m40k_quant_gemv_v2_pass_depth ? 2 : 1); dv++) {
                if (&m40k_quant_gemv_v2_pass_depth) m40k_quant_gemv_v2_pass_depth = dv ? 4 : 1;
                for (int pv = dv; pv < 4; pv++) {
                    m40k_quant_gemv_v2_pass = pv;
                    passes_shapes(q4, q8, q4g, q8g, 1, dv);
                }
            }
            m40k_quant_gemv_v2_pass = p0;
            if (&m40k_quant_gemv_v2_pass_depth) m40k_quant_gemv_v2_pass_depth = d0;
            if (&m40k_quant_gemv_v2_pass_db) {
                /* x double-buffered in passes (one barrier a pass): never
                ** (1; the loop above ran the rule, 0: int4's ring and int8),
                ** then in every passes form (2: int4 with group scales one
                ** chunk ahead too); int4's ring and one chunk ahead, 4096
                ** columns a pass, so 4128 is a last pass of one chunk */
                const int b0 = m40k_quant_gemv_v2_pass_db;
                for (int db = 1; db <= 2; db++) {
                    m40k_quant_gemv_v2_pass_db = db;
                    for (int dv = 0; dv < (&m40k_quant_gemv_v2_pass_depth ? 2 : 1); dv++) {
                        if (&m40k_quant_gemv_v2_pass_depth) m40k_quant_gemv_v2_pass_depth = dv ? 4 : 1;
                        for (int pv = 2; pv < 4; pv++) {
                            m40k_quant_gemv_v2_pass = pv;
                            passes_shapes(q4, q8, q4g, q8g, 0, 1);
                        }
                    }
                }
                m40k_quant_gemv_v2_pass_db = b0;
                m40k_quant_gemv_v2_pass = p0;
                if (&m40k_quant_gemv_v2_pass_depth) m40k_quant_gemv_v2_pass_depth = d0;
            }
        }
        if (&m40k_quant_gemv_v2_deep) {
            /* batch-1 v2 with the other depth of weights in flight (a
            ** ring of four, or one chunk ahead): the norm, group scales,
            ** x staged whole and by chunk, K past the ring */
            const int d0 = m40k_quant_gemv_v2_deep;
            m40k_quant_gemv_v2_deep = !d0;
            one_case((qcase){q4, 1, 4608, 4096, 1, 1, 0, 1, 0});
            one_case((qcase){q8, 1, 4608, 4096, 1, 1, 0, 1, 0});
            one_case((qcase){q4g, 1, 300, 2048, 1, 1, 1, 0, 0});
            one_case((qcase){q4, 1, 4096, 13696, 0, 1, 1, 1, 0});
            one_case((qcase){q4g, 1, 4096, 13696, 0, 0, 1, 0, 0});
            one_case((qcase){h, 1, 4608, 4096, 1, 1, 0, 1, 0});
            one_case((qcase){q4, 1, 300, 1760, 1, 1, 1, 1, 0}); /* fewer chunks than the ring */
            m40k_quant_gemv_v2_deep = d0;
        }
        if (&m40k_quant_gemv_v2_ez && &m40k_quant_gemv_v2_whole) {
            /* batch-1 v2 with the other decode (exponent-zero or v2's
            ** own), x staged whole and by chunk: the norm, group scales,
            ** K past 4096, a short last chunk, few rows */
            const int e0 = m40k_quant_gemv_v2_ez, w0 = m40k_quant_gemv_v2_whole;
            for (int e = 0; e <= 2; e++) /* 2: chunked too */
                for (int w = 0; w <= 1; w++) {
                    m40k_quant_gemv_v2_ez = e;
                    m40k_quant_gemv_v2_whole = w;
                    batch1_cases();
                    one_case((qcase){q4, 1, 4096, 13696, 0, 1, 1, 1, 0});
                    one_case((qcase){q4g, 1, 4096, 13696, 0, 0, 1, 0, 0});
                }
            /* ez whole with two and four chunks of weights in flight */
            const int d0 = &m40k_quant_gemv_v2_deep ? m40k_quant_gemv_v2_deep : 0;
            m40k_quant_gemv_v2_ez = 1;
            m40k_quant_gemv_v2_whole = 1;
            for (int d = 2; d <= 4 && &m40k_quant_gemv_v2_deep; d += 2) {
                m40k_quant_gemv_v2_deep = d;
                batch1_cases(); /* its 7 x 96: fewer chunks than the ring */
            }
            if (&m40k_quant_gemv_v2_deep) m40k_quant_gemv_v2_deep = d0;
            if (&m40k_quant_gemv_v2_r1) { /* ez whole at R = 1 in 16-warp blocks */
                const int r0 = m40k_quant_gemv_v2_r1;
                m40k_quant_gemv_v2_r1 = 1;
                batch1_cases();
                m40k_quant_gemv_v2_r1 = r0;
            }
            m40k_quant_gemv_v2_ez = e0;
            m40k_quant_gemv_v2_whole = w0;
        }
        if (&m40k_quant_gemv_q4_split) { /* int4's large-K GEMV on v3 split-K (the knob) */
            const int q0 = m40k_quant_gemv_q4_split;
            m40k_quant_gemv_q4_split = 1;
            one_case((qcase){q4, 1, 4096, 13696, 0, 1, 1, 1, 0});
            one_case((qcase){q4g, 1, 4096, 13696, 0, 0, 1, 0, 0});
            m40k_quant_gemv_q4_split = q0;
        }
        if (&m40k_quant_gemv_v2_ks) {
            /* batch-1 v2 whole with a row's K over 2 and 4 warps (and 1) */
            const int k0 = m40k_quant_gemv_v2_ks;
            for (int ks = 1; ks <= 4; ks *= 2) {
                m40k_quant_gemv_v2_ks = ks;
                batch1_cases(); /* its q8g 301 x 1792: fewer chunks than warps */
            }
            m40k_quant_gemv_v2_ks = k0;
        }
    }
    /* glu: every format at M 1, 2 (the GEMV's paired store: v3, v2 at R 2
    ** or 4), 5 (v2 R 4: 20 values, not a power of two: the SWIGLU kernel
    ** after it), 20 (slices) and 130 (the SGEMM, then SWIGLU); the norm and
    ** bias with it; F odd (R 4 cannot pair: the kernel after it) */
    for (int fi = 0; fi < 5; fi++)
        for (int mi = 0; mi < 5; mi++) {
            const int64_t M = Ms[mi];
            if (!gpu && M > 2) continue;
            one_case((qcase){fmts[fi], M, 300, 1024, fi != 4, mi != 1, 0, fi % 2, 1});
        }
    one_case((qcase){q4g, 2, 14, 512, 1, 0, 0, 0, 1});
    if (gpu) {
        /* ChatGLM2's dense_h_to_4h (F 13696) with its norm, each format */
        for (int fi = 0; fi < 4; fi++) one_case((qcase){fmts[fi], 1, 2 * 13696, 4096, 0, 1, 0, 1, 1});
        one_case((qcase){q4, 4, 2 * 13696, 4096, 0, 0, 0, 0, 1}); /* v2 R 4 at M 4: 16 values */
        one_case((qcase){q8, 8, 2 * 1000, 1024, 1, 1, 0, 0, 1});  /* split-K at M 8: the kernel after it */
    }
    bad_inputs(CPU);
    m40_ctx_destroy(GPU);
    m40_ctx_destroy(CPU);
    return m40t_finish("test_qlinear_fused");
}
