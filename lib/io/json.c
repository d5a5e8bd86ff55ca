/* A JSON cursor: see json.h. Strict RFC 8259 syntax. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

static bool fail(m40_json *c, const char *why) {
    if (!c->err) {
        c->err = why;
        c->err_pos = (size_t)(c->p - c->start);
    }
    return false;
}

void m40__json_init(m40_json *c, const char *text, size_t len) {
    c->p = c->start = text;
    c->end = text + len;
    c->err = NULL;
    c->err_pos = 0;
}

static void ws(m40_json *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

bool m40__json_peek(m40_json *c, char ch) {
    ws(c);
    return c->p < c->end && *c->p == ch;
}

bool m40__json_expect(m40_json *c, char ch) {
    ws(c);
    if (c->p >= c->end) return fail(c, "unexpected end of JSON");
    if (*c->p != ch) return fail(c, "unexpected character in JSON");
    c->p++;
    return true;
}

static int hexval(char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

static bool hex4(m40_json *c, uint32_t *v) {
    if (c->end - c->p < 4) return fail(c, "truncated \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->p[i]);
        if (h < 0) return fail(c, "bad \\u escape");
        *v = *v * 16 + (uint32_t)h;
    }
    c->p += 4;
    return true;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* Scans or decodes a string body; with out == NULL only validates. */
static bool string_body(m40_json *c, char *out, size_t *len) {
    size_t n = 0;
    for (;;) {
        if (c->p >= c->end) return fail(c, "unterminated string");
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') break;
        if (ch < 0x20) return fail(c, "control character in string");
        if (ch != '\\') {
            if (out) out[n] = (char)ch;
            n++;
            continue;
        }
        if (c->p >= c->end) return fail(c, "unterminated escape");
        char e = *c->p++;
        char lit = 0;
        switch (e) {
        case '"': lit = '"'; break;
        case '\\': lit = '\\'; break;
        case '/': lit = '/'; break;
        case 'b': lit = '\b'; break;
        case 'f': lit = '\f'; break;
        case 'n': lit = '\n'; break;
        case 'r': lit = '\r'; break;
        case 't': lit = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!hex4(c, &cp)) return false;
            if (cp >= 0xD800 && cp < 0xDC00) { /* high surrogate: need the low one */
                uint32_t lo;
                if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
                    return fail(c, "unpaired surrogate");
                c->p += 2;
                if (!hex4(c, &lo)) return false;
                if (lo < 0xDC00 || lo > 0xDFFF) return fail(c, "unpaired surrogate");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return fail(c, "unpaired surrogate");
            }
            if (cp == 0) return fail(c, "NUL in string");
            char tmp[4];
            size_t k = put_utf8(out ? out + n : tmp, cp);
            n += k;
            continue;
        }
        default: return fail(c, "bad escape");
        }
        if (out) out[n] = lit;
        n++;
    }
    *len = n;
    return true;
}

bool m40__json_string(m40_json *c, char **out) {
    *out = NULL;
    if (!m40__json_expect(c, '"')) return false;
    const char *start = c->p;
    size_t n;
    if (!string_body(c, NULL, &n)) return false;
    char *s = malloc(n + 1);
    if (!s) return fail(c, "out of memory");
    c->p = start;
    string_body(c, s, &n);
    s[n] = '\0';
    *out = s;
    return true;
}

bool m40__json_int(m40_json *c, int64_t *out) {
    ws(c);
    bool neg = false;
    if (c->p < c->end && *c->p == '-') { neg = true; c->p++; }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return fail(c, "expected an integer");
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9')
        return fail(c, "leading zero in number");
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p++ - '0');
        if (v > (UINT64_C(9223372036854775807) - d) / 10) return fail(c, "integer overflow");
        v = v * 10 + d;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return fail(c, "expected an integer, got a fraction or exponent");
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool number(m40_json *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return fail(c, "bad number");
    if (*c->p == '0') c->p++;
    else while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return fail(c, "bad number");
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return fail(c, "bad number");
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    return true;
}

static bool literal(m40_json *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return fail(c, "bad literal");
    c->p += n;
    return true;
}

/* An object's key and its ':', validated but not copied. */
static bool skip_key(m40_json *c) {
    size_t n;
    return m40__json_expect(c, '"') && string_body(c, NULL, &n) && m40__json_expect(c, ':');
}

bool m40__json_skip(m40_json *c) {
    /* iterative, with an explicit stack of closers */
    char stack[64];
    int depth = 0;
    for (;;) {
        ws(c);
        if (c->p >= c->end) return fail(c, "unexpected end of JSON");
        char ch = *c->p;
        bool value_done = false;
        if (ch == '{' || ch == '[') {
            if (depth == 64) return fail(c, "JSON nested too deeply");
            stack[depth++] = ch == '{' ? '}' : ']';
            c->p++;
            ws(c);
            if (c->p < c->end && *c->p == stack[depth - 1]) { c->p++; depth--; value_done = true; }
            else if (ch == '{') {
                if (!skip_key(c)) return false;
                continue;
            } else continue;
        } else if (ch == '"') {
            size_t n;
            c->p++;
            if (!string_body(c, NULL, &n)) return false;
            value_done = true;
        } else if (ch == 't') { if (!literal(c, "true")) return false; value_done = true; }
        else if (ch == 'f') { if (!literal(c, "false")) return false; value_done = true; }
        else if (ch == 'n') { if (!literal(c, "null")) return false; value_done = true; }
        else { if (!number(c)) return false; value_done = true; }
        /* after a complete value: close containers or move to the next element */
        while (value_done) {
            if (depth == 0) return true;
            ws(c);
            if (c->p >= c->end) return fail(c, "unexpected end of JSON");
            if (*c->p == stack[depth - 1]) { c->p++; depth--; continue; }
            if (*c->p != ',') return fail(c, "expected ',' in JSON");
            c->p++;
            if (stack[depth - 1] == '}' && !skip_key(c)) return false;
            value_done = false;
        }
    }
}

bool m40__json_next(m40_json *c, char close, bool *done) {
    ws(c);
    if (c->p >= c->end) return fail(c, "unexpected end of JSON");
    if (*c->p == close) { c->p++; *done = true; return true; }
    if (*c->p != ',') return fail(c, "expected ',' in JSON");
    c->p++;
    *done = false;
    return true;
}

bool m40__json_at_end(m40_json *c) {
    ws(c);
    return c->p == c->end;
}
