/* Uses only the installed public header: proves it needs no CUDA headers. */
#include <m40/m40.h>
#include <stdio.h>

int main(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *ctx;
    if (m40_ctx_create(&d, &ctx) != M40_OK) return 1;
    int64_t s[1] = {8};
    m40_tensor *t;
    float v[8];
    int ok = m40_tensor_new(ctx, M40_DTYPE_F32, 1, s, &t) == M40_OK &&
             m40_fill_random(ctx, 1, M40_RANDOM_UNIFORM, 1, 2, t) == M40_OK &&
             m40_activation(ctx, M40_ACT_RELU, t, t) == M40_OK &&
             m40_tensor_download(ctx, t, v, sizeof v) == M40_OK && v[0] >= 1 && v[0] < 2;
    printf("consumer: libm40 %s (%s): %s\n", m40_version(), m40_build_info(), ok ? "ok" : "FAILED");
    m40_tensor_destroy(t);
    m40_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
