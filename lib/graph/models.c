/* The built-in models as m40-plan sees them: m40_model_graph hands the
** model's own builder (lib/models, include/m40/models.h) a desc made from
** the m40_model_desc, so what is planned is the graph that runs. */
#include "graph_internal.h"
#include "m40/plan.h"

#include <string.h>

const char *m40_model_name(m40_model_kind m) {
    switch (m) {
    case M40_MODEL_RESNET50: return "resnet50";
    case M40_MODEL_CHATGLM2_6B: return "chatglm2-6b";
    default: return "?";
    }
}

void m40_model_desc_init(m40_model_desc *d, m40_model_kind model) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->model = model;
    d->batch = 1;
    d->weights = model == M40_MODEL_RESNET50 ? M40_WFMT_FP32 : M40_WFMT_FP16;
    d->ctx = model == M40_MODEL_CHATGLM2_6B ? 8192 : 0;
    d->chunk = 512;
}

m40_status m40__model_graph(m40_ctx *ctx, const m40_model_desc *d, int phase, int l0,
                            int l1, int tp, m40_graph **out, uint64_t *params) {
    if (out) *out = NULL;
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!d || !out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: NULL argument");
    if (d->struct_size < sizeof *d)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: desc->struct_size is %zu, "
                        "expected %zu (fill it with m40_model_desc_init)", d->struct_size,
                        sizeof *d);
    if (d->model == M40_MODEL_RESNET50) {
        if (d->weights != M40_WFMT_FP32)
            return m40__err(ctx, M40_ERR_INVALID_ARG,
                            "m40_model_graph: resnet50 is planned in fp32 only (sm_52 has no "
                            "fp16 arithmetic; %s weights are not offered)",
                            m40_wformat_name(d->weights));
        /* what examples/resnet50 runs by default: 224x224, NHWC */
        m40_resnet50_desc rd;
        m40_resnet50_desc_init(&rd);
        rd.batch = d->batch;
        m40_resnet50_info info;
        if ((st = m40_resnet50_graph(ctx, &rd, NULL, out, &info)) == M40_OK && params)
            *params = info.params;
        return st;
    }
    if (d->model == M40_MODEL_CHATGLM2_6B) {
        m40_chatglm2_desc cd;
        m40_chatglm2_desc_init(&cd);
        cd.weights = d->weights;
        cd.batch = d->batch;
        cd.ctx = d->ctx;
        cd.chunk = d->chunk;
        cd.phase = (m40_model_phase)phase;
        cd.layer_begin = l0;
        cd.layer_end = l1;
        cd.tp_size = tp > 1 ? tp : 0; /* planned only: no communicator */
        m40_chatglm2_info info;
        if ((st = m40_chatglm2_graph(ctx, &cd, NULL, out, &info)) == M40_OK && params)
            *params = info.params;
        return st;
    }
    return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_model_graph: unknown model %d", (int)d->model);
}

m40_status m40_model_graph(m40_ctx *ctx, const m40_model_desc *d, m40_model_phase phase,
                           m40_graph **out) {
    return m40__model_graph(ctx, d, (int)phase, 0, 0, 0, out, NULL);
}
