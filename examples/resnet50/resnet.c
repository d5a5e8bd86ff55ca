/* ResNet example helpers: see resnet.h. */
#include "resnet.h"

#include <stddef.h>

void rn_nchw_to_nhwc(const float *src, float *dst, int N, int C, int H, int W) {
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H * W; i++)
                dst[((size_t)n * H * W + (size_t)i) * C + c] = src[((size_t)n * C + c) * H * W + (size_t)i];
}
