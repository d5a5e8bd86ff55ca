/* Measurement helpers shared by m40-bench and the doctor's functional check:
** statistics, a small JSON writer, telemetry samples and their summary,
** CUDA-event timers and the direct cuBLAS baseline. Internal; not installed.
** (The sampler thread itself lives in the tool: tools/bench/sampler.c.) */
#ifndef M40_BENCH_BENCH_H
#define M40_BENCH_BENCH_H

#include "m40/m40.h"
#include "../doctor/nvml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- statistics ---------------------------------------------------------- */
typedef struct m40__stats {
    int n;
    double median, min, max, mean;
    double q1, q3, iqr; /* quartiles by linear interpolation (numpy's default) */
} m40__stats;

/* Statistics of x[0..n) (x is not modified). n == 0 gives all zeros.
** Returns M40_OK, M40_ERR_INVALID_ARG (x NULL with n > 0, n < 0),
** M40_ERR_OOM_HOST. */
m40_status m40__stats_compute(const double *x, int n, m40__stats *out);
/* The p-quantile (0..1) of sorted[0..n), linear interpolation. */
double m40__quantile_sorted(const double *sorted, int n, double p);

/* ---- JSON writer ----------------------------------------------------------- */
#define M40__JB_DEPTH 16
typedef struct m40__jbuf {
    char *p;
    size_t len, cap;
    bool oom;          /* an allocation failed; p holds a prefix */
    bool after_key;
    int depth;
    bool first[M40__JB_DEPTH + 1];
} m40__jbuf;

void m40__jb_init(m40__jbuf *j);
void m40__jb_free(m40__jbuf *j);
void m40__jb_obj_begin(m40__jbuf *j);
void m40__jb_obj_end(m40__jbuf *j);
void m40__jb_arr_begin(m40__jbuf *j);
void m40__jb_arr_end(m40__jbuf *j);
void m40__jb_key(m40__jbuf *j, const char *k);
void m40__jb_str(m40__jbuf *j, const char *s); /* quoted, escaped; NULL -> null */
void m40__jb_num(m40__jbuf *j, double v);      /* NaN/Inf -> null */
void m40__jb_int(m40__jbuf *j, long long v);
void m40__jb_bool(m40__jbuf *j, bool v);
void m40__jb_null(m40__jbuf *j);
void m40__jb_kstr(m40__jbuf *j, const char *k, const char *s);
void m40__jb_knum(m40__jbuf *j, const char *k, double v);
void m40__jb_kint(m40__jbuf *j, const char *k, long long v);
void m40__jb_kbool(m40__jbuf *j, const char *k, bool v);

/* ---- telemetry ------------------------------------------------------------- */
typedef struct m40__tele_sample {
    double t;                   /* seconds, any fixed origin */
    unsigned sm_mhz, mem_mhz;   /* 0 = not read */
    unsigned temp_c;
    double power_w;             /* < 0 = not read */
    unsigned long long reasons; /* throttle / clock-event reason bits */
} m40__tele_sample;

typedef struct m40__tele_summary {
    int n;                       /* samples */
    unsigned sm_min, sm_max, mem_min, mem_max, temp_max;
    double sm_mean, power_max, power_mean; /* power_* < 0: no power reading */
    unsigned long long reasons;  /* OR over the samples */
    bool thermal, power, throttled; /* throttled: any slowing reason seen */
} m40__tele_summary;

/* Reads one sample of NVML device d (fields NVML cannot give stay 0/-1).
** Returns 0 if at least the SM clock was read. */
int m40__tele_read(const m40__nvml *t, m40__nvml_dev d, m40__tele_sample *s);
/* Summarizes s[0..n); n == 0 gives a zeroed summary with n = 0. */
void m40__tele_summarize(const m40__tele_sample *s, int n, m40__tele_summary *out);
/* Writes the summary as a JSON object value (after a key, or in an array). */
void m40__tele_json(m40__jbuf *j, const m40__tele_summary *s);

