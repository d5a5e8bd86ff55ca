/* Medians and quartiles of timing samples. */
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double m40__quantile_sorted(const double *s, int n, double p) {
    if (n <= 0) return 0;
    if (p <= 0) return s[0];
    if (p >= 1) return s[n - 1];
    double h = (n - 1) * p;
    int i = (int)h;
    if (i + 1 >= n) return s[n - 1];
    return s[i] + (h - i) * (s[i + 1] - s[i]);
}

m40_status m40__stats_compute(const double *x, int n, m40__stats *out) {
    if (!out || n < 0 || (!x && n > 0)) return M40_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (n == 0) return M40_OK;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return M40_ERR_OOM_HOST;
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = sum / n;
    out->median = m40__quantile_sorted(s, n, 0.5);
    out->q1 = m40__quantile_sorted(s, n, 0.25);
    out->q3 = m40__quantile_sorted(s, n, 0.75);
    out->iqr = out->q3 - out->q1;
    free(s);
    return M40_OK;
}
