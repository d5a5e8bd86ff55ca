/* The result record m40-bench prints and writes (JSON, CSV, the M40
** floor), and the baselines' stubs in a build without CUDA. */
#include "bench.h"
#include "../internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void m40__bench_finish(m40__bench_result *r) {
    double sec = r->t_ms.median * 1e-3;
    r->value = sec > 0 ? r->work / sec / 1e9 : 0; /* GFLOP/s or GB/s */
}

double m40__bench_m40_floor(const m40__bench_result *r, char *formula, size_t n) {
    bool flop = strcmp(r->unit, "GFLOP/s") == 0;
    double lim = r->m40_limit > 0 ? r->m40_limit : flop ? M40__M40_GFLOPS : M40__M40_GBS;
    double ms = r->work / (lim * 1e9) * 1e3;
    if (formula && n) {
        if (flop && r->m && r->n && r->k)
            snprintf(formula, n, "2*M*N*K / %.0f GFLOP/s = %.4g ms", lim, ms);
        else if (flop)
            snprintf(formula, n, "%.4g GFLOP / %.0f GFLOP/s = %.4g ms", r->work / 1e9, lim, ms);
        else
            snprintf(formula, n, "%.4g GB %s / %.1f GB/s = %.4g ms", r->work / 1e9,
                     strcmp(r->workload, "gemv") == 0 ? "(weights+scales read)" : "(read+write)",
                     lim, ms);
    }
    return ms;
}

static void stats_json(m40__jbuf *j, const m40__stats *s) {
    m40__jb_obj_begin(j);
    m40__jb_kint(j, "n", s->n);
    m40__jb_knum(j, "median", s->median);
    m40__jb_knum(j, "min", s->min);
    m40__jb_knum(j, "max", s->max);
    m40__jb_knum(j, "q1", s->q1);
    m40__jb_knum(j, "q3", s->q3);
    m40__jb_knum(j, "iqr", s->iqr);
    m40__jb_knum(j, "mean", s->mean);
    m40__jb_obj_end(j);
}

void m40__bench_result_json(m40__jbuf *j, const m40__bench_result *r) {
    char formula[160];
    double floor_ms = m40__bench_m40_floor(r, formula, sizeof formula);
    m40__jb_obj_begin(j);
    m40__jb_kstr(j, "workload", r->workload);
    m40__jb_kstr(j, "impl", r->impl);
    m40__jb_kstr(j, "label", r->label);
    m40__jb_knum(j, "batch", r->batch);
    m40__jb_key(j, "shape");
    m40__jb_obj_begin(j);
    if (r->m || r->n || r->k) {
        m40__jb_kint(j, "M", r->m);
        m40__jb_kint(j, "N", r->n);
        m40__jb_kint(j, "K", r->k);
    }
    m40__jb_obj_end(j);
    m40__jb_kstr(j, "unit", r->unit);
    m40__jb_knum(j, "work", r->work);
    m40__jb_key(j, "time_ms");
    stats_json(j, &r->t_ms);
    m40__jb_knum(j, "value", r->value);
    m40__jb_key(j, "baseline");
    if (r->baseline[0]) {
        m40__jb_obj_begin(j);
        m40__jb_kstr(j, "impl", r->baseline);
        m40__jb_knum(j, "value", r->baseline_value);
        m40__jb_knum(j, "ratio", r->baseline_value > 0 ? r->value / r->baseline_value : NAN);
        m40__jb_obj_end(j);
    } else {
        m40__jb_null(j);
    }
    m40__jb_key(j, "m40");
    m40__jb_obj_begin(j);
    double lim = r->m40_limit > 0 ? r->m40_limit
                 : strcmp(r->unit, "GFLOP/s") == 0 ? M40__M40_GFLOPS : M40__M40_GBS;
    m40__jb_knum(j, "limit", lim);
    m40__jb_knum(j, "pct_of_limit", lim > 0 ? 100.0 * r->value / lim : NAN);
    m40__jb_kbool(j, "measured_on_m40", r->is_m40);
    m40__jb_knum(j, "floor_ms", floor_ms);
    m40__jb_kstr(j, "formula", formula);
    m40__jb_obj_end(j);
    if (r->max_rel_err >= 0) m40__jb_knum(j, "max_rel_err", r->max_rel_err);
    else {
        m40__jb_key(j, "max_rel_err");
        m40__jb_null(j);
    }
    m40__jb_key(j, "telemetry");
    if (r->has_tele) m40__tele_json(j, &r->tele);
    else m40__jb_null(j);
    m40__jb_obj_end(j);
}

