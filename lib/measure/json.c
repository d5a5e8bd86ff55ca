/* A small append-only JSON writer: enough for reports and bench results,
** with commas handled by the nesting state. Allocation failure is sticky
** (oom) and the buffer keeps a valid C string. */
#include "measure.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void m40__jb_init(m40__jbuf *j) {
    memset(j, 0, sizeof *j);
}

void m40__jb_free(m40__jbuf *j) {
    free(j->p);
    memset(j, 0, sizeof *j);
}

static void put(m40__jbuf *j, const char *s, size_t n) {
    if (j->oom) return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + n + 1) cap *= 2;
        char *p = realloc(j->p, cap);
        if (!p) {
            j->oom = true;
            return;
        }
        j->p = p;
        j->cap = cap;
    }
    memcpy(j->p + j->len, s, n);
    j->len += n;
    j->p[j->len] = 0;
}

static void puts_(m40__jbuf *j, const char *s) { put(j, s, strlen(s)); }

/* Comma before a value or key unless it opens its container or follows a key. */
static void pre(m40__jbuf *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (!j->first[j->depth]) puts_(j, ",");
        j->first[j->depth] = false;
    }
}

static void open_(m40__jbuf *j, const char *c) {
    pre(j);
    puts_(j, c);
    if (j->depth < M40__JB_DEPTH) j->depth++;
    j->first[j->depth] = true;
}

static void close_(m40__jbuf *j, const char *c) {
    if (j->depth > 0) j->depth--;
    puts_(j, c);
}

void m40__jb_obj_begin(m40__jbuf *j) { open_(j, "{"); }
void m40__jb_obj_end(m40__jbuf *j) { close_(j, "}"); }
void m40__jb_arr_begin(m40__jbuf *j) { open_(j, "["); }
void m40__jb_arr_end(m40__jbuf *j) { close_(j, "]"); }

static void quoted(m40__jbuf *j, const char *s) {
    puts_(j, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        switch (*c) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\r': puts_(j, "\\r"); break;
        case '\t': puts_(j, "\\t"); break;
        default:
            if (*c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *c);
                puts_(j, esc);
            } else {
                put(j, (const char *)c, 1); /* UTF-8 passes through */
            }
        }
    }
    puts_(j, "\"");
}

void m40__jb_key(m40__jbuf *j, const char *k) {
    pre(j);
    quoted(j, k);
    puts_(j, ":");
    j->after_key = true;
}

void m40__jb_str(m40__jbuf *j, const char *s) {
    pre(j);
    if (s) quoted(j, s);
    else puts_(j, "null");
}

void m40__jb_num(m40__jbuf *j, double v) {
    pre(j);
    if (!isfinite(v)) {
        puts_(j, "null");
        return;
    }
    char b[40];
    snprintf(b, sizeof b, "%.9g", v);
    puts_(j, b);
}

void m40__jb_int(m40__jbuf *j, long long v) {
    pre(j);
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    puts_(j, b);
}

void m40__jb_bool(m40__jbuf *j, bool v) {
    pre(j);
    puts_(j, v ? "true" : "false");
}

void m40__jb_null(m40__jbuf *j) {
    pre(j);
    puts_(j, "null");
}

void m40__jb_kstr(m40__jbuf *j, const char *k, const char *s) {
    m40__jb_key(j, k);
    m40__jb_str(j, s);
}
void m40__jb_knum(m40__jbuf *j, const char *k, double v) {
    m40__jb_key(j, k);
    m40__jb_num(j, v);
}
void m40__jb_kint(m40__jbuf *j, const char *k, long long v) {
    m40__jb_key(j, k);
    m40__jb_int(j, v);
}
void m40__jb_kbool(m40__jbuf *j, const char *k, bool v) {
    m40__jb_key(j, k);
    m40__jb_bool(j, v);
}
