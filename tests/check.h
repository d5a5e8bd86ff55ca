/* Test helpers: the one comparison used by every GPU-vs-reference check,
** plus small utilities. */
#ifndef M40_TESTS_CHECK_H
#define M40_TESTS_CHECK_H

#include "m40/graph.h"
#include "m40/m40.h"

#include <stdint.h>
#include <stdio.h>

#define M40T_SKIP 77

typedef struct m40t_tol {
    double atol, rtol; /* per element: |got - ref| <= atol + rtol*|ref| */
    double nmse;       /* sum (got-ref)^2 / sum ref^2 must be <= nmse */
} m40t_tol;

/* Compares n floats. Prints "ok"/"FAIL" with max abs and rel error and NMSE,
** and the first few mismatches. NaN or Inf in `got` where ref is finite
** fails. Returns 1 on pass, 0 on failure. */
int m40t_compare(const char *name, const float *got, const float *ref, int64_t n,
                 m40t_tol tol);

/* Running totals for a test program. */
extern int m40t_failures, m40t_checks;

/* CHECK(cond): records a failure with file:line, keeps going. */
#define CHECK(cond)                                                              \
    do {                                                                         \
        m40t_checks++;                                                           \
        if (!(cond)) {                                                           \
            m40t_failures++;                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

/* CHECK_ST(call, want): the call returns `want` status. */
#define CHECK_ST(call, want)                                                     \
    do {                                                                         \
        m40_status got_ = (call);                                                \
        m40t_checks++;                                                           \
        if (got_ != (want)) {                                                    \
            m40t_failures++;                                                     \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__,      \
                    __LINE__, #call, m40_status_str(got_), m40_status_str(want));  \
        }                                                                        \
    } while (0)

/* Prints the summary line and returns the exit code (0 or 1). */
int m40t_finish(const char *prog);

/* A GPU context on device 0, or NULL after printing why (then exit 77). */
m40_ctx *m40t_gpu_ctx_or_skip(const char *prog);

/* The side a test runs on: "--gpu" as argv[1] asks for GPU 0 (*gpu = 1).
** Returns 0 to go on, or M40T_SKIP (after saying why) when a GPU was asked
** for and there is none. */
int m40t_side(int argc, char **argv, int *gpu);

/* Another context on the side a test runs on: GPU 0 (gpu) or the CPU; NULL
** when it cannot be made. For tests that need several (ranks, stages). */
m40_ctx *m40t_ctx(int gpu);

/* max |got - ref| / max |ref| over n floats (max |got - ref| when ref is all
** zeros); INFINITY when got holds a NaN or Inf. */
double m40t_rel_err(const float *got, const float *ref, int64_t n);

/* The index of the largest of n floats (the first of equals): a greedy id. */
int m40t_argmax(const float *x, int n);

/* Fills with a NaN bit pattern so unwritten outputs are caught. */
void m40t_poison(float *p, int64_t n);

/* A contiguous F32 tensor of nd (1-4) dims a, b, c, d on ctx's side; exits
** the test program if it cannot be made (nothing else could be checked). */
m40_tensor *m40t_f32(m40_ctx *ctx, int nd, int64_t a, int64_t b, int64_t c, int64_t d);

/* The six tensors of a conv case on ctx, in the layout's shapes:
** t[0] x, t[1] w, t[2] scale [K], t[3] bias [K], t[4] residual, t[5] y. */
void m40t_conv_tensors(m40_ctx *ctx, int nhwc, int N, int C, int H, int W, int K, int R, int S,
                       int P, int Q, m40_tensor *t[6]);

/* A conv descriptor: same stride, padding and dilation on both axes. */
m40_conv2d_desc m40t_conv_desc(m40_layout layout, int stride, int pad, int dilation, int relu);

/* An allocated graph on c: y [M,N] = softmax(relu(x [M,K] · w [N,K]ᵀ)), x an
** input, w (N·K floats) a weight. On failure *out is NULL and c holds the
** message. */
m40_status m40t_mlp_graph(m40_ctx *c, int64_t M, int64_t N, int64_t K, const float *w,
                          m40_graph **out, int *x_id, int *y_id);


/* m40_pool2d with the fields as arguments (tests call it with many shapes). */
static inline m40_status m40t_pool2d(m40_ctx *c, m40_pool kind, int kh, int kw, int sh, int sw,
                                     int ph, int pw, const m40_tensor *x, m40_tensor *y,
                                     m40_layout layout) {
    m40_pool2d_desc d;
    m40_pool2d_desc_init(&d);
    d.kind = kind;
    d.kernel_h = kh, d.kernel_w = kw;
    d.stride_h = sh, d.stride_w = sw;
    d.pad_h = ph, d.pad_w = pw;
    d.layout = layout;
    return m40_pool2d(c, &d, x, y);
}

#endif
