/* NHWC 3x3 stride-1 convs of ResNet-50: the implicit GEMM vs Winograd
** F(2x2, 3x3) (kernels/conv.cu), each forced through m40k_conv_shape::algo,
** bias + ReLU fused, at several batch sizes. Prints GFLOP/s counted as the
** direct conv's 2·N·P·Q·K·C·9 (so the ratio is a time ratio), the ratio
** Winograd / implicit, what AUTO picks, and the largest difference between
** the two outputs relative to the largest output.
**   conv_algo_bench [--sizes 1,8,32,64,128] [--repeats 20]
** Median of the repeats after 3 warm-up runs, CUDA events, fresh non-zero
** random inputs (the host fills them once per shape). */
#include "conv.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static float *dev_random(size_t n, unsigned seed) {
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = ((seed >> 8) * (1.0f / 16777216.0f)) * 2.0f - 1.0f;
        if (h[i] == 0.0f) h[i] = 0.5f;
    }
    float *d;
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

int main(int argc, char **argv) {
    std::vector<int> sizes = {1, 8, 32, 64, 128};
    int repeats = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            sizes.clear();
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) sizes.push_back(atoi(t));
        } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: conv_algo_bench [--sizes 1,8,...] [--repeats N]\n");
            return 2;
        }
    }
    int dev = 0, sms = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) {
        fprintf(stderr, "conv_algo_bench: no GPU\n");
        return 77;
    }
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("conv_algo_bench on %s (cc %d.%d, %d SMs)\n", prop.name, prop.major, prop.minor, sms);
    const int layers[][2] = {{56, 64}, {28, 128}, {14, 256}, {7, 512}}; /* H=W, C=K */
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%-22s %5s %12s %12s %8s %6s %10s\n", "layer", "batch", "implicit", "winograd",
           "wino/imp", "auto", "max diff");
    for (auto &L : layers)
        for (int N : sizes) {
            m40k_conv_shape s = {N, L[1], L[0], L[0], L[1], 3, 3, L[0], L[0], 1, 1, 1, 1, 1, 1, 1, 0};
            size_t nx = (size_t)N * L[0] * L[0] * L[1], nw = (size_t)L[1] * 9 * L[1];
            float *x = dev_random(nx, 1u + N), *w = dev_random(nw, 7u), *b = dev_random(L[1], 9u);
            float *y[2];
            size_t wsb = 0;
            for (int a = 1; a <= 2; a++) {
                s.algo = a;
                wsb = std::max(wsb, m40k_conv2d_nhwc_workspace(&s, x, sms));
            }
            void *ws = nullptr;
            CK(cudaMalloc(&ws, wsb ? wsb : 16));
            double ms[2];
            for (int a = 1; a <= 2; a++) {
                s.algo = a;
                CK(cudaMalloc(&y[a - 1], nx * sizeof(float)));
                std::vector<float> t;
                for (int r = 0; r < 3 + repeats; r++) {
                    CK(cudaEventRecord(e0, st));
                    CK((cudaError_t)m40k_conv2d_nhwc(st, &s, x, w, nullptr, b, nullptr, y[a - 1],
                                                     ws, wsb, sms));
                    CK(cudaEventRecord(e1, st));
                    CK(cudaEventSynchronize(e1));
                    float f;
                    CK(cudaEventElapsedTime(&f, e0, e1));
                    if (r >= 3) t.push_back(f);
                }
                std::sort(t.begin(), t.end());
                ms[a - 1] = t[t.size() / 2];
            }
            std::vector<float> h0(nx), h1(nx);
            CK(cudaMemcpy(h0.data(), y[0], nx * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(h1.data(), y[1], nx * 4, cudaMemcpyDeviceToHost));
            double dmax = 0, ymax = 0;
            for (size_t i = 0; i < nx; i++) {
                dmax = fmax(dmax, fabs((double)h0[i] - h1[i]));
                ymax = fmax(ymax, fabs((double)h0[i]));
            }
            s.algo = M40K_CONV_AUTO;
            bool wauto_on = m40k_conv2d_nhwc_algo(&s, sms) == M40K_CONV_WINOGRAD;
            double gf = 2.0 * nx * L[1] * 9 / 1e9;
            char name[32];
            snprintf(name, sizeof name, "%dx%d %d>%d 3x3/1", L[0], L[0], L[1], L[1]);
            printf("%-22s %5d %9.0f GF %9.0f GF %7.2fx %6s %10.2e\n", name, N, gf / ms[0] * 1e3,
                   gf / ms[1] * 1e3, ms[0] / ms[1], wauto_on ? "wino" : "impl", dmax / ymax);
            CK(cudaFree(x)); CK(cudaFree(w)); CK(cudaFree(b)); CK(cudaFree(ws));
            CK(cudaFree(y[0])); CK(cudaFree(y[1]));
        }
    return 0;
}
