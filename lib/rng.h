/* Counter-based random numbers shared by the CPU reference and the CUDA
** kernels: element i of a fill depends only on (seed, i), so both sides
** produce the same sequence regardless of how the work is split.
** Header-only; compiled by the C compiler and by nvcc. */
#ifndef M40_RNG_H
#define M40_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define M40_HD __host__ __device__ __forceinline__
#else
#define M40_HD static inline
#endif

/* SplitMix64's finalizer: a bijective 64-bit mix with good avalanche. */
M40_HD uint64_t m40__mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* 64 random bits for (seed, i, lane); lane picks independent streams. */
M40_HD uint64_t m40__rand_bits(uint64_t seed, uint64_t i, uint64_t lane) {
    return m40__mix64(m40__mix64(seed ^ (lane * 0xD1B54A32D192ED03ull)) +
                      i * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [0, 1) with 24 bits: the integer and the power-of-two scale
** are both exact in float, so host and device agree bit for bit. */
M40_HD float m40__rand_u01(uint64_t seed, uint64_t i, uint64_t lane) {
    return (float)(m40__rand_bits(seed, i, lane) >> 40) * (1.0f / 16777216.0f);
}

#endif /* M40_RNG_H */
