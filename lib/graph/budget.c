/* Memory budgets: the M40 card presets, a live device's free memory, or an
** explicit byte count. docs/planner.md explains each number.
**
** A preset's usable bytes = board memory
**   - ECC reserve: with ECC on (the Tesla default) the driver keeps 1/16 of
**     GDDR5 for check bits;
**   - driver/firmware reserve: 128 MiB (page tables, channel buffers);
**   - CUDA context and library handles: 384 MiB (runtime, the fat binary's
**     kernels, cuBLAS's kernels and its 4 MiB default workspace; 300-400 MB
**     is what a context with cuBLAS takes on Maxwell-era drivers).
** All three are estimates until measured on a real M40 (m40_budget_device
** reads the truth from a live card). */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

static const struct preset {
    const char *name;
    uint64_t board_mib;
    int ecc;
} presets[] = {
    {"m40-12g", 12288, 1},
    {"m40-24g", 24576, 1},
    {"m40-12g-noecc", 12288, 0},
    {"m40-24g-noecc", 24576, 0},
};

static const uint64_t DRIVER_MIB = 128, CUDA_CTX_MIB = 384, DEVICE_MARGIN_MIB = 64;

m40_status m40_budget_preset(const char *name, m40_budget *b) {
    if (!name || !b) return M40_ERR_INVALID_ARG;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const struct preset *p = &presets[i];
        if (strcmp(name, p->name) != 0) continue;
        memset(b, 0, sizeof *b);
        snprintf(b->name, sizeof b->name, "%s", p->name);
        b->board_bytes = p->board_mib * MIB;
        uint64_t ecc = p->ecc ? b->board_bytes / 16 : 0;
        b->reserved_bytes = ecc + (DRIVER_MIB + CUDA_CTX_MIB) * MIB;
        b->usable_bytes = b->board_bytes - b->reserved_bytes;
        return M40_OK;
    }
    return M40_ERR_INVALID_ARG;
}

void m40_budget_bytes(uint64_t usable_bytes, m40_budget *b) {
    if (!b) return;
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "explicit");
    b->usable_bytes = usable_bytes;
}

m40_status m40_budget_device(m40_ctx *ctx, m40_budget *b) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!b) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_budget_device: b is NULL");
    if (!ctx->is_gpu)
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "m40_budget_device: a CPU context has no device memory; use a "
                        "preset (m40-12g, m40-24g) or an explicit byte count");
    m40_device_info info;
    if ((st = m40_ctx_get_info(ctx, &info)) != M40_OK) return st;
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "device %d", info.device);
    b->board_bytes = info.total_bytes;
    uint64_t margin = DEVICE_MARGIN_MIB * MIB;
    b->usable_bytes = info.free_bytes > margin ? info.free_bytes - margin : 0;
    b->reserved_bytes = info.total_bytes > b->usable_bytes ? info.total_bytes - b->usable_bytes : 0;
    return M40_OK;
}
