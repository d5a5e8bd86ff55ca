/* The README's example: y = softmax(x·Wᵀ + b) on the GPU if there is one,
** else on the CPU reference. */
#include <m40/m40.h>
#include <stdio.h>

int main(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);                       /* device 0 */
    m40_ctx *ctx;
    if (m40_ctx_create(&d, &ctx) != M40_OK) {    /* no GPU: use the CPU reference */
        fprintf(stderr, "note: %s; using the CPU reference\n", m40_errmsg(ctx));
        m40_ctx_destroy(ctx);
        d.device = M40_DEVICE_CPU;
        if (m40_ctx_create(&d, &ctx) != M40_OK) return 1;
    }
    int64_t xs[2] = {4, 256}, ws[2] = {10, 256}, bs[1] = {10}, ys[2] = {4, 10};
    m40_tensor *x, *w, *b, *y;
    m40_tensor_new(ctx, M40_DTYPE_F32, 2, xs, &x);
    m40_tensor_new(ctx, M40_DTYPE_F32, 2, ws, &w);
    m40_tensor_new(ctx, M40_DTYPE_F32, 1, bs, &b);
    m40_tensor_new(ctx, M40_DTYPE_F32, 2, ys, &y);
    m40_fill_random(ctx, 1, M40_RANDOM_UNIFORM, -1, 1, x);
    m40_fill_random(ctx, 2, M40_RANDOM_NORMAL, 0, 0.05f, w);
    m40_fill_random(ctx, 3, M40_RANDOM_UNIFORM, -0.1f, 0.1f, b);
    m40_status st = m40_matmul(ctx, x, w, b, y);
    if (st == M40_OK) st = m40_softmax(ctx, y, y);
    float out[40];
    if (st == M40_OK) st = m40_tensor_download(ctx, y, out, sizeof out);
    if (st != M40_OK) fprintf(stderr, "error: %s: %s\n", m40_status_str(st), m40_errmsg(ctx));
    else printf("row 0: p[0]=%.4f p[9]=%.4f\n", out[0], out[9]);
    m40_tensor_destroy(x); m40_tensor_destroy(w); m40_tensor_destroy(b); m40_tensor_destroy(y);
    m40_ctx_destroy(ctx);
    return st == M40_OK ? 0 : 1;
}
