/* ChatGLM2 chat layer: prompt format, model input ids, answer post-processing
** (the official modeling_chatglm.py chat() / process_response()). */
#include "tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* snprintf-style appender: counts everything, stores what fits. */
typedef struct sbuf {
    char *p;
    size_t cap, len;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->len < b->cap) {
        size_t k = b->cap - b->len < n ? b->cap - b->len : n;
        memcpy(b->p + b->len, s, k);
    }
    b->len += n;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void finish(sbuf *b) {
    if (b->len < b->cap) b->p[b->len] = 0;
}

static void put_round(sbuf *b, size_t i) {
    char num[32];
    int k = snprintf(num, sizeof num, "[Round %zu]\n\n", i);
    put(b, num, (size_t)k);
}

m40_status m40_chatglm_build_prompt(const m40_chat_turn *history, size_t n_history, const char *query,
                                    char *out, size_t cap, size_t *len) {
    if (!query || !len || (!history && n_history) || (!out && cap)) return M40_ERR_INVALID_ARG;
    for (size_t i = 0; i < n_history; i++)
        if (!history[i].query || !history[i].response) return M40_ERR_INVALID_ARG;
    sbuf b = {out, cap, 0};
    for (size_t i = 0; i < n_history; i++) {
        put_round(&b, i + 1);
        puts_(&b, "问：");
        puts_(&b, history[i].query);
        puts_(&b, "\n\n答：");
        puts_(&b, history[i].response);
        puts_(&b, "\n\n");
    }
    put_round(&b, n_history + 1);
    puts_(&b, "问：");
    puts_(&b, query);
    puts_(&b, "\n\n答：");
    finish(&b);
    *len = b.len;
    return M40_OK;
}

m40_status m40_chatglm_encode_chat(m40_tokenizer *tok, const m40_chat_turn *history, size_t n_history,
                                   const char *query, int32_t *ids, size_t cap, size_t *n_ids) {
    if (!tok || !n_ids || (!ids && cap)) {
        if (tok) m40__tok_err(tok, M40_ERR_INVALID_ARG, "chatglm_encode_chat: NULL argument");
        return M40_ERR_INVALID_ARG;
    }
    size_t plen;
    m40_status st = m40_chatglm_build_prompt(history, n_history, query, NULL, 0, &plen);
    if (st) return m40__tok_err(tok, st, "chatglm_encode_chat: NULL query or history string");
    char *prompt = malloc(plen + 1);
    if (!prompt) return m40__tok_err(tok, M40_ERR_OOM_HOST, "chatglm_encode_chat: out of memory");
    m40_chatglm_build_prompt(history, n_history, query, prompt, plen + 1, &plen);
    if (cap > 0) ids[0] = M40_CHATGLM2_GMASK;
    if (cap > 1) ids[1] = M40_CHATGLM2_SOP;
    size_t n = 0;
    st = m40_tokenizer_encode(tok, prompt, plen, cap > 2 ? ids + 2 : NULL, cap > 2 ? cap - 2 : 0, &n);
    free(prompt);
    *n_ids = st ? 0 : n + 2;
    return st;
}

/* str.isspace() for the code points Python counts as whitespace. */
static bool py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool cjk(uint32_t c) { return c >= 0x4E00 && c <= 0x9FFF; }

/* Code point ending right before p[end] (0 if none or invalid). */
static uint32_t cp_before(const uint8_t *p, size_t end) {
    size_t s = end;
    while (s > 0 && end - s < 4) {
        s--;
        if ((p[s] & 0xC0) != 0x80) break;
    }
    if (s == end) return 0;
    size_t mblen;
    uint32_t c = m40__utf8_decode(p + s, end - s, &mblen);
    return (mblen == end - s && (c != 0xFFFD || mblen == 3)) ? c : 0;
}

