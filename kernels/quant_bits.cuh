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

/* Group scale i, its dtype a kernel's GROUPED template argument: 1 f32,
** 2 f16, 3 either (f16 given at run time, as load_scale); 0 is row scales,
** which load once a row through load_scale. load_scale takes the dtype at run
** time, so in a GEMV's inner loop the compiler issues both loads, predicated,
** each with its own address: one memory instruction and ~4 others a row and
** vector that do nothing (docs/quant.md). With GS 2 the value comes back as
** raw bits in a float register and gscale_value converts it where it is
** used: an f16 conversion next to the load would wait there for a load
** issued chunks ahead of its use. GS 3 serves v3's int8, whose R 4, D 4
** instances sit at 236-255 registers and spilled with either fixed dtype
** (kernels/quant_gemv_v3.cuh, launch_v3_g). */
template <int GS> __device__ __forceinline__ float load_gscale(const void *s, int64_t i, bool f16 = false) {
    if constexpr (GS == 2) return __int_as_float((int)__ldg((const unsigned short *)s + i));
    else if constexpr (GS == 3) return load_scale(s, i, f16);
    else return __ldg((const float *)s + i);
}
template <int GS> __device__ __forceinline__ float gscale_value(float raw) {
    if constexpr (GS == 2) return __half2float(__ushort_as_half((unsigned short)__float_as_int(raw)));
    else return raw;
}

} // namespace

#endif
