/* Decoding, as sentencepiece's DecodeOptimized, written as a streaming state
** machine so that the batch decoder and the incremental one are the same code.
**
** Byte pieces queue up; the reference turns the queue into text one character
** at a time (a byte that does not start a valid character becomes U+FFFD). A
** character's fate depends only on its own (at most 4) bytes, so the stream
** emits each character once its bytes are all there and holds back at most 3.
*/
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

struct m40_tokenizer_stream {
    const m40_tokenizer *tok;
    uint8_t pending[4];
    size_t n_pending;
    bool bos_ws;       /* still expecting the dummy-prefix space */
    size_t total;      /* bytes emitted since the sequence started */
    char *out;
    size_t out_len, out_cap;
};

static bool out_append(m40_tokenizer_stream *s, const void *p, size_t n) {
    if (n == 0) return true;
    if (s->out_len + n > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 64;
        while (cap < s->out_len + n) {
            if (cap > SIZE_MAX / 2) return false;
            cap *= 2;
        }
        char *q = realloc(s->out, cap);
        if (!q) return false;
        s->out = q;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
    s->total += n;
    return true;
}

/* Bytes a character starting with c needs before its fate is known. */
static size_t needed(uint8_t c) {
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

/* Emits decided characters from the queue; with `all`, the queue has ended. */
static bool drain(m40_tokenizer_stream *s, bool all) {
    while (s->n_pending > 0) {
        if (!all && s->n_pending < needed(s->pending[0])) break;
        size_t mblen;
        bool ok;
        if (m40__utf8_valid_prefix(s->pending, s->n_pending, &mblen)) {
            ok = out_append(s, s->pending, mblen);
        } else {
            ok = out_append(s, "\xEF\xBF\xBD", 3);
        }
        if (!ok) return false;
        s->n_pending -= mblen;
        memmove(s->pending, s->pending + mblen, s->n_pending);
    }
    return true;
}

static bool push_id(m40_tokenizer_stream *s, int32_t id) {
    const m40_tokenizer *tok = s->tok;
    const m40__piece *p = &tok->m.pieces[id];
    const uint8_t *t = tok->m.strings + p->off;
    size_t n = p->len;
    if (p->type == M40_PIECE_BYTE) {
        /* Validated at load: BYTE pieces are exactly "<0xXX>". */
        uint8_t hi = t[3], lo = t[4];
        uint8_t b = (uint8_t)(((hi <= '9' ? hi - '0' : hi - 'A' + 10) << 4) |
                              (lo <= '9' ? lo - '0' : lo - 'A' + 10));
        s->pending[s->n_pending++] = b;
        return drain(s, false);
    }
    if (!drain(s, true)) return false;
    if (s->total > 0) s->bos_ws = false;
    if (p->type == M40_PIECE_CONTROL) return true;

    bool has_bos_ws = false;
    if (s->bos_ws && (tok->m.add_dummy_prefix || tok->m.remove_extra_ws)) {
        if (n >= 3 && memcmp(t, M40__SPACE_SYMBOL, 3) == 0) {
            t += 3;
            n -= 3;
            has_bos_ws = true;
        }
        /* With remove_extra_whitespaces every leading space piece is dropped. */
        if (tok->m.remove_extra_ws) has_bos_ws = false;
    }
    if (id == tok->unk_id || p->type == M40_PIECE_UNKNOWN) {
        const m40__span *u = &tok->m.unk_surface;
        bool ok = u->present ? out_append(s, tok->m.strings + u->off, u->len)
                             : out_append(s, M40__UNK_SURFACE_DEFAULT, strlen(M40__UNK_SURFACE_DEFAULT));
        if (!ok) return false;
    } else {
        size_t run = 0; /* copy runs between U+2581, which becomes a space */
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(t + i, M40__SPACE_SYMBOL, 3) == 0) {
                if (!out_append(s, t + run, i - run) || !out_append(s, " ", 1)) return false;
                i += 3;
                run = i;
            } else {
                i++;
            }
        }
        if (!out_append(s, t + run, n - run)) return false;
    }
    if (has_bos_ws || s->total > 0) s->bos_ws = false;
    return true;
}

static void stream_init(m40_tokenizer_stream *s, const m40_tokenizer *tok) {
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->bos_ws = true;
}

m40_status m40_tokenizer_stream_create(const m40_tokenizer *tok, m40_tokenizer_stream **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (!tok) return M40_ERR_INVALID_ARG;
    m40_tokenizer_stream *s = malloc(sizeof *s);
    if (!s) return M40_ERR_OOM_HOST;
    stream_init(s, tok);
    *out = s;
    return M40_OK;
}

m40_status m40_tokenizer_stream_push(m40_tokenizer_stream *s, int32_t id, const char **text,
                                     size_t *len) {
    if (!s || !text || !len) return M40_ERR_INVALID_ARG;
    *text = "";
    *len = 0;
    if (id < 0 || id >= s->tok->m.n_pieces) return M40_ERR_INVALID_ARG;
    s->out_len = 0;
    if (!push_id(s, id)) return M40_ERR_OOM_HOST;
    *text = s->out ? s->out : "";
    *len = s->out_len;
    return M40_OK;
}

m40_status m40_tokenizer_stream_finish(m40_tokenizer_stream *s, const char **text, size_t *len) {
    if (!s || !text || !len) return M40_ERR_INVALID_ARG;
    *text = "";
    *len = 0;
    s->out_len = 0;
    bool ok = drain(s, true);
    *text = s->out ? s->out : "";
    *len = s->out_len;
    s->n_pending = 0;
    s->bos_ws = true;
    s->total = 0;
    return ok ? M40_OK : M40_ERR_OOM_HOST;
}

void m40_tokenizer_stream_reset(m40_tokenizer_stream *s) {
    if (!s) return;
    s->n_pending = 0;
    s->bos_ws = true;
    s->total = 0;
    s->out_len = 0;
}

void m40_tokenizer_stream_destroy(m40_tokenizer_stream *s) {
    if (!s) return;
    free(s->out);
    free(s);
}

m40_status m40_tokenizer_decode(m40_tokenizer *tok, const int32_t *ids, size_t n, char *text,
                                size_t cap, size_t *text_len) {
    if (!tok || !text_len || (!ids && n) || (!text && cap)) {
        if (tok) m40__tok_err(tok, M40_ERR_INVALID_ARG, "decode: NULL argument");
        return M40_ERR_INVALID_ARG;
    }
    *text_len = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tok->m.n_pieces)
            return m40__tok_err(tok, M40_ERR_INVALID_ARG, "decode: id %ld at position %zu is out of range [0, %ld)",
                                (long)ids[i], i, (long)tok->m.n_pieces);
    m40_tokenizer_stream s;
    stream_init(&s, tok);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) ok = push_id(&s, ids[i]);
    if (ok) ok = drain(&s, true);
    if (!ok) {
        free(s.out);
        return m40__tok_err(tok, M40_ERR_OOM_HOST, "decode: out of memory");
    }
    size_t k = s.out_len < cap ? s.out_len : cap;
    if (k) memcpy(text, s.out, k);
    if (s.out_len < cap) text[s.out_len] = 0;
    *text_len = s.out_len;
    free(s.out);
    return M40_OK;
}
