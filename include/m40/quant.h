/*
** libm40 — weight-only quantized linear layers (int8, int4, fp16 weights).
**
** On sm_52 there is no dp4a, no half arithmetic and no tensor cores, so
** "int8/int4" means: weights stored small, dequantized in registers, every
** multiply-add in FP32. Activations and outputs stay F32.
**
** Formats (W is a PyTorch Linear weight [N, K] = [out, in])
** --------------------------------------------------------
** M40_DTYPE_Q8   q[n][k] int8 in [-127, 127], one byte each.
**                data: I8 tensor [N, K], row-major, row stride K bytes.
** M40_DTYPE_Q4   q[n][k] int4 in [-7, 7], two's complement, two per byte:
**                byte j of row n = (q[n][2j] << 4) | (q[n][2j+1] & 0xF)
**                (high nibble = even column), the official ChatGLM2 layout.
**                data: I8 tensor [N, (K+1)/2]; for odd K the last byte's
**                low nibble is 0.
** M40_DTYPE_F16  W stored as IEEE half, no scales ("store fp16, compute
**                fp32"). data: F16 tensor [N, K].
**
** Scales (Q8, Q4), dtype F16 or F32:
**   group == 0          one scale per output row: scale tensor [N]
**                       (the official ChatGLM2 layout, with F16 scales);
**   group == 32/64/128  one scale per row and per group of `group`
**                       consecutive columns: scale tensor [N, ceil(K/group)];
**                       the last group of a row may be partial.
** Dequantized weight: w[n][k] = (float)q[n][k] * (float)scale[n][g(k)],
** with g(k) = 0 (per row) or k / group.
**
** Quantizer (m40_quantize), per row or per group, in FP32:
**   amax  = max |w| over the row/group
**   scale = round_to_scale_dtype(amax / qmax)   qmax = 127 (Q8), 7 (Q4);
**                                               F16: round to nearest even
**   q     = clamp(rne(w / scale), -qmax, qmax)   (0 where scale == 0)
** where w / scale divides the FP32 weight by the FP32 value of the *stored*
** scale (so dequantization is consistent with what was stored) and rne is
** round half to even. This is the official ChatGLM2 recipe
** (scale = max|W|/(2^(b-1)-1), fp16; q = round(W/scale)) with two changes:
** the division is done in FP32 instead of fp16, and the result is clamped
** (the official cast to int8 would wrap a 128 produced by fp16 scale
** rounding to -128).
**
** The op (m40_quant_linear): y[M, N] = x[M, K] · Wᵀ + bias, x/y/bias F32.
** GPU: the weights are dequantized as they are read; the dequantized
** matrix is never materialized in device memory (no workspace for it).
** For few rows (M <= 8) each weight is read once for all rows.
** CPU: the reference — each row of W dequantized to F32 as above, then a
** double-precision dot product with each x row.
*/
#ifndef M40_QUANT_H
#define M40_QUANT_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40_quant_format {
    m40_dtype wtype;       /* M40_DTYPE_Q8, M40_DTYPE_Q4 or M40_DTYPE_F16 */
    int group;             /* 0 = per output row; 32, 64 or 128 = per K-group
                           ** (ignored for F16) */
    m40_dtype scale_dtype; /* M40_DTYPE_F16 or M40_DTYPE_F32 (ignored for F16) */
} m40_quant_format;

/* A quantized weight W [n, k]: the format plus the two tensors that hold it.
** Both tensors are contiguous and live on the side of the context that uses
** them (device for a GPU context). The struct does not own them. */
typedef struct m40_qweight {
    m40_quant_format fmt;
    int64_t n, k;
    const m40_tensor *data;  /* see the formats above */
    const m40_tensor *scale; /* [n] or [n, ceil(k/group)]; NULL for F16 */
} m40_qweight;

/* Name of a format, e.g. "q4/g64/f16", "q8/row/f32", "f16". Static string;
** "?" for an invalid format. */
M40_API const char *m40_quant_format_name(const m40_quant_format *f);

