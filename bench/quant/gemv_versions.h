/* The quantized GEMV's versions, numbered as in bench/NOTES.md
** (bench/quant/gemv_versions.cu), for the bench and the version check. */
#ifndef M40_BENCH_QUANT_GEMV_VERSIONS_H
#define M40_BENCH_QUANT_GEMV_VERSIONS_H

#include "../../kernels/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* version 0 = what the library runs (m40k_quant_gemv_choose); else one of
** M40B_QGEMV_VERSIONS with rows_per_warp 1, 2 or 4 (0 = 2 at batch 1-2,
** else 4) and blocks_per_sm (v3: 0 = as many as fit). Versions 7 and 9 need
** a->ws of m40k_quant_gemv_workspace bytes (without it they run 2). */
int m40b_quant_gemv_version(void *stream, const m40k_qlinear_args *a, int sm_count, int version,
                            int rows_per_warp, int blocks_per_sm);

/* The numbered versions and their one-line notes. */
#define M40B_QGEMV_NVERSIONS 6
extern const int m40b_qgemv_versions[M40B_QGEMV_NVERSIONS];
extern const char *const m40b_qgemv_notes[M40B_QGEMV_NVERSIONS];

#ifdef __cplusplus
}
#endif
#endif
