/* The doctor's system layer: every fact the checks read comes through this
** table, so tests can replay a machine (no driver, an R590 driver, ECC
** errors, a throttling card, an M40 with half its memory hidden) on a CPU.
** lib/doctor/sys.c fills it from the real machine. Internal; not installed. */
#ifndef M40_DOCTOR_INTERNAL_H
#define M40_DOCTOR_INTERNAL_H

#include "m40/doctor.h"
#include "../measure/nvml.h"

#include <stddef.h>

/* cudaError_t values the checks interpret (numbers are stable in the ABI). */
#define M40__CUDA_SUCCESS 0
#define M40__CUDA_ERR_INSUFFICIENT_DRIVER 35
#define M40__CUDA_ERR_INVALID_DEVICE_FUNCTION 98
#define M40__CUDA_ERR_NO_DEVICE 100
#define M40__CUDA_ERR_NO_KERNEL_IMAGE 209

typedef struct m40__doc_cuda_dev {
    char name[256];
    int cc_major, cc_minor, sm_count;
    unsigned long long total_bytes, free_bytes;
    unsigned char uuid[16];
    int has_uuid;
} m40__doc_cuda_dev;

/* Results of the functional check on one GPU. Negative figures = not run. */
typedef struct m40__doc_func {
    int kernel_ok;           /* 1 matches the CPU reference, 0 not, -1 not run */
    double kernel_max_diff;
    long long kernel_n;
    double copy_gbs, copy_ms, copy_mib; /* device copy, read + write */
    int sgemm_ok;            /* small SGEMM vs CPU: 1, 0, -1 */
    double sgemm_max_rel;
    int sgemm_n;             /* timed SGEMM is n x n x n */
    double sgemm_gflops, sgemm_ms;
    char err[256];           /* the first failure, "" if none */
} m40__doc_func;

typedef struct m40__doc_sys {
    void *user;
    const char *build_info; /* m40_build_info() format */
    /* NVML; NULL when it could not be loaded, then nvml_why says why */
    const m40__nvml *nvml;
    const char *nvml_why;
    /* CUDA runtime: NULL entries when libm40 was built without CUDA.
    ** Each returns a cudaError_t as int. */
    int (*cuda_versions)(void *user, int *driver, int *runtime);
    int (*cuda_count)(void *user, int *n);
    int (*cuda_props)(void *user, int dev, m40__doc_cuda_dev *p);
    /* cudaFuncGetAttributes on a library kernel: binary/ptx versions */
    int (*cuda_probe)(void *user, int dev, int *binary_version, int *ptx_version);
    const char *(*cuda_errstr)(void *user, int err);
    /* cuBLAS version of the loaded library: 0 if read */
    int (*cublas_version)(void *user, int *major, int *minor, int *patch);
    /* cuDNN via dlopen: 0 if found (where = soname), else where = why */
    int (*cudnn_version)(void *user, size_t *version, char *where, size_t n);
    /* quick functional check on a CUDA ordinal: 0 if it ran (read out) */
    int (*functional)(void *user, int dev, m40__doc_func *out);
} m40__doc_sys;

/* Runs the checks against `sys`. Same contract as m40_doctor_run. */
m40_status m40__doctor_run_sys(const m40__doc_sys *sys, const m40_doctor_options *opt,
                               m40_doctor_report **out);

/* The real machine (lib/doctor/sys.c). nvml must outlive the use of sys;
** m40__doc_sys_real_close releases what open loaded. */
void m40__doc_sys_real_open(m40__doc_sys *sys, m40__nvml *nvml, char *nvml_why, size_t n);
void m40__doc_sys_real_close(m40__doc_sys *sys, m40__nvml *nvml);

/* ---- pure helpers (unit-tested) ------------------------------------------ */
/* Driver branch from "580.159.04" -> 580; -1 if unparsable. */
int m40__doc_driver_major(const char *version);

/* Whether a build with CMake architectures `archs` ("52", "52-real,90",
** "90-virtual", "none") has code for a device of compute capability
** major.minor: M40__CODE_SASS (machine code that runs as is),
** M40__CODE_PTX (PTX the driver JIT-compiles at first use) or
** M40__CODE_NONE ("no kernel image is available"). `why` explains. */
enum { M40__CODE_NONE = 0, M40__CODE_SASS = 1, M40__CODE_PTX = 2 };
int m40__doc_code_for(const char *archs, int cc_major, int cc_minor, char *why, size_t n);

/* 1 if `archs` holds any sm_5x code (SASS or PTX). */
int m40__doc_archs_have_maxwell(const char *archs);

/* cudnnGetVersion() -> major/minor (9.x: 91000 = 9.10.0; 8.x: 8902 = 8.9.2). */
void m40__doc_cudnn_split(size_t v, int *major, int *minor, int *patch);

/* ---- the report (report.c) ---------------------------------------------- */

struct m40_doctor_report {
    m40_doctor_item *items;
    int n, cap;
    int oom;
    m40_doctor_item scratch; /* written to after an allocation failure */
    char build[192];
};

#if defined(__GNUC__)
#define M40__FMT(a, b) __attribute__((format(printf, a, b)))
#else
#define M40__FMT(a, b)
#endif

/* Appends an item (value printf-style) and returns it for m40__doc_why /
** m40__doc_fix; after an allocation failure, a scratch item that is not kept. */
m40_doctor_item *m40__doc_add(m40_doctor_report *r, m40_doctor_level level, int gpu,
                              const char *check, const char *fmt, ...) M40__FMT(5, 6);
void m40__doc_why(m40_doctor_item *it, const char *fmt, ...) M40__FMT(2, 3);
void m40__doc_fix(m40_doctor_item *it, const char *fmt, ...) M40__FMT(2, 3);

#endif
