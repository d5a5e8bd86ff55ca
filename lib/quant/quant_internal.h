/* Shared by the C files of lib/quant. Not installed. */
#ifndef M40_QUANT_INTERNAL_H
#define M40_QUANT_INTERNAL_H

#include "internal.h"
#include "m40/quant.h"

/* Checks a format; records a message on ctx (if not NULL) and returns
** M40_ERR_INVALID_ARG / M40_ERR_DTYPE / M40_ERR_UNSUPPORTED, or M40_OK. */
m40_status m40__quant_check_format(m40_ctx *ctx, const char *fn, const m40_quant_format *f);

/* Checks that qw's tensors exist, are contiguous, and have the dtypes and
** shapes of m40_quant_descs(qw->fmt, qw->n, qw->k). Location is not checked. */
m40_status m40__quant_check_qweight(m40_ctx *ctx, const char *fn, const m40_qweight *qw);

/* Scales per row: 1 (per row) or ceil(k / group). */
int64_t m40__quant_groups(const m40_quant_format *f, int64_t k);

/* Dequantizes row n of W into out[k] (F32), as the header defines it:
** w = (float)q * (float)scale. data/scale are the tensors' first elements. */
void m40__quant_dequant_row(const m40_quant_format *f, int64_t k, const void *data,
                            const void *scale, int64_t n, float *out);

#endif
