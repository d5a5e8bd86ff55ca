/* The comparison helper must be able to fail: mismatches, NaN, Inf and an
** NMSE over its bound are each caught. */
#include "check.h"

#include <math.h>

int main(void) {
    float ref[4] = {1, 2, 3, 4}, same[4] = {1, 2, 3, 4};
    float off[4] = {1, 2, 3.01f, 4}, nan_[4] = {1, NAN, 3, 4}, inf_[4] = {1, 2, INFINITY, 4};
    m40t_tol tight = {1e-6, 1e-6, 1e-12};
    int r[6];
    r[0] = m40t_compare("identical", same, ref, 4, tight);
    r[1] = m40t_compare("one element off (expected FAIL)", off, ref, 4, tight);
    r[2] = m40t_compare("NaN (expected FAIL)", nan_, ref, 4, (m40t_tol){1e9, 1e9, 1e9});
    r[3] = m40t_compare("Inf (expected FAIL)", inf_, ref, 4, (m40t_tol){1e9, 1e9, 1e9});
    r[4] = m40t_compare("nmse over bound (expected FAIL)", off, ref, 4, (m40t_tol){1, 1, 1e-9});
    float poisoned[4];
    m40t_poison(poisoned, 4);
    r[5] = m40t_compare("poisoned (expected FAIL)", poisoned, ref, 4, (m40t_tol){1e9, 1e9, 1e9});
    /* the helper counted 5 failures on purpose; judge by the returns */
    m40t_failures = 0;
    m40t_checks = 0;
    CHECK(r[0] == 1);
    for (int i = 1; i < 6; i++) CHECK(r[i] == 0);
    return m40t_finish("test_check");
}
