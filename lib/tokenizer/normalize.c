/* Text normalization before segmentation, as sentencepiece's normalizer.cc:
** user-defined symbols pass through untouched, the precompiled character map
** (a darts-clone double array whose leaves index NUL-terminated replacement
** strings) rewrites the longest matching prefix, each invalid UTF-8 byte
** becomes U+FFFD, spaces become U+2581, and the dummy prefix / extra-space
** rules apply. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* sentencepiece looks at no more than this many charsmap matches per position. */
#define CHARSMAP_MAX_RESULTS 32
/* ... and this many user-defined symbol matches. */
#define USER_MAX_RESULTS 64

size_t m40__user_match(const m40_tokenizer *tok, const uint8_t *p, size_t n) {
    const m40__trie *t = &tok->user;
    uint32_t node = 0;
    size_t best = 0;
    int hits = 0;
    for (size_t i = 0; i < n && hits < USER_MAX_RESULTS; i++) {
        node = m40__trie_child(t, node, p[i]);
        if (!node) break;
        if (t->value[node] >= 0) {
            best = i + 1;
            hits++;
        }
    }
    return best;
}

/* darts-clone unit accessors. */
static inline bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static inline uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
static inline uint32_t unit_label(uint32_t u) { return u & 0x800000FFu; }
static inline uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

