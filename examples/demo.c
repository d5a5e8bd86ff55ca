/* m40-demo: the main job until the model examples land. Checks the GPU ops
** against the CPU reference on one small problem, then times a few ops and
** prints what they reach next to the Tesla M40's limits. Without a GPU it
** runs the CPU reference and says so. Timings use the host clock around a
** synchronize (median of repeats after a warm-up); m40-bench (issue 8) will
** do this properly with events and telemetry. */
#define _POSIX_C_SOURCE 199309L
#include <m40/m40.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define TRY(call)                                                                \
    do {                                                                         \
        m40_status st_ = (call);                                                 \
        if (st_ != M40_OK) {                                                     \
            fprintf(stderr, "m40-demo: %s: %s\n", #call, m40_errmsg(ctx));       \
            return 1;                                                            \
        }                                                                        \
    } while (0)

/* Median seconds of `reps` runs of matmul (op 0) or softmax (op 1). */
static int time_op(m40_ctx *ctx, int op, m40_tensor *x, m40_tensor *w, m40_tensor *y,
                   int reps, double *median) {
    double t[64];
    for (int r = -2; r < reps; r++) { /* two warm-ups */
        double t0 = now_s();
        TRY(op == 0 ? m40_matmul(ctx, x, w, NULL, y) : m40_softmax(ctx, x, y));
        TRY(m40_ctx_sync(ctx));
        if (r >= 0) t[r] = now_s() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    *median = t[reps / 2];
    return 0;
}

int main(int argc, char **argv) {
    int force_cpu = argc > 1 && strcmp(argv[1], "--cpu") == 0;
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    if (force_cpu) d.device = M40_DEVICE_CPU;
    m40_ctx *ctx, *cpu;
    if (m40_ctx_create(&d, &ctx) != M40_OK) {
        printf("NOTICE: no usable GPU (%s).\nNOTICE: running the CPU reference "
               "implementation instead; numbers below are CPU numbers.\n", m40_errmsg(ctx));
        m40_ctx_destroy(ctx);
        d.device = M40_DEVICE_CPU;
        if (m40_ctx_create(&d, &ctx) != M40_OK) return 1;
    }
    d.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&d, &cpu) != M40_OK) return 1;
    m40_device_info info;
    TRY(m40_ctx_get_info(ctx, &info));
    printf("libm40 %s (%s) on %s", m40_version(), m40_build_info(), info.name);
    if (info.is_gpu)
        printf(", cc %d.%d, %d SMs, %.1f GiB", info.cc_major, info.cc_minor, info.sm_count,
               (double)info.total_bytes / (1 << 30));
    printf("\n");

    /* 1. correctness: y = softmax(x·Wᵀ + b) here vs the CPU reference */
    int64_t xs[2] = {33, 515}, ws[2] = {129, 515}, ys[2] = {33, 129}, bs[1] = {129};
    m40_tensor *t[8];
    m40_ctx *cs[2] = {ctx, cpu};
    float *out[2];
    for (int s = 0; s < 2; s++) {
        m40_ctx *c = cs[s];
        m40_tensor **q = t + 4 * s;
        if (m40_tensor_new(c, M40_DTYPE_F32, 2, xs, &q[0]) || m40_tensor_new(c, M40_DTYPE_F32, 2, ws, &q[1]) ||
            m40_tensor_new(c, M40_DTYPE_F32, 1, bs, &q[2]) || m40_tensor_new(c, M40_DTYPE_F32, 2, ys, &q[3]) ||
            m40_fill_random(c, 1, M40_RANDOM_UNIFORM, -1, 1, q[0]) ||
            m40_fill_random(c, 2, M40_RANDOM_NORMAL, 0, 0.1f, q[1]) ||
            m40_fill_random(c, 3, M40_RANDOM_UNIFORM, -1, 1, q[2]) ||
            m40_matmul(c, q[0], q[1], q[2], q[3]) || m40_softmax(c, q[3], q[3])) {
            fprintf(stderr, "m40-demo: %s\n", m40_errmsg(c));
            return 1;
        }
        out[s] = malloc(33 * 129 * sizeof(float));
        if (m40_tensor_download(c, q[3], out[s], 33 * 129 * sizeof(float))) return 1;
    }
    double maxd = 0;
    for (int i = 0; i < 33 * 129; i++) maxd = fmax(maxd, fabs(out[0][i] - out[1][i]));
    printf("check: softmax(x·Wᵀ+b) [33,129], %s vs CPU reference: max |diff| %.2e %s\n",
           info.is_gpu ? "GPU" : "CPU", maxd, maxd < 1e-5 ? "(ok)" : "(MISMATCH)");
    for (int i = 0; i < 8; i++) m40_tensor_destroy(t[i]);
    free(out[0]);
    free(out[1]);
    if (maxd >= 1e-5) return 1;

    /* 2. timings */
    int64_t n = info.is_gpu ? 4096 : 256;
    int64_t sq[2] = {n, n};
    m40_tensor *a, *b, *c;
    TRY(m40_tensor_new(ctx, M40_DTYPE_F32, 2, sq, &a));
    TRY(m40_tensor_new(ctx, M40_DTYPE_F32, 2, sq, &b));
    TRY(m40_tensor_new(ctx, M40_DTYPE_F32, 2, sq, &c));
    TRY(m40_fill_random(ctx, 4, M40_RANDOM_UNIFORM, -1, 1, a));
    TRY(m40_fill_random(ctx, 5, M40_RANDOM_UNIFORM, -1, 1, b));
    double tm, ts;
    if (time_op(ctx, 0, a, b, c, info.is_gpu ? 20 : 3, &tm)) return 1;
    if (time_op(ctx, 1, a, NULL, c, info.is_gpu ? 20 : 3, &ts)) return 1;
    double gflops = 2.0 * n * n * n / tm / 1e9, gbs = 8.0 * n * n / ts / 1e9;
    printf("matmul %lldx%lldx%lld (%s): %.3f ms, %.1f GFLOP/s\n", (long long)n, (long long)n,
           (long long)n, info.is_gpu ? "libm40 SGEMM" : "CPU reference", tm * 1e3, gflops);
    printf("softmax [%lld,%lld]: %.3f ms, %.1f GB/s (read + write)\n", (long long)n, (long long)n,
           ts * 1e3, gbs);
    printf("M40 limits for scale: 6840 GFLOP/s FP32 peak, 288 GB/s; 4096^3 SGEMM >= 20.1 ms there.\n");
    m40_tensor_destroy(a);
    m40_tensor_destroy(b);
    m40_tensor_destroy(c);
    m40_ctx_destroy(cpu);
    m40_ctx_destroy(ctx);
    return 0;
}