/* Descriptors of the data and scale tensors for a format and W [n, k]
** (scale_desc gets ndim 0 and dtype F16 for F16 weights; either out-param
** may be NULL).
** Returns M40_OK, M40_ERR_INVALID_ARG (f NULL, n or k negative, or n*k F32
** values or either tensor over M40_MAX_TENSOR_BYTES),
** M40_ERR_DTYPE (wtype or scale_dtype not listed above),
** M40_ERR_UNSUPPORTED (group not 0/32/64/128). */
M40_API m40_status m40_quant_descs(const m40_quant_format *f, int64_t n, int64_t k,
                                   m40_tensor_desc *data_desc,
                                   m40_tensor_desc *scale_desc);

/* Bytes of weights plus scales for a format and shape (0 if invalid or too
** large: the rule of m40_quant_descs). */
M40_API size_t m40_quant_nbytes(const m40_quant_format *f, int64_t n, int64_t k);

/* Quantizes w (F32 or F16 [n, k], contiguous, host memory) into `data` and
** `scale` (host tensors with exactly the descs of m40_quant_descs; scale
** NULL for F16). The context only receives the error message; it may be a
** CPU or a GPU context. For F16 weights from F32 this is the F32 -> F16
** conversion (round to nearest even).
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   NULL ctx/f/w/data, scale NULL for Q8/Q4, or a
**                         non-finite weight (row and column in the message)
**   M40_ERR_LOCATION      a tensor in device memory
**   M40_ERR_DTYPE         w not F32/F16, data or scale of the wrong dtype,
**                         bad format dtypes
**   M40_ERR_SHAPE         w not 2-D, data/scale shapes not those of
**                         m40_quant_descs
**   M40_ERR_UNSUPPORTED   bad group; non-contiguous tensors; an F16 scale
**                         that would overflow (|w| > 65504*qmax: use F32
**                         scales) */
M40_API m40_status m40_quantize(m40_ctx *ctx, const m40_quant_format *f,
                                const m40_tensor *w, m40_tensor *data,
                                m40_tensor *scale);

/* The inverse: out (F32 [n, k], host, contiguous) = the dequantized W, as
** defined above. qw's tensors must be host tensors.
** Returns the statuses of m40_quantize (LOCATION for device tensors). */
M40_API m40_status m40_dequantize(m40_ctx *ctx, const m40_qweight *qw, m40_tensor *out);

/* y = x · Wᵀ + bias with W quantized.
**   x    [..., K]  F32, contiguous (leading dims flattened to M rows)
**   w    W [N, K]  as above, on the context's side
**   bias [N]       F32, or NULL
**   y    [..., N]  F32, contiguous, same leading dims as x
** GPU: any M, N, K; the fast paths need 16-byte aligned tensors and K a
** multiple of 32 (Q4), 16 (Q8) or 8 (F16) (GEMV) or of 8 (GEMM); other
** shapes take a slower generic path (same results). At M <= 8 with large N
** or K the GPU path splits K and keeps the partial sums in the context's
** device workspace (at most nsplit*M*N floats, 8.3 MB for 65024 rows at M =
** 8), grown on first need with one stream synchronize; if it cannot grow,
** a kernel without split-K runs instead. Those M <= 8 results are
** deterministic (the partial sums are added in a fixed order).
** Returns the op statuses of m40.h: M40_ERR_INVALID_ARG (NULL ctx, x, w,
** w->data, y, or w->scale for Q8/Q4), M40_ERR_SHAPE (x, W, bias, y do not
** fit), M40_ERR_DTYPE (x/y/bias not F32, data/scale dtypes not those of the
** format), M40_ERR_LOCATION, M40_ERR_UNSUPPORTED (bad group, non-contiguous
** tensors, dims >= 2^31 on the GPU), M40_ERR_OOM_HOST (CPU path),
** M40_ERR_CUDA, M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_quant_linear(m40_ctx *ctx, const m40_tensor *x,
                                    const m40_qweight *w, const m40_tensor *bias,
                                    m40_tensor *y);

#ifdef __cplusplus
}
#endif
#endif /* M40_QUANT_H */
