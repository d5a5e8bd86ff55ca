/* Measurement helpers at the bottom of the tools' layers, shared by
** m40-bench (lib/bench/) and m40-doctor (lib/doctor/), which do not include
** each other: statistics, a small JSON writer, timers (CUDA events on a GPU
** context, the host clock on a CPU one), NVML through dlopen (nvml.h).
** Internal; not installed. */
#ifndef M40_MEASURE_MEASURE_H
#define M40_MEASURE_MEASURE_H

#include "m40/m40.h"
#include "nvml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The Tesla M40's limits (shared/docs/m40-facts.md). */
#define M40__M40_GBS 288.4     /* GB/s, 384-bit GDDR5 */
#define M40__M40_GFLOPS 6840.0 /* FP32 GFLOP/s at the 1114 MHz boost clock */

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

/* "GPU-xxxxxxxx-xxxx-...", NVML's spelling of a UUID. */
void m40__uuid_str(const unsigned char u[16], char *out, size_t n);

#endif
