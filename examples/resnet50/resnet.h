/* ResNet (torchvision layout, v1.5 bottlenecks) on the libm40 graph API.
**
** The architecture is read from the weights: base width from conv1.weight,
** blocks per stage from the layer{1..4}.{i} names, classes from fc.weight,
** so ResNet-50 and the reduced test network take the same code path.
** BatchNorm is folded into each convolution at load time:
**   s = gamma / sqrt(var + 1e-5);  w' = w · s (per output channel);
**   b' = beta − mean · s. */
#ifndef M40_EXAMPLE_RESNET_H
#define M40_EXAMPLE_RESNET_H

#include <m40/graph.h>
#include <m40/safetensors.h>

typedef struct rn_config {
    int base;       /* conv1 output channels (64 for ResNet-50) */
    int blocks[4];  /* bottlenecks per stage ({3,4,6,3}) */
    int classes;    /* fc outputs (1000) */
} rn_config;

typedef struct rn_model {
    rn_config cfg;
    int batch, height, width;
    m40_layout layout; /* of every activation, the input included */
    m40_graph *g;
    int input_id;   /* [N,3,H,W] f32 (NHWC: [N,H,W,3]) */
    int logits_id;  /* [N,classes] f32 */
    m40_plan_info plan;
} rn_model;

/* ResNet-50's configuration. */
rn_config rn_resnet50(void);

/* Reads the configuration from a weights file; checks that conv1, fc and
** every block's tensors exist. Message in err on failure. */
m40_status rn_config_from_weights(m40_st_file *w, rn_config *cfg, char *err, size_t errlen);

/* Builds, plans (against `budget`, may be NULL) and allocates the graph for
** batch N at HxW, with activations in `layout` (NHWC: each conv is one GEMM
** on the GPU; NCHW: the direct kernel). Each conv fuses its bias, the
** block's residual add and ReLU. With `weights`, every tensor is checked by name, dtype
** and shape, BN is folded, and any tensor the model does not use is an
** error; without, weights are seeded random (He-normal convs, identity
** BN) filled on the context's side. On failure the message is in err (and
** the context's errmsg) and *m is cleaned up. */
m40_status rn_build(m40_ctx *ctx, const rn_config *cfg, m40_st_file *weights, uint64_t seed,
                    int N, int H, int W, m40_layout layout, const m40_budget *budget,
                    rn_model *m, char *err, size_t errlen);

/* [N,C,H,W] -> [N,H,W,C] on the host (for feeding an NHWC model). */
void rn_nchw_to_nhwc(const float *src, float *dst, int N, int C, int H, int W);

void rn_free(rn_model *m);

#endif
