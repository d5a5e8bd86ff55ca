/* Checked integer arithmetic for sizes computed from outside input.
**
** Every helper returns true when the exact result does not fit (the caller
** then reports M40_ERR_INVALID_ARG); *r is written either way, so it must
** not be used after an overflow. GCC and Clang lower these to one
** instruction plus a flag test; other compilers get portable checks.
**
** M40_MAX_BYTES caps any single tensor, region or plan: 2^62 bytes is far
** beyond any memory that exists, and with every size below it the sum of
** two sizes, or a size plus an alignment, cannot wrap a uint64_t/int64_t. */
#ifndef M40_CHECKED_H
#define M40_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define M40_MAX_BYTES ((uint64_t)1 << 62)

#if defined(__GNUC__) || defined(__clang__)
static inline bool m40__mul_i64(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool m40__add_i64(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool m40__mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool m40__add_u64(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool m40__mul_size(size_t a, size_t b, size_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool m40__add_size(size_t a, size_t b, size_t *r) { return __builtin_add_overflow(a, b, r); }
#else
static inline bool m40__mul_i64(int64_t a, int64_t b, int64_t *r) {
    bool ovf;
    if (a == 0 || b == 0) ovf = false;
    else if (a > 0) ovf = b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;
    else ovf = b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b;
    *r = ovf ? 0 : a * b;
    return ovf;
}
static inline bool m40__add_i64(int64_t a, int64_t b, int64_t *r) {
    bool ovf = b > 0 ? a > INT64_MAX - b : a < INT64_MIN - b;
    *r = ovf ? 0 : a + b;
    return ovf;
}
static inline bool m40__mul_u64(uint64_t a, uint64_t b, uint64_t *r) {
    *r = a * b;
    return a != 0 && *r / a != b;
}
static inline bool m40__add_u64(uint64_t a, uint64_t b, uint64_t *r) {
    *r = a + b;
    return *r < a;
}
static inline bool m40__mul_size(size_t a, size_t b, size_t *r) {
    *r = a * b;
    return a != 0 && *r / a != b;
}
static inline bool m40__add_size(size_t a, size_t b, size_t *r) {
    *r = a + b;
    return *r < a;
}
#endif

/* a * b into *r for a, b >= 0: 0 on success, -1 (and *r untouched) when an
** operand is negative or the product exceeds `lim`. */
static inline int m40__mul_ok(int64_t a, int64_t b, int64_t lim, int64_t *r) {
    int64_t p;
    if (a < 0 || b < 0 || m40__mul_i64(a, b, &p) || p > lim) return -1;
    *r = p;
    return 0;
}

/* a + b, or UINT64_MAX when that wraps: for totals that are only compared. */
static inline uint64_t m40__sat_add_u64(uint64_t a, uint64_t b) {
    uint64_t r;
    return m40__add_u64(a, b, &r) ? UINT64_MAX : r;
}
static inline uint64_t m40__sat_mul_u64(uint64_t a, uint64_t b) {
    uint64_t r;
    return m40__mul_u64(a, b, &r) ? UINT64_MAX : r;
}

/* usable - total as a signed headroom (m40_plan_info.headroom_bytes): exact,
** or clamped to INT64_MAX / -INT64_MAX when the difference does not fit, so
** a huge budget never reads as a negative headroom. */
static inline int64_t m40__headroom(uint64_t usable, uint64_t total) {
    uint64_t d = usable >= total ? usable - total : total - usable;
    int64_t m = d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
    return usable >= total ? m : -m;
}

#endif /* M40_CHECKED_H */
