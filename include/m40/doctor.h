/*
** libm40 doctor: checks the machine's NVIDIA stack against what a Tesla M40
** (Maxwell, sm_52) needs, and says what is wrong and how to fix it.
**
** The checks run inside the library so an application that embeds libm40
** can run them at start-up and log the result; the `m40-doctor` tool prints
** them. Nothing here prints, aborts or exits.
**
** Sources of facts, all optional at run time:
**   - NVML, loaded with dlopen("libnvidia-ml.so.1") (never linked): driver
**     version, per-GPU memory, ECC, PCIe, persistence, temperature, power,
**     clocks, throttle reasons;
**   - the CUDA runtime (when libm40 was built with CUDA): driver/runtime
**     versions, devices, whether this binary has code for each device;
**   - cuBLAS (linked) and cuDNN (dlopen of libcudnn.so.9 / .8) versions;
**   - a quick functional check on each GPU: a small kernel compared with the
**     CPU reference, device copy bandwidth, a small SGEMM.
** A missing driver, library or GPU becomes a FAIL or WARN item saying
** exactly what is missing; it is not an error of m40_doctor_run().
*/
#ifndef M40_DOCTOR_H
#define M40_DOCTOR_H

#include "m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum m40_doctor_level {
    M40_DOCTOR_INFO = 0, /* a fact, no verdict (GPU name, clocks) */
    M40_DOCTOR_OK = 1,
    M40_DOCTOR_SKIP = 2, /* the check could not run (said why) */
    M40_DOCTOR_WARN = 3, /* works, but slower or fragile; see fix */
    M40_DOCTOR_FAIL = 4  /* will not work on an M40 as it stands; see fix */
} m40_doctor_level;

/* "INFO", "OK", "SKIP", "WARN", "FAIL"; "?" for other values. */
M40_API const char *m40_doctor_level_str(m40_doctor_level level);

typedef struct m40_doctor_item {
    m40_doctor_level level;
    int gpu;            /* CUDA ordinal (or NVML index when CUDA cannot see
                        ** the GPU), -1 for machine-wide checks */
    char check[32];     /* stable id: "driver", "gpu.memory", "func.sgemm" */
    char value[192];    /* what was found: "580.159.04 (R580)" */
    char reason[320];   /* why this level */
    char fix[320];      /* what to do; "" when nothing */
} m40_doctor_item;

typedef struct m40_doctor_options {
    size_t struct_size; /* sizeof(m40_doctor_options) */
    int functional;     /* 1: run the functional checks on each GPU (about a
                        ** second per GPU; allocates ~0.6 GB) */
    int device;         /* only this CUDA ordinal (0..count-1); -1 = every
                        ** GPU; below -1 is M40_ERR_INVALID_ARG */
} m40_doctor_options;

/* Defaults: functional checks on, every GPU. */
M40_API void m40_doctor_options_init(m40_doctor_options *opt);

typedef struct m40_doctor_report m40_doctor_report;

/* Runs every check and returns the report in *out (free it with
** m40_doctor_report_destroy).
** Returns
**   M40_OK               the checks ran (read the items for the verdicts)
**   M40_ERR_INVALID_ARG  out NULL, opt->struct_size too small,
**                        opt->device below -1, or opt->device an ordinal
**                        the CUDA runtime does not list (when it lists at
**                        least one GPU; with none, the report says why)
**   M40_ERR_OOM_HOST     out of host memory
** On any error *out is NULL (when out is not NULL). */
M40_API m40_status m40_doctor_run(const m40_doctor_options *opt,
                                  m40_doctor_report **out);

M40_API int m40_doctor_report_get_count(const m40_doctor_report *r);
/* The i-th item, 0 <= i < count; NULL otherwise. */
M40_API const m40_doctor_item *m40_doctor_report_get_item(const m40_doctor_report *r,
                                                      int i);
/* The highest level among the items (M40_DOCTOR_INFO for an empty report). */
M40_API m40_doctor_level m40_doctor_report_get_worst(const m40_doctor_report *r);
/* Number of items at `level`. */
M40_API int m40_doctor_report_get_tally(const m40_doctor_report *r,
                                    m40_doctor_level level);

/* Writes the report as one JSON object (UTF-8) into buf, by the library's
** buffer rule (m40.h): min(size, cap) bytes, NUL-terminated when size < cap,
** the size without the NUL in *len (call with cap 0 to learn it).
** Returns M40_OK, M40_ERR_INVALID_ARG (r or len NULL, or buf NULL with
** cap > 0), M40_ERR_OOM_HOST. */
M40_API m40_status m40_doctor_report_json(const m40_doctor_report *r, char *buf,
                                          size_t cap, size_t *len);

/* NULL is a no-op. */
M40_API void m40_doctor_report_destroy(m40_doctor_report *r);

#ifdef __cplusplus
}
#endif
#endif /* M40_DOCTOR_H */