const char *m40__bench_csv_header(void) {
    return "workload,impl,label,batch,M,N,K,unit,value,median_ms,min_ms,max_ms,iqr_ms,n,"
           "baseline,baseline_value,ratio,m40_limit,pct_of_m40_limit,m40_floor_ms,"
           "sm_mhz_min,sm_mhz_max,temp_max_c,power_max_w,throttle_reasons,throttled";
}

void m40__bench_result_csv(const m40__bench_result *r, char *buf, size_t n) {
    double lim = r->m40_limit > 0 ? r->m40_limit
                 : strcmp(r->unit, "GFLOP/s") == 0 ? M40__M40_GFLOPS : M40__M40_GBS;
    char reasons[160] = "";
    if (r->has_tele) m40__throttle_names(r->tele.reasons, reasons, sizeof reasons);
    for (char *c = reasons; *c; c++)
        if (*c == ',') *c = '|'; /* keep the CSV columns */
    double ratio = r->baseline_value > 0 ? r->value / r->baseline_value : NAN;
    snprintf(buf, n,
             "%s,%s,%s,%g,%lld,%lld,%lld,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%d,%s,%.6g,%.4g,%.6g,%.4g,"
             "%.6g,%u,%u,%u,%.1f,%s,%d",
             r->workload, r->impl, r->label, r->batch, (long long)r->m, (long long)r->n,
             (long long)r->k, r->unit, r->value, r->t_ms.median, r->t_ms.min, r->t_ms.max,
             r->t_ms.iqr, r->t_ms.n, r->baseline, r->baseline_value, ratio, lim,
             100.0 * r->value / lim, m40__bench_m40_floor(r, NULL, 0),
             r->has_tele ? r->tele.sm_min : 0, r->has_tele ? r->tele.sm_max : 0,
             r->has_tele ? r->tele.temp_max : 0, r->has_tele ? r->tele.power_max : -1.0,
             reasons, r->has_tele && r->tele.throttled);
}

#ifndef M40_HAVE_CUDA
m40_status m40__bench_cublas_linear(m40_ctx *ctx, const m40_tensor *x, const m40_tensor *w,
                                    m40_tensor *y) {
    (void)x, (void)w, (void)y;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "cuBLAS baseline: libm40 was built without CUDA");
}
m40_status m40__bench_memcpy_d2d(m40_ctx *ctx, void *dst, const void *src, size_t nbytes) {
    (void)dst, (void)src, (void)nbytes;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "cudaMemcpy baseline: libm40 was built without CUDA");
}
m40_status m40__bench_device_uuid(m40_ctx *ctx, unsigned char uuid[16]) {
    (void)uuid;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "libm40 was built without CUDA");
}
m40_status m40__bench_profiler(m40_ctx *ctx, int on) {
    (void)on;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "libm40 was built without CUDA");
}
m40_status m40__bench_read_chain_new(m40_ctx *ctx, const m40__read_range *r, int n, void *sink,
                                     m40__read_chain **out) {
    (void)r, (void)n, (void)sink;
    *out = NULL;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "libm40 was built without CUDA");
}
m40_status m40__bench_read_chain_run(m40_ctx *ctx, m40__read_chain *c) {
    (void)c;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "libm40 was built without CUDA");
}
void m40__bench_read_chain_free(m40__read_chain *c) { (void)c; }
m40_status m40__bench_capture_new(m40_ctx *ctx, m40_status (*fn)(void *arg), void *arg, int calls,
                                  m40__read_chain **out) {
    (void)fn, (void)arg, (void)calls;
    *out = NULL;
    return m40__err(ctx, M40_ERR_UNSUPPORTED, "libm40 was built without CUDA");
}
#endif
