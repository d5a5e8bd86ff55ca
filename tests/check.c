#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int m40t_failures = 0, m40t_checks = 0;

int m40t_compare(const char *name, const float *got, const float *ref, int64_t n,
                 m40t_tol tol) {
    double max_abs = 0, max_rel = 0, se = 0, sr = 0;
    int64_t bad = 0, shown = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i], d = fabs(g - r);
        bool ok;
        if (!isfinite(r)) ok = (isnan(r) && isnan(g)) || g == r;
        else ok = isfinite(g) && d <= tol.atol + tol.rtol * fabs(r);
        if (isfinite(g) && isfinite(r)) {
            se += d * d;
            sr += r * r;
            if (d > max_abs) max_abs = d;
            if (r != 0 && d / fabs(r) > max_rel) max_rel = d / fabs(r);
        }
        if (!ok) {
            if (shown++ < 5)
                fprintf(stderr, "  %s[%lld]: got %.9g, ref %.9g, |diff| %.3g\n", name,
                        (long long)i, g, r, d);
            bad++;
        }
    }
    double nmse = sr > 0 ? se / sr : se;
    int pass = bad == 0 && nmse <= tol.nmse;
    m40t_checks++;
    if (!pass) m40t_failures++;
    printf("%-4s %-44s n=%-9lld max_abs=%.3g max_rel=%.3g nmse=%.3g%s\n",
           pass ? "ok" : "FAIL", name, (long long)n, max_abs, max_rel, nmse,
           bad ? " (element mismatches)" : nmse > tol.nmse ? " (nmse over bound)" : "");
    return pass;
}

int m40t_finish(const char *prog) {
    printf("%s: %d checks, %d failed\n", prog, m40t_checks, m40t_failures);
    if (m40t_checks == 0) {
        printf("%s: no checks ran: failing\n", prog);
        return 1;
    }
    return m40t_failures ? 1 : 0;
}

m40_ctx *m40t_gpu_ctx_or_skip(const char *prog) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = 0;
    m40_ctx *ctx = NULL;
    m40_status st = m40_ctx_create(&d, &ctx);
    if (st != M40_OK) {
        printf("%s: SKIPPED (no usable GPU): %s: %s\n", prog, m40_status_str(st),
               m40_errmsg(ctx));
        m40_ctx_destroy(ctx);
        return NULL;
    }
    m40_device_info info;
    if (m40_ctx_get_info(ctx, &info) == M40_OK)
        printf("%s: GPU %s (cc %d.%d, %d SMs), libm40 %s\n", prog, info.name,
               info.cc_major, info.cc_minor, info.sm_count, m40_build_info());
    return ctx;
}

int m40t_side(int argc, char **argv, int *gpu) {
    *gpu = argc > 1 && !strcmp(argv[1], "--gpu");
    if (!*gpu) return 0;
    m40_ctx *probe = m40t_gpu_ctx_or_skip(argv[0]);
    if (!probe) return M40T_SKIP;
    m40_ctx_destroy(probe);
    return 0;
}

m40_ctx *m40t_ctx(int gpu) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = gpu ? 0 : M40_DEVICE_CPU;
    m40_ctx *c = NULL;
    if (m40_ctx_create(&d, &c) != M40_OK) {
        m40_ctx_destroy(c);
        return NULL;
    }
    return c;
}

int m40t_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

double m40t_rel_err(const float *got, const float *ref, int64_t n) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        d = fmax(d, fabs((double)got[i] - ref[i]));
        r = fmax(r, fabs((double)ref[i]));
    }
    return r > 0 ? d / r : d;
}

m40_tensor *m40t_f32(m40_ctx *ctx, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t s[4] = {a, b, c, d};
    m40_tensor *t = NULL;
    if (m40_tensor_new(ctx, M40_DTYPE_F32, nd, s, &t) != M40_OK) {
        fprintf(stderr, "m40_tensor_new: %s\n", m40_errmsg(ctx));
        exit(1);
    }
    return t;
}

void m40t_conv_tensors(m40_ctx *c, int nhwc, int N, int C, int H, int W, int K, int R, int S,
                       int P, int Q, m40_tensor *t[6]) {
    t[0] = nhwc ? m40t_f32(c, 4, N, H, W, C) : m40t_f32(c, 4, N, C, H, W);
    t[1] = nhwc ? m40t_f32(c, 4, K, R, S, C) : m40t_f32(c, 4, K, C, R, S);
    t[2] = m40t_f32(c, 1, K, 0, 0, 0);
    t[3] = m40t_f32(c, 1, K, 0, 0, 0);
    t[4] = nhwc ? m40t_f32(c, 4, N, P, Q, K) : m40t_f32(c, 4, N, K, P, Q);
    t[5] = nhwc ? m40t_f32(c, 4, N, P, Q, K) : m40t_f32(c, 4, N, K, P, Q);
}

m40_conv2d_desc m40t_conv_desc(m40_layout layout, int stride, int pad, int dilation, int relu) {
    m40_conv2d_desc d;
    m40_conv2d_desc_init(&d);
    d.layout = layout;
    d.stride_h = d.stride_w = stride;
    d.pad_h = d.pad_w = pad;
    d.dilation_h = d.dilation_w = dilation;
    d.relu = relu != 0;
    return d;
}

void m40t_poison(float *p, int64_t n) {
    uint32_t nan_bits = 0x7FC0DEADu;
    for (int64_t i = 0; i < n; i++) memcpy(&p[i], &nan_bits, 4);
}

m40_status m40t_mlp_graph(m40_ctx *c, int64_t M, int64_t N, int64_t K, const float *w,
                          m40_graph **out, int *x_id, int *y_id) {
    *out = NULL;
    m40_graph *g = NULL;
    m40_status st = m40_graph_create(c, &g);
    if (st != M40_OK) return st;
    int64_t xs[2] = {M, K}, ws[2] = {N, K};
    m40_tensor_desc xd, wd;
    m40_tensor_desc_make(&xd, M40_DTYPE_F32, 2, xs);
    m40_tensor_desc_make(&wd, M40_DTYPE_F32, 2, ws);
    int wi = -1, h = -1;
    m40_node_desc nd;
    st = m40_graph_tensor(g, M40_ROLE_INPUT, "x", &xd, x_id);
    if (st == M40_OK) st = m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &wd, &wi);
    if (st == M40_OK) st = m40_graph_set_data(g, wi, w, sizeof(float) * (size_t)(N * K));
    m40_node_desc_init(&nd, M40_OP_LINEAR);
    nd.ninputs = 2;
    nd.inputs[0] = *x_id;
    nd.inputs[1] = wi;
    if (st == M40_OK) st = m40_graph_node(g, &nd, &h);
    m40_node_desc_init(&nd, M40_OP_ACTIVATION);
    nd.act = M40_ACT_RELU;
    nd.ninputs = 1;
    nd.inputs[0] = h;
    if (st == M40_OK) st = m40_graph_node(g, &nd, &h);
    m40_node_desc_init(&nd, M40_OP_SOFTMAX);
    nd.ninputs = 1;
    nd.inputs[0] = h;
    if (st == M40_OK) st = m40_graph_node(g, &nd, y_id);
    if (st == M40_OK) st = m40_graph_mark_output(g, *y_id);
    if (st == M40_OK) st = m40_graph_alloc(g);
    if (st != M40_OK) {
        m40_graph_destroy(g);
        return st;
    }
    *out = g;
    return M40_OK;
}
