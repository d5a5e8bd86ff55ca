/* Conv engine knobs of the context, and the checks its users share. The
** graph's per-node knobs and its settle/tune step live with the graph
** (lib/graph/conv_tune.c): the graph uses the conv engine, not the reverse. */
#include "conv_engine.h"

#include <stdio.h>
#include <string.h>

const char *m40_conv_engine_name(m40_conv_engine e) {
    switch (e) {
    case M40_CONV_ENGINE_DEFAULT: return "default";
    case M40_CONV_ENGINE_OURS: return "ours";
    case M40_CONV_ENGINE_CUDNN: return "cudnn";
    case M40_CONV_ENGINE_AUTO: return "auto";
    default: return "?";
    }
}

#ifndef M40_HAVE_CUDNN
int m40_cudnn_version(void) { return 0; } /* cuDNN: not built in */
#endif

bool m40__conv_engine_valid(m40_conv_engine e) {
    return (int)e >= M40_CONV_ENGINE_DEFAULT && (int)e <= M40_CONV_ENGINE_AUTO;
}

const char *m40__cudnn_refusal(const m40_ctx *ctx) {
#ifndef M40_HAVE_CUDNN
    (void)ctx;
    return M40__CUDNN_NOT_BUILT;
#else
    return ctx->is_gpu ? NULL : "cuDNN: needs a GPU context (this one runs the CPU reference)";
#endif
}

m40_status m40_ctx_set_conv_engine(m40_ctx *ctx, m40_conv_engine e) {
    static const char fn[] = "m40_ctx_set_conv_engine";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!m40__conv_engine_valid(e))
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: unknown engine %d (ours, cudnn, auto)",
                        fn, (int)e);
    if (e == M40_CONV_ENGINE_CUDNN) {
        const char *why = m40__cudnn_refusal(ctx);
        if (why) return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s", fn, why);
#ifdef M40_HAVE_CUDNN
        if ((st = m40__cudnn_ready(ctx)) != M40_OK) return st;
#endif
    }
    ctx->conv_engine = e == M40_CONV_ENGINE_DEFAULT ? M40_CONV_ENGINE_OURS : e;
    return M40_OK;
}

m40_conv_engine m40_ctx_get_conv_engine(const m40_ctx *ctx) {
    if (!ctx || ctx->conv_engine == M40_CONV_ENGINE_DEFAULT) return M40_CONV_ENGINE_OURS;
    return ctx->conv_engine;
}

void m40__conv_sel_clear(m40__conv_sel *sel) {
    m40__cudnn_plan_free(sel->cudnn);
    memset(sel, 0, sizeof *sel);
    sel->algo = -1;
}
