/* The weight-only formats' device helpers (include/m40/quant.h), shared by
** the GEMV (quant_gemv_common.cuh), the quantized GEMM (quant_gemm.cu) and
** the SGEMM's quantized-B tile loads (sgemm.cu). Device code only, in an
** anonymous namespace: each including .cu gets its own copy. */
#ifndef M40_KERNELS_QUANT_BITS_CUH
#define M40_KERNELS_QUANT_BITS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

namespace {

/* Byte `sel` of u (0..255) as the float 2^23 + u, minus `off`: exact. With
** the sign bit flipped first (x ^ 0x80, or ^ 0x8 a nibble), off = 2^23 + 128
** (int8) or 2^23 + 8 (int4) gives the signed value: one PRMT and one FADD. */
__device__ __forceinline__ float byte_to_f(uint32_t u, int sel, float off) {
    return __int_as_float((int)__byte_perm(u, 0x4B000000u, 0x7440 | sel)) - off;
}
constexpr float kOffQ4 = 8388616.0f; /* 2^23 + 8   */
constexpr float kOffQ8 = 8388736.0f; /* 2^23 + 128 */

/* Scale i of an f16 or f32 scale array. */
__device__ __forceinline__ float load_scale(const void *s, int64_t i, bool f16) {
    return f16 ? __half2float(__ldg((const __half *)s + i)) : __ldg((const float *)s + i);
}

} // namespace

#endif
