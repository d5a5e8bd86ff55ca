/* The CPU reference: plain C, one file per op family, double accumulators
** where a sum is involved, no intrinsics. It is the test oracle, a readable
** statement of what each op computes, and the CPU execution path.
** Shapes and strides arrive already checked by the op files (lib/ops/).
** Plain C only: no kernel headers (the op codes below are the reference's
** own; lib/ops/elementwise.c checks that the launchers use the same). */
#ifndef M40_REF_H
#define M40_REF_H

#include "m40/m40.h"

void m40__ref_fill_random(const m40_tensor_desc *d, void *data, uint64_t seed,
                         m40_random_dist dist, float a, float b);
/* Unary elementwise ops: out = f(x). */
enum m40__unary_op {
    M40__UNARY_SCALE = 0, /* alpha * x */
    M40__UNARY_RELU = 1,
    M40__UNARY_SILU = 2,
    M40__UNARY_GELU = 3   /* x·Phi(x), erf form */
};
/* Binary elementwise ops: out = a (op) b. */
enum m40__binary_op { M40__BINARY_ADD = 0, M40__BINARY_MUL = 1 };

/* op: enum m40__unary_op */
void m40__ref_unary(int op, float alpha, const m40_tensor_desc *dx, const float *x,
                   const m40_tensor_desc *dout, float *out);
/* op: enum m40__binary_op; db may have zero strides (broadcast). */
void m40__ref_binary(int op, const m40_tensor_desc *da, const float *a,
                    const m40_tensor_desc *db, const float *b,
                    const m40_tensor_desc *dout, float *out);
void m40__ref_convert(const m40_tensor_desc *ds, const void *src,
                     const m40_tensor_desc *dd, void *dst);
void m40__ref_softmax(const m40_tensor_desc *dx, const float *x,
                     const m40_tensor_desc *dy, float *y);
/* y[M,N] = x[M,K] · w[N,K]ᵀ + bias[N] (bias may be NULL); row-major. */
void m40__ref_linear(int64_t M, int64_t N, int64_t K, const float *x,
                    const float *w, const float *bias, float *y);

/* Convolution with the fused epilogue of m40_conv2d, in d->layout: x
** [N,C,H,W] or [N,H,W,C], w [K,C,R,S] or [K,R,S,C], y and residual
** [N,K,P,Q] or [N,P,Q,K], all contiguous. scale/bias/residual may be NULL. */
void m40__ref_conv2d(const m40_conv2d_desc *d, int64_t N, int64_t C, int64_t H, int64_t W,
                    int64_t K, int64_t R, int64_t S, int64_t P, int64_t Q,
                    const float *x, const float *w, const float *scale,
                    const float *bias, const float *residual, float *y);
void m40__ref_pool2d(m40_pool kind, int kh, int kw, int sh, int sw, int ph, int pw,
                    m40_layout layout, int64_t N, int64_t C, int64_t H, int64_t W, int64_t P,
                    int64_t Q, const float *x, float *y);
void m40__ref_global_avgpool(m40_layout layout, int64_t N, int64_t C, int64_t HW,
                            const float *x, float *y);

/* y[M,N] = x[M,K] · Wᵀ + bias with W quantized (include/m40/quant.h):
** each row of W dequantized to F32, double-precision dot products.
** data/scale: the qweight's tensors' first elements (scale NULL for F16).
** Returns 0, or -1 when the row buffer cannot be allocated. */
struct m40_quant_format;
int m40__ref_quant_linear(const struct m40_quant_format *f, int64_t M, int64_t N, int64_t K,
                          const float *x, const void *data, const void *scale,
                          const float *bias, float *y);

/* ---- attention (issue 16): the KV cache and causal GQA ------------------
** Caches [S, L, G, D] contiguous, F16 (cache_f16) or F32; pos I32 [B, T]
** (-1: padding), slot I32 [B] or NULL (slot b); indices already checked. */
/* cache[slot[b], pos[b,t], :] = kv[b, t, :GD] (kv rows at b·kvs0 + t·kvs1). */
void m40__ref_kv_append(int64_t B, int64_t T, int64_t GD, const float *kv, int64_t kvs0,
                        int64_t kvs1, const int32_t *pos, const int32_t *slot, int64_t L,
                        int cache_f16, void *cache);
/* y [B, T, H·D] contiguous = softmax over j <= pos[b,t] of q·K[j]·scale,
** times V (zero rows where pos is -1); q rows at b·qs0 + t·qs1. scratch:
** L + D doubles. */
void m40__ref_attention(int64_t B, int64_t T, int64_t H, int64_t G, int64_t D, int64_t L,
                        float scale, const float *q, int64_t qs0, int64_t qs1, int cache_f16,
                        const void *k_cache, const void *v_cache, const int32_t *pos,
                        const int32_t *slot, float *y, double *scratch);
/* ---- end attention ---- */

/* ---- sample (issue 16) --------------------------------------------------- */
/* lib/ref/sample.c: m40_sample over logits [B,V], history [B,W]
** (NULL, or ids in -1..V-1: the op checks) and pos [B] (NULL: 0); out
** [B,2]. Returns 0, or -1 when the row buffers cannot be allocated. */
struct m40_sampler_desc;
int m40__ref_sample(const struct m40_sampler_desc *d, int64_t B, int64_t V, const float *logits,
                    const int32_t *history, int64_t W, const int32_t *pos, float *out);

/* ---- issue 16: the small transformer ops (lib/ref/transformer.c) ---------- */
struct m40_rope_desc; /* m40/transformer.h */
/* Rows of x [..., C] as (rows, row stride): the leading dims must collapse to
** one stride (each row's last dim contiguous is the caller's check).
** Returns 0, or -1 when they do not collapse. */
int m40__rows_of(const m40_tensor_desc *d, int64_t *rows, int64_t *row_stride);
/* RMSNorm of `rows` rows of C: mode 0: y = norm(x)·w; 1: x += r first; 2:
** x = r first (x written). w: F32 or F16 (w_f16) [C]. Strides in elements;
** y may be x (mode 0). Sums in double. */
void m40__ref_rmsnorm(int64_t rows, int64_t C, float eps, int mode, float *x, int64_t xs,
                      const float *r, int64_t rs, const void *w, int w_f16, float *y,
                      int64_t ys);
/* The FP32 angle of pair i at position pos, as PyTorch's float cache:
** e = float(2i / rope_dims), θ_i = 1 / float(theta^e) in float, angle =
** float(float(pos · pos_scale) · θ_i). kernels/rope.cu computes the same. */
float m40__rope_angle(const struct m40_rope_desc *d, int64_t pos, int i);
/* RoPE over rows of W (>= heads·head_dim) values: y = x rotated (y may be
** x); the values past heads·head_dim, and past rope_dims in each head, are
** copied. pos[r] >= 0 (the caller's check). cos/sin in double. */
void m40__ref_rope(const struct m40_rope_desc *d, int64_t rows, int64_t W, const float *x,
                   int64_t xs, const int32_t *pos, float *y, int64_t ys);
/* y[r, :F] = silu(x[r, :F]) · x[r, F:2F]; y contiguous rows of F. */
void m40__ref_swiglu(int64_t rows, int64_t F, const float *x, int64_t xs, float *y);
/* y[n, :] = table[ids[n], :] (F32 or F16 table [V, C]); ids checked by the
** caller. */
void m40__ref_embedding(int64_t n, const int32_t *ids, int64_t C, const void *table,
                        int table_f16, float *y);
/* ---- end of issue 16 ------------------------------------------------------- */

#endif
