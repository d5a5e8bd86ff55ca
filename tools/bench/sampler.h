/* NVML telemetry sampler: a thread that reads SM/memory clocks, temperature,
** power and throttle reasons every few milliseconds, so each measurement can
** report what the card was doing while it ran. */
#ifndef M40_TOOLS_BENCH_SAMPLER_H
#define M40_TOOLS_BENCH_SAMPLER_H

#include "bench/bench.h"

typedef struct m40b_sampler m40b_sampler;

/* Starts sampling the NVML device whose UUID is `uuid` (NVML's spelling) or,
** if uuid is NULL or not found, NVML index `fallback_index`. Returns NULL
** and writes why into `why` when NVML or the device is unavailable. */
m40b_sampler *m40b_sampler_start(const char *uuid, int fallback_index, int period_ms,
                                 char *why, size_t n);
/* The driver version string ("" if unknown). */
const char *m40b_sampler_driver(const m40b_sampler *s);
/* A position in the sample stream; pass it to m40b_sampler_window. */
int m40b_sampler_mark(m40b_sampler *s);
/* Takes one more sample now and summarizes the samples since `mark`. */
void m40b_sampler_window(m40b_sampler *s, int mark, m40__tele_summary *out);
/* Stops the thread and frees everything. NULL is a no-op. */
void m40b_sampler_stop(m40b_sampler *s);

#endif
