/* IEEE binary16 <-> binary32 conversion in portable C, used by the CPU
** reference. The GPU uses the hardware conversion (sm_52 has F2F even
** though it has no half arithmetic); the tests check both agree bit for
** bit, which is why this must round to nearest even exactly. */
#ifndef M40_HALF_H
#define M40_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t m40__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float m40__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline uint16_t m40__f32_to_f16(float f) {
    uint32_t x = m40__f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) /* NaN: keep it quiet and non-zero */
        return (uint16_t)(sign | 0x7E00u | ((absx >> 13) & 0x3FFu));
    if (absx >= 0x477FF000u) /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7C00u);
    if (absx < 0x38800000u) { /* below 2^-14: subnormal half or zero */
        if (absx < 0x33000000u) return sign; /* < 2^-25 rounds to 0 */
        uint32_t e = absx >> 23;             /* 102..112 */
        uint32_t m = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - e;           /* 14..24 */
        uint32_t h = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    /* normal: rebias exponent, round the 13 dropped mantissa bits */
    uint32_t h = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

static inline float m40__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return m40__bits_f32(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return m40__bits_f32(sign);
        /* subnormal: m * 2^-24, exact in float */
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return m40__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

#endif /* M40_HALF_H */