m40_status m40__charsmap_init(m40_tokenizer *tok) {
    const m40__span *s = &tok->m.charsmap;
    if (!s->present || s->len == 0) return M40_OK;
    const uint8_t *blob = tok->m.strings + s->off;
    size_t size = s->len;
    if (size <= 4) return m40__tok_err(tok, M40_ERR_FORMAT, "precompiled_charsmap is broken");
    uint32_t trie_size = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
                         (uint32_t)blob[3] << 24;
    if (trie_size >= size - 4)
        return m40__tok_err(tok, M40_ERR_FORMAT, "precompiled_charsmap: trie larger than blob");
    if (trie_size < 1024 || (trie_size & 0x3FF) != 0)
        return m40__tok_err(tok, M40_ERR_FORMAT, "precompiled_charsmap: trie size not a multiple of 1024");
    const uint8_t *norm = blob + 4 + trie_size;
    size_t norm_len = size - 4 - trie_size;
    if (norm[norm_len - 1] != 0)
        return m40__tok_err(tok, M40_ERR_FORMAT, "precompiled_charsmap: strings not NUL-terminated");

    size_t n = trie_size / 4;
    uint32_t *units = malloc(trie_size);
    if (!units) return m40__tok_err(tok, M40_ERR_OOM_HOST, "out of memory for charsmap");
    for (size_t i = 0; i < n; i++) {
        const uint8_t *b = blob + 4 + 4 * i; /* stored little-endian */
        units[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
    tok->charsmap_owned = units;

    /* darts-clone's validate(): every reachable index stays inside the array
    ** and every leaf points inside the strings, so lookups need no checks. */
    bool ok = unit_label(units[0]) == 0 && !unit_has_leaf(units[0]) && unit_offset(units[0]) != 0 &&
              ((size_t)unit_offset(units[0]) | 0xFF) < n;
    for (size_t i = 1; ok && i < n; i++) {
        uint32_t u = units[i];
        if (unit_label(u) <= 0xFF) {
            if (((i ^ unit_offset(u)) | 0xFF) >= n) ok = false;
            else if (unit_has_leaf(u) && unit_label(units[i ^ unit_offset(u)]) <= 0xFF) ok = false;
        } else if (unit_value(u) >= norm_len) {
            ok = false;
        }
    }
    if (!ok) return m40__tok_err(tok, M40_ERR_FORMAT, "precompiled_charsmap is invalid");
    tok->charsmap_units = units;
    tok->charsmap_n_units = n;
    tok->charsmap_norm = (const char *)norm;
    tok->charsmap_norm_len = norm_len;
    return M40_OK;
}

typedef struct prefix {
    const uint8_t *str;
    size_t len;
    size_t consumed;
} prefix;

static prefix normalize_prefix(const m40_tokenizer *tok, const uint8_t *in, size_t n) {
    prefix r;
    if (tok->has_user) {
        size_t m = m40__user_match(tok, in, n);
        if (m) {
            r.str = in;
            r.len = r.consumed = m;
            return r;
        }
    }
    size_t longest_len = 0;
    uint32_t longest_val = 0;
    if (tok->charsmap_units) {
        const uint32_t *a = tok->charsmap_units;
        size_t pos = unit_offset(a[0]);
        int hits = 0;
        for (size_t i = 0; i < n; i++) {
            pos ^= in[i];
            uint32_t u = a[pos];
            if (unit_label(u) != in[i]) break;
            pos ^= unit_offset(u);
            if (unit_has_leaf(u)) {
                /* Matches come shortest first, so the last kept one is the longest. */
                if (hits < CHARSMAP_MAX_RESULTS) {
                    longest_len = i + 1;
                    longest_val = unit_value(a[pos]);
                }
                hits++;
            }
        }
    }
    if (longest_len == 0) {
        size_t mblen;
        if (!m40__utf8_valid_prefix(in, n, &mblen)) {
            r.str = (const uint8_t *)"\xEF\xBF\xBD";
            r.len = 3;
            r.consumed = 1;
        } else {
            r.str = in;
            r.len = r.consumed = mblen;
        }
        return r;
    }
    r.str = (const uint8_t *)tok->charsmap_norm + longest_val;
    r.len = strlen((const char *)r.str);
    r.consumed = longest_len;
    return r;
}

static bool norm_reserve(m40_tokenizer *tok, size_t need) {
    void *p = tok->norm;
    bool ok = m40__tok_grow(&p, &tok->norm_cap, need, 1, 256);
    tok->norm = p;
    return ok;
}

size_t m40__normalize(m40_tokenizer *tok, const uint8_t *in, size_t n) {
    const m40__model *m = &tok->m;
    const char *ws = m->escape_ws ? M40__SPACE_SYMBOL : " ";
    const size_t ws_len = m->escape_ws ? 3 : 1;
    size_t out = 0;

    if (m->remove_extra_ws) {
        while (n > 0) {
            prefix p = normalize_prefix(tok, in, n);
            if (!(p.len == 1 && p.str[0] == ' ')) break;
            in += p.consumed;
            n -= p.consumed;
        }
    }
    if (n == 0) return 0;
    /* Worst case without a charsmap: 3 bytes per input byte (space or U+FFFD). */
    if (!norm_reserve(tok, n * 3 + 8)) return (size_t)-1;

    if (!m->treat_ws_as_suffix && m->add_dummy_prefix) {
        memcpy(tok->norm, ws, ws_len);
        out = ws_len;
    }
    bool prev_space = m->remove_extra_ws;
    while (n > 0) {
        prefix p = normalize_prefix(tok, in, n);
        const uint8_t *s = p.str;
        size_t sl = p.len;
        while (prev_space && sl > 0 && s[0] == ' ') {
            s++;
            sl--;
        }
        if (sl > 0) {
            if (tok->charsmap_units && !norm_reserve(tok, out + sl * 3 + n * 3 + 8)) return (size_t)-1;
            char *o = tok->norm;
            for (size_t i = 0; i < sl; i++) {
                if (s[i] == ' ') {
                    memcpy(o + out, ws, ws_len);
                    out += ws_len;
                } else {
                    o[out++] = (char)s[i];
                }
            }
            prev_space = s[sl - 1] == ' ';
        }
        in += p.consumed;
        n -= p.consumed;
        if (!m->remove_extra_ws) prev_space = false;
    }
    if (m->remove_extra_ws) {
        while (out >= ws_len && memcmp(tok->norm + out - ws_len, ws, ws_len) == 0) out -= ws_len;
    }
    if (m->treat_ws_as_suffix && m->add_dummy_prefix) {
        memcpy(tok->norm + out, ws, ws_len);
        out += ws_len;
    }
    return out;
}
