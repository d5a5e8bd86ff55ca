/* ResNet example helpers. The network itself is the library's builder,
** m40_resnet50_graph (m40/models.h): torchvision names, BatchNorm folded,
** bias + residual + ReLU in each conv node; the same graph that
** m40-plan --model resnet50 plans. */
#ifndef M40_EXAMPLE_RESNET_H
#define M40_EXAMPLE_RESNET_H

#include <m40/models.h>

/* [N,C,H,W] -> [N,H,W,C] on the host (for feeding an NHWC model). */
void rn_nchw_to_nhwc(const float *src, float *dst, int N, int C, int H, int W);

#endif
