/* m40-bench's helpers: telemetry samples and their summary, the result
** record, the direct cuBLAS and cudaMemcpy baselines. Built on lib/measure/
** (statistics, JSON, timers, NVML), which the doctor shares; bench and
** doctor do not include each other. Internal; not installed.
** (The sampler thread itself lives in the tool: tools/bench/sampler.c.) */
#ifndef M40_BENCH_BENCH_H
#define M40_BENCH_BENCH_H

#include "m40/m40.h"
#include "../measure/measure.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* The Tesla M40's limits M40__M40_GBS, M40__M40_GFLOPS: measure.h. */

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

/* cudaProfilerStart (on 1) / Stop (0) after a sync of ctx: the range that
** `ncu --profile-from-start off` profiles. M40_ERR_UNSUPPORTED without CUDA. */
m40_status m40__bench_profiler(m40_ctx *ctx, int on);

/* ---- the read chain (m40-bench chatglm2's bound) ---------------------------
** n dependent reads, each of one or two byte ranges of device memory
** (kernels/bench_read.cu), captured once into a CUDA graph on ctx's stream:
** the fastest this GPU reads a step's bytes when each kernel that must read
** them waits for the one before. */
typedef struct m40__read_range {
    const void *p0, *p1; /* p1 may be NULL */
    size_t bytes0, bytes1;
    int wbits; /* 0: a plain read; 4 / 8 / 16: p0's bytes as int4 / int8 / fp16
               ** weights through m40k_bench_floor (p1 must be NULL) */
} m40__read_range;
typedef struct m40__read_chain m40__read_chain;
/* sink: 4 bytes of device memory. M40_ERR_UNSUPPORTED without CUDA. */
m40_status m40__bench_read_chain_new(m40_ctx *ctx, const m40__read_range *r, int n, void *sink,
                                     m40__read_chain **out);
m40_status m40__bench_read_chain_run(m40_ctx *ctx, m40__read_chain *c);
void m40__bench_read_chain_free(m40__read_chain *c);
/* `calls` back-to-back calls of fn(arg) (each enqueues work on ctx's
** stream) captured into one CUDA graph, run with m40__bench_read_chain_run
** and freed with m40__bench_read_chain_free: what the calls cost inside a
** captured decode step, without a host launch or an event between them
** (m40-bench's --graph-calls). M40_ERR_UNSUPPORTED without CUDA. */
m40_status m40__bench_capture_new(m40_ctx *ctx, m40_status (*fn)(void *arg), void *arg, int calls,
                                  m40__read_chain **out);

#endif