/* ---- results ------------------------------------------------------------- */
/* The Tesla M40's limits (shared/docs/m40-facts.md). */
#define M40__M40_GBS 288.4     /* GB/s, 384-bit GDDR5 */
#define M40__M40_GFLOPS 6840.0 /* FP32 GFLOP/s at the 1114 MHz boost clock */

typedef struct m40__bench_result {
    char workload[16];  /* "gemm", "copy" */
    char impl[40];      /* "m40_matmul", "cublas", "torch.linear" */
    char label[64];     /* "4096x4096x4096", "256MiB" */
    double batch;       /* the x axis of the plots (M rows, MiB) */
    int64_t m, n, k;    /* shape (gemm) or 0 */
    char unit[12];      /* "GFLOP/s" or "GB/s" */
    double work;        /* FLOP or bytes (read + written) per iteration */
    m40__stats t_ms;    /* per-iteration times, ms */
    double value;       /* work / median time, in unit */
    char baseline[40];  /* impl of the baseline, "" if none */
    double baseline_value;
    double m40_limit;   /* in unit */
    bool is_m40;        /* measured on an M40: the % is meaningful */
    double max_rel_err; /* vs the baseline's output; < 0 = not checked */
    bool has_tele;
    m40__tele_summary tele;
} m40__bench_result;

/* Fills value from work and t_ms.median (0 if the median is 0). */
void m40__bench_finish(m40__bench_result *r);
/* The M40 floor in ms for the result's work, and the formula, e.g.
** "2*M*N*K / 6840 GFLOP/s = 20.09 ms". Returns the floor. */
double m40__bench_m40_floor(const m40__bench_result *r, char *formula, size_t n);
/* One JSON object per result (the schema of bench/compare.py). */
void m40__bench_result_json(m40__jbuf *j, const m40__bench_result *r);
/* CSV header line and one row (no trailing newline in either). */
const char *m40__bench_csv_header(void);
void m40__bench_result_csv(const m40__bench_result *r, char *buf, size_t n);

/* ---- timers ---------------------------------------------------------------- */
/* Times work queued on ctx's stream with CUDA events (host clock around a
** synchronize on a CPU context). */
typedef struct m40__evtimer {
    m40_ctx *ctx;
    void *ev0, *ev1; /* cudaEvent_t */
    double h0, h1;   /* host seconds (CPU context) */
} m40__evtimer;

m40_status m40__evtimer_create(m40_ctx *ctx, m40__evtimer *t);
m40_status m40__evtimer_start(m40__evtimer *t);
m40_status m40__evtimer_stop(m40__evtimer *t);
/* Waits for the stop event; milliseconds between start and stop. */
m40_status m40__evtimer_ms(m40__evtimer *t, double *ms);
void m40__evtimer_destroy(m40__evtimer *t);
/* Monotonic host clock, seconds. */
double m40__now_s(void);

/* ---- baselines (GPU contexts, CUDA builds) --------------------------------- */
/* y[M,N] = x[M,K]·w[N,K]ᵀ straight through cublasSgemm (pedantic FP32),
** whatever m40_matmul dispatches to. Returns M40_ERR_UNSUPPORTED without
** CUDA or on a CPU context. */
m40_status m40__bench_cublas_linear(m40_ctx *ctx, const m40_tensor *x,
                                    const m40_tensor *w, m40_tensor *y);
/* cudaMemcpyAsync device to device of nbytes on ctx's stream. */
m40_status m40__bench_memcpy_d2d(m40_ctx *ctx, void *dst, const void *src,
                                 size_t nbytes);

/* The CUDA UUID of ctx's device (to find it in NVML). M40_ERR_UNSUPPORTED on
** a CPU context or without CUDA. */
m40_status m40__bench_device_uuid(m40_ctx *ctx, unsigned char uuid[16]);
/* "GPU-xxxxxxxx-xxxx-...", NVML's spelling of a UUID. */
void m40__uuid_str(const unsigned char u[16], char *out, size_t n);

#endif
