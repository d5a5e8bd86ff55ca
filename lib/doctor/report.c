/* The doctor's report: the items the checks add (level, check, value, why,
** fix), the summary queries of include/m40/doctor.h and the JSON form. */
#include "doctor_internal.h"
#include "../measure/measure.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *m40_doctor_level_str(m40_doctor_level l) {
    switch (l) {
    case M40_DOCTOR_INFO: return "INFO";
    case M40_DOCTOR_OK: return "OK";
    case M40_DOCTOR_SKIP: return "SKIP";
    case M40_DOCTOR_WARN: return "WARN";
    case M40_DOCTOR_FAIL: return "FAIL";
    default: return "?";
    }
}

void m40_doctor_options_init(m40_doctor_options *opt) {
    if (!opt) return;
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->functional = 1;
    opt->device = -1;
}

/* ---- report building ------------------------------------------------------- */

static void vtxt(char *dst, size_t n, const char *fmt, va_list ap) { vsnprintf(dst, n, fmt, ap); }

m40_doctor_item *m40__doc_add(m40_doctor_report *r, m40_doctor_level level, int gpu,
                              const char *check, const char *fmt, ...) {
    m40_doctor_item *it = &r->scratch;
    if (r->n == r->cap && !r->oom) {
        int cap = r->cap ? 2 * r->cap : 32;
        m40_doctor_item *p = realloc(r->items, (size_t)cap * sizeof *p);
        if (p) {
            r->items = p;
            r->cap = cap;
        } else {
            r->oom = 1;
        }
    }
    if (!r->oom) it = &r->items[r->n++];
    memset(it, 0, sizeof *it);
    it->level = level;
    it->gpu = gpu;
    snprintf(it->check, sizeof it->check, "%s", check);
    va_list ap;
    va_start(ap, fmt);
    vtxt(it->value, sizeof it->value, fmt, ap);
    va_end(ap);
    return it;
}

void m40__doc_why(m40_doctor_item *it, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vtxt(it->reason, sizeof it->reason, fmt, ap);
    va_end(ap);
}

void m40__doc_fix(m40_doctor_item *it, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vtxt(it->fix, sizeof it->fix, fmt, ap);
    va_end(ap);
}

int m40_doctor_report_get_count(const m40_doctor_report *r) { return r ? r->n : 0; }

const m40_doctor_item *m40_doctor_report_get_item(const m40_doctor_report *r, int i) {
    return r && i >= 0 && i < r->n ? &r->items[i] : NULL;
}

m40_doctor_level m40_doctor_report_get_worst(const m40_doctor_report *r) {
    m40_doctor_level w = M40_DOCTOR_INFO;
    for (int i = 0; r && i < r->n; i++)
        if (r->items[i].level > w) w = r->items[i].level;
    return w;
}

int m40_doctor_report_get_tally(const m40_doctor_report *r, m40_doctor_level level) {
    int c = 0;
    for (int i = 0; r && i < r->n; i++) c += r->items[i].level == level;
    return c;
}

void m40_doctor_report_destroy(m40_doctor_report *r) {
    if (!r) return;
    free(r->items);
    free(r);
}

m40_status m40_doctor_report_json(const m40_doctor_report *r, char *buf, size_t cap,
                                  size_t *len) {
    if (!r || !len || (!buf && cap > 0)) return M40_ERR_INVALID_ARG;
    m40__jbuf j;
    m40__jb_init(&j);
    m40__jb_obj_begin(&j);
    m40__jb_kstr(&j, "tool", "m40-doctor");
    m40__jb_kstr(&j, "libm40", m40_version());
    m40__jb_kstr(&j, "build", r->build);
    m40__jb_key(&j, "summary");
    m40__jb_obj_begin(&j);
    static const m40_doctor_level lv[] = {M40_DOCTOR_OK, M40_DOCTOR_WARN, M40_DOCTOR_FAIL,
                                          M40_DOCTOR_SKIP, M40_DOCTOR_INFO};
    for (int i = 0; i < 5; i++) {
        char k[8];
        snprintf(k, sizeof k, "%s", m40_doctor_level_str(lv[i]));
        for (char *c = k; *c; c++) *c = (char)tolower((unsigned char)*c);
        m40__jb_kint(&j, k, m40_doctor_report_get_tally(r, lv[i]));
    }
    m40__jb_kstr(&j, "worst", m40_doctor_level_str(m40_doctor_report_get_worst(r)));
    m40__jb_obj_end(&j);
    m40__jb_key(&j, "items");
    m40__jb_arr_begin(&j);
    for (int i = 0; i < r->n; i++) {
        const m40_doctor_item *it = &r->items[i];
        m40__jb_obj_begin(&j);
        m40__jb_kstr(&j, "level", m40_doctor_level_str(it->level));
        m40__jb_kint(&j, "gpu", it->gpu);
        m40__jb_kstr(&j, "check", it->check);
        m40__jb_kstr(&j, "value", it->value);
        m40__jb_kstr(&j, "reason", it->reason);
        m40__jb_kstr(&j, "fix", it->fix);
        m40__jb_obj_end(&j);
    }
    m40__jb_arr_end(&j);
    m40__jb_obj_end(&j);
    if (j.oom) {
        m40__jb_free(&j);
        return M40_ERR_OOM_HOST;
    }
    /* the library's buffer rule (m40.h): min(size, cap) bytes, a NUL when
    ** size < cap, the full size in *len */
    if (len) *len = j.len;
    if (cap > 0) {
        memcpy(buf, j.p, j.len < cap ? j.len : cap);
        if (j.len < cap) buf[j.len] = 0;
    }
    m40__jb_free(&j);
    return M40_OK;
}
