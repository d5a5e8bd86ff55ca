/* One telemetry sample from NVML, and the summary printed beside a result:
** clock range, hottest temperature, highest power and every throttle reason
** seen while it was measured. */
#include "bench.h"

#include <string.h>

int m40__tele_read(const m40__nvml *t, m40__nvml_dev d, m40__tele_sample *s) {
    memset(s, 0, sizeof *s);
    s->t = m40__now_s();
    s->power_w = -1;
    int ok = 0;
    unsigned v = 0;
    if (t->clock && t->clock(d, M40__NVML_CLOCK_SM, &v) == M40__NVML_SUCCESS) {
        s->sm_mhz = v;
        ok = 1;
    }
    if (t->clock && t->clock(d, M40__NVML_CLOCK_MEM, &v) == M40__NVML_SUCCESS) s->mem_mhz = v;
    if (t->temperature && t->temperature(d, 0, &v) == M40__NVML_SUCCESS) s->temp_c = v;
    if (t->power_usage && t->power_usage(d, &v) == M40__NVML_SUCCESS) s->power_w = v / 1000.0;
    unsigned long long r = 0;
    if (t->throttle && t->throttle(d, &r) == M40__NVML_SUCCESS) s->reasons = r;
    return ok ? 0 : 1;
}

void m40__tele_summarize(const m40__tele_sample *s, int n, m40__tele_summary *out) {
    memset(out, 0, sizeof *out);
    out->power_max = out->power_mean = -1;
    if (n <= 0 || !s) return;
    double sm_sum = 0, p_sum = 0;
    int sm_n = 0, p_n = 0;
    for (int i = 0; i < n; i++) {
        const m40__tele_sample *x = &s[i];
        if (x->sm_mhz) {
            if (!sm_n || x->sm_mhz < out->sm_min) out->sm_min = x->sm_mhz;
            if (x->sm_mhz > out->sm_max) out->sm_max = x->sm_mhz;
            sm_sum += x->sm_mhz;
            sm_n++;
        }
        if (x->mem_mhz) {
            if (!out->mem_min || x->mem_mhz < out->mem_min) out->mem_min = x->mem_mhz;
            if (x->mem_mhz > out->mem_max) out->mem_max = x->mem_mhz;
        }
        if (x->temp_c > out->temp_max) out->temp_max = x->temp_c;
        if (x->power_w >= 0) {
            if (x->power_w > out->power_max) out->power_max = x->power_w;
            p_sum += x->power_w;
            p_n++;
        }
        out->reasons |= x->reasons;
    }
    out->n = n;
    out->sm_mean = sm_n ? sm_sum / sm_n : 0;
    out->power_mean = p_n ? p_sum / p_n : -1;
    out->thermal = (out->reasons & (M40__THR_THERMAL | M40__THR_HW_SLOWDOWN)) != 0;
    out->power = (out->reasons & M40__THR_POWER) != 0;
    out->throttled = (out->reasons & M40__THR_SLOWING) != 0;
}

void m40__tele_json(m40__jbuf *j, const m40__tele_summary *s) {
    char names[192];
    m40__jb_obj_begin(j);
    m40__jb_kint(j, "samples", s->n);
    m40__jb_kint(j, "sm_mhz_min", s->sm_min);
    m40__jb_kint(j, "sm_mhz_max", s->sm_max);
    m40__jb_knum(j, "sm_mhz_mean", s->sm_mean);
    m40__jb_kint(j, "mem_mhz_min", s->mem_min);
    m40__jb_kint(j, "mem_mhz_max", s->mem_max);
    m40__jb_kint(j, "temp_c_max", s->temp_max);
    if (s->power_max >= 0) {
        m40__jb_knum(j, "power_w_max", s->power_max);
        m40__jb_knum(j, "power_w_mean", s->power_mean);
    } else {
        m40__jb_key(j, "power_w_max");
        m40__jb_null(j);
        m40__jb_key(j, "power_w_mean");
        m40__jb_null(j);
    }
    m40__jb_key(j, "throttle_reasons");
    m40__jb_arr_begin(j);
    if (s->reasons) {
        m40__throttle_names(s->reasons, names, sizeof names);
        char *tok = names;
        for (char *c = names;; c++) {
            if (*c == ',' || *c == 0) {
                int end = *c == 0;
                *c = 0;
                m40__jb_str(j, tok);
                if (end) break;
                tok = c + 1;
            }
        }
    }
    m40__jb_arr_end(j);
    m40__jb_kbool(j, "thermal", s->thermal);
    m40__jb_kbool(j, "power", s->power);
    m40__jb_kbool(j, "throttled", s->throttled);
    m40__jb_obj_end(j);
}
