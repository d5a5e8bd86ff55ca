/* Bad input on a GPU context: bad ordinal, wrong side, device OOM (the
** context stays usable), and a sticky CUDA error (every later call says
** so). Exits 77 without a GPU. */
#include "check.h"
#include "internal.h"
#include "../kernels/elementwise.h"

#include <string.h>

int main(void) {
    m40_ctx *g = m40t_gpu_ctx_or_skip("test_gpu_errors");
    if (!g) return M40T_SKIP;

    /* an ordinal past the last device */
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = 4096;
    m40_ctx *bad = NULL;
    CHECK_ST(m40_ctx_create(&d, &bad), M40_ERR_NO_DEVICE);
    CHECK(bad && strstr(m40_errmsg(bad), "out of range"));
    printf("bad ordinal: %s\n", m40_errmsg(bad));
    m40_ctx_destroy(bad);

    /* host tensor given to a GPU op */
    int64_t shape[1] = {16};
    m40_tensor *h, *t;
    CHECK_ST(m40_tensor_create(g, &(m40_tensor_desc){.dtype = M40_DTYPE_F32, .ndim = 1, .shape = {16}},
                               M40_LOC_HOST, &h), M40_OK);
    CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 1, shape, &t), M40_OK);
    CHECK_ST(m40_add(g, h, t, t), M40_ERR_LOCATION);
    printf("wrong side: %s\n", m40_errmsg(g));

    /* out of device memory: 1 PiB; then the context still works */
    int64_t huge[2] = {1 << 20, 1 << 28};
    m40_tensor *big = NULL;
    CHECK_ST(m40_tensor_new(g, M40_DTYPE_F32, 2, huge, &big), M40_ERR_OOM_DEVICE);
    CHECK(big == NULL);
    printf("oom: %s\n", m40_errmsg(g));
    CHECK_ST(m40_fill_random(g, 1, M40_RANDOM_UNIFORM, 0, 1, t), M40_OK);
    CHECK_ST(m40_ctx_sync(g), M40_OK);

    /* a kernel that traps: the CUDA context is gone for this process */
    CHECK(m40k_debug_trap(m40_ctx_get_stream(g)) == 0);
    CHECK_ST(m40_ctx_sync(g), M40_ERR_DEVICE_LOST);
    printf("sticky: %s\n", m40_errmsg(g));
    CHECK_ST(m40_scale(g, 2.0f, t, t), M40_ERR_DEVICE_LOST);
    CHECK(strstr(m40_errmsg(g), "sticky") != NULL);
    m40_device_info info;
    CHECK_ST(m40_ctx_get_info(g, &info), M40_ERR_DEVICE_LOST);
    m40_tensor_destroy(h);
    m40_tensor_destroy(t);
    m40_ctx_destroy(g); /* must not hang or crash */
    return m40t_finish("test_gpu_errors");
}
