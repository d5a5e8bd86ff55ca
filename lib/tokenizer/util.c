/* The tokenizer's bottom layer: see util.h. */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

m40_status m40__tok_vmsg(char *msg, size_t cap, m40_status st, const char *fmt, va_list ap) {
    if (msg && cap) vsnprintf(msg, cap, fmt, ap);
    return st;
}

const char *m40__tok_status_text(m40_status st) {
    switch (st) {
    case M40_OK: return "ok";
    case M40_ERR_OOM_HOST: return "out of memory";
    case M40_ERR_INVALID_ARG: return "invalid argument";
    case M40_ERR_FORMAT: return "malformed model";
    case M40_ERR_UNSUPPORTED: return "unsupported";
    case M40_ERR_IO: return "I/O error";
    default: return "error";
    }
}

bool m40__tok_grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2) return false;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem) return false;
    void *p = realloc(*buf, n * elem);
    if (!p) return false;
    *buf = p;
    *cap = n;
    return true;
}

uint32_t m40__utf8_decode(const uint8_t *p, size_t n, size_t *mblen) {
    /* Same acceptance rules as sentencepiece's DecodeUTF8: no overlongs, no
    ** surrogates, nothing above U+10FFFF; a failure consumes one byte. */
    uint8_t c = p[0];
    if (c < 0x80) {
        *mblen = 1;
        return c;
    }
    if (n >= 2 && (c & 0xE0) == 0xC0) {
        uint32_t cp = ((uint32_t)(c & 0x1F) << 6) | (p[1] & 0x3F);
        if ((p[1] & 0xC0) == 0x80 && cp >= 0x80) {
            *mblen = 2;
            return cp;
        }
    } else if (n >= 3 && (c & 0xF0) == 0xE0) {
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if ((p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && cp >= 0x800 &&
            (cp < 0xD800 || cp >= 0xE000)) {
            *mblen = 3;
            return cp;
        }
    } else if (n >= 4 && (c & 0xF8) == 0xF0) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                      ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if ((p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 &&
            cp >= 0x10000 && cp <= 0x10FFFF) {
            *mblen = 4;
            return cp;
        }
    }
    *mblen = 1;
    return 0xFFFD;
}