m40_status m40_chatglm_process_response(const char *in, size_t len, char *out, size_t cap,
                                        size_t *out_len) {
    if ((!in && len) || !out_len || (!out && cap)) return M40_ERR_INVALID_ARG;
    const uint8_t *p = (const uint8_t *)in;
    size_t a = 0, z = len;
    while (a < z) { /* strip() */
        size_t mblen;
        uint32_t c = m40__utf8_decode(p + a, z - a, &mblen);
        if (!py_space(c)) break;
        a += mblen;
    }
    while (z > a) {
        uint32_t c = cp_before(p, z);
        if (!c || !py_space(c)) break;
        size_t mblen = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (z - a < mblen) break;
        z -= mblen;
    }
    /* "[[训练时间]]" -> "2023年": done first, since the new 年 is CJK for step 3. */
    static const char tag[] = "[[训练时间]]";
    const size_t tag_len = sizeof tag - 1;
    uint8_t *tmp = malloc(z - a + 1);
    if (!tmp) return M40_ERR_OOM_HOST;
    size_t n = 0;
    for (size_t i = a; i < z;) {
        if (z - i >= tag_len && memcmp(p + i, tag, tag_len) == 0) {
            memcpy(tmp + n, "2023年", 7); /* 7 bytes < 18-byte tag: fits */
            n += 7;
            i += tag_len;
        } else {
            tmp[n++] = p[i++];
        }
    }
    /* Python applies re.sub per mark, CJK-before then CJK-after; as replacements
    ** are never CJK, that equals "either neighbour is CJK" in one pass. */
    sbuf b = {out, cap, 0};
    for (size_t i = 0; i < n;) {
        const char *full = NULL;
        switch (tmp[i]) {
        case ',': full = "\xEF\xBC\x8C"; break; /* U+FF0C */
        case '!': full = "\xEF\xBC\x81"; break; /* U+FF01 */
        case ':': full = "\xEF\xBC\x9A"; break; /* U+FF1A */
        case ';': full = "\xEF\xBC\x9B"; break; /* U+FF1B */
        case '?': full = "\xEF\xBC\x9F"; break; /* U+FF1F */
        default: break;
        }
        if (full) {
            size_t mblen;
            uint32_t next = i + 1 < n ? m40__utf8_decode(tmp + i + 1, n - i - 1, &mblen) : 0;
            if (cjk(cp_before(tmp, i)) || cjk(next)) {
                put(&b, full, 3);
                i++;
                continue;
            }
        }
        put(&b, (const char *)tmp + i, 1);
        i++;
    }
    free(tmp);
    finish(&b);
    *out_len = b.len;
    return M40_OK;
}

m40_status m40_chatglm_decode_response(m40_tokenizer *tok, const int32_t *ids, size_t n, char *text,
                                       size_t cap, size_t *text_len) {
    if (!tok || !text_len || (!ids && n) || (!text && cap)) {
        if (tok) m40__tok_err(tok, M40_ERR_INVALID_ARG, "chatglm_decode_response: NULL argument");
        return M40_ERR_INVALID_ARG;
    }
    int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
    if (!kept) return m40__tok_err(tok, M40_ERR_OOM_HOST, "chatglm_decode_response: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < M40_CHATGLM2_MASK || ids[i] > M40_CHATGLM2_EOP) kept[k++] = ids[i];
    size_t dlen;
    m40_status st = m40_tokenizer_decode(tok, kept, k, NULL, 0, &dlen);
    char *dec = st ? NULL : malloc(dlen + 1);
    if (!st && !dec) st = m40__tok_err(tok, M40_ERR_OOM_HOST, "chatglm_decode_response: out of memory");
    if (!st) st = m40_tokenizer_decode(tok, kept, k, dec, dlen + 1, &dlen);
    if (!st) {
        st = m40_chatglm_process_response(dec, dlen, text, cap, text_len);
        if (st) m40__tok_err(tok, st, "chatglm_decode_response: out of memory");
    }
    free(dec);
    free(kept);
    return st;
}
