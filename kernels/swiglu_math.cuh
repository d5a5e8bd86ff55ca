/* SwiGLU's one output, silu(g) · u with silu(g) = g / (1 + expf(-g))
** (full-precision expf): the SWIGLU kernel (kernels/swiglu.cu) and the
** quantized GEMV's fused store (kernels/quant_gemv_common.cuh) give the
** same bits. */
#ifndef M40_KERNELS_SWIGLU_MATH_CUH
#define M40_KERNELS_SWIGLU_MATH_CUH

__device__ __forceinline__ float swiglu1(float g, float u) { return g / (1.0f + expf(-g)) * u; }

#endif
