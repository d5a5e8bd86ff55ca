/* Public tokenizer API: loading and checking a model the way sentencepiece's
** SentencePieceProcessor::Load and ModelInterface::InitializePieces do, the
** encode post-pass (byte fallback, merged unknowns) and the decoder. */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include "tok_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The reference refuses pieces this long. */
#define MAX_PIECE_SIZE 8000

m40_status m40__tok_err(m40_tokenizer *tok, m40_status st, const char *fmt, ...) {
    if (!tok) return st;
    va_list ap;
    va_start(ap, fmt);
    m40__tok_vmsg(tok->errmsg, sizeof tok->errmsg, st, fmt, ap);
    va_end(ap);
    return st;
}

const char *m40_tokenizer_errmsg(const m40_tokenizer *tok) { return tok ? tok->errmsg : ""; }

bool m40__work_reserve(m40_tokenizer *tok, size_t bytes) {
    return m40__tok_grow(&tok->work, &tok->work_cap, bytes, 1, 4096);
}

bool m40__res_push(m40_tokenizer *tok, uint32_t off, uint32_t len, int32_t id) {
    if (tok->res_n == tok->res_cap) {
        size_t cap = tok->res_cap ? tok->res_cap * 2 : 256;
        int32_t *a = realloc(tok->res_id, cap * sizeof *a);
        if (a) tok->res_id = a;
        uint32_t *b = realloc(tok->res_off, cap * sizeof *b);
        if (b) tok->res_off = b;
        uint32_t *c = realloc(tok->res_len, cap * sizeof *c);
        if (c) tok->res_len = c;
        if (!a || !b || !c) return false;
        tok->res_cap = cap;
    }
    tok->res_id[tok->res_n] = id;
    tok->res_off[tok->res_n] = off;
    tok->res_len[tok->res_n] = len;
    tok->res_n++;
    return true;
}

static inline const uint8_t *piece_text(const m40_tokenizer *tok, int32_t id) {
    return tok->m.strings + tok->m.pieces[id].off;
}

/* "<0xXX>" with upper-case hex, as ByteToPiece writes it; -1 otherwise. */
static int piece_to_byte(const uint8_t *p, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    const char *hi = memchr(hex, p[3], 16), *lo = memchr(hex, p[4], 16);
    if (!p[3] || !p[4] || !hi || !lo) return -1;
    return (int)((hi - hex) * 16 + (lo - hex));
}

static bool contains(const uint8_t *p, size_t n, const char *needle, size_t k) {
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0) return true;
    return false;
}

/* PieceToId as the processor uses it for special names: reserved (control,
** unknown, byte) pieces first for unigram, then the others, else <unk>. */
static int32_t piece_to_id(const m40_tokenizer *tok, const m40__strmap *reserved, const uint8_t *p,
                           size_t n) {
    if (reserved) {
        int32_t id = m40__strmap_find(reserved, p, n);
        if (id >= 0) return id;
    }
    int32_t id = m40__strmap_find(&tok->map, p, n);
    return id >= 0 ? id : tok->unk_id_model;
}

static int32_t special_id(const m40_tokenizer *tok, const m40__strmap *reserved, const m40__span *s,
                          const char *def, uint8_t want) {
    const uint8_t *p = (const uint8_t *)def;
    size_t n = strlen(def);
    if (s->present && s->len > 0) { /* an empty name means the default, as RETURN_PIECE does */
        p = tok->m.strings + s->off;
        n = s->len;
    }
    int32_t id = piece_to_id(tok, reserved, p, n);
    return (id >= 0 && tok->m.pieces[id].type == want) ? id : -1;
}

static m40_status init_pieces(m40_tokenizer *tok) {
    m40__model *m = &tok->m;
    const bool unigram = m->model_type == M40_TOKENIZER_UNIGRAM;
    m40__strmap reserved = {0};
    m40_status st;

    if (m->model_type != M40_TOKENIZER_UNIGRAM && m->model_type != M40_TOKENIZER_BPE)
        return m40__tok_err(tok, M40_ERR_UNSUPPORTED, "model_type %d (WORD/CHAR) is not supported",
                            (int)m->model_type);
    if (m->denorm_charsmap.present && m->denorm_charsmap.len > 0)
        return m40__tok_err(tok, M40_ERR_UNSUPPORTED, "denormalizer charsmap is not supported");
    for (int32_t i = 0; i < m->n_pieces; i++) {
        if (m->pieces[i].len >= MAX_PIECE_SIZE)
            return m40__tok_err(tok, M40_ERR_FORMAT, "piece %d is too long", (int)i);
        /* The reference's workaround for converters that add a raw "\0" piece. */
        if (m->byte_fallback && m->pieces[i].len == 1 && piece_text(tok, i)[0] == 0)
            m->pieces[i].type = M40_PIECE_UNUSED;
    }
    if ((st = m40__strmap_init(&tok->map, (size_t)m->n_pieces, m->strings, m->pieces)) ||
        (unigram && (st = m40__strmap_init(&reserved, (size_t)m->n_pieces, m->strings, m->pieces))) ||
        (st = m40__trie_init(&tok->user)) || (unigram && (st = m40__trie_init(&tok->lattice)))) {
        m40__strmap_free(&reserved);
        return m40__tok_err(tok, st, "out of memory building piece maps");
    }

    bool byte_found[256] = {0};
    int n_bytes = 0;
    tok->unk_id_model = -1;
    for (int i = 0; i < 256; i++) tok->byte_id[i] = -1;
    st = M40_ERR_FORMAT;
    for (int32_t i = 0; i < m->n_pieces; i++) {
        const m40__piece *p = &m->pieces[i];
        const uint8_t *t = piece_text(tok, i);
        if (p->len == 0) {
            m40__tok_err(tok, st, "piece %d is empty", (int)i);
            goto fail;
        }
        if (p->len == 1 && t[0] == 0 && p->type == M40_PIECE_UNUSED) continue;
        if (memchr(t, 0, p->len)) {
            m40__tok_err(tok, st, "piece %d contains a NUL byte", (int)i);
            goto fail;
        }
        bool normal = !m40__is_reserved_type(p->type);
        m40__strmap *target = (unigram && !normal) ? &reserved : &tok->map;
        if (!m40__strmap_insert(target, i)) {
            m40__tok_err(tok, st, "piece %d (\"%.*s\") is already defined", (int)i,
                         (int)(p->len > 40 ? 40 : p->len), (const char *)t);
            goto fail;
        }
        if (unigram && normal && m40__trie_insert(&tok->lattice, t, p->len, i) == -2) {
            st = M40_ERR_OOM_HOST;
            m40__tok_err(tok, st, "out of memory building the lattice trie");
            goto fail;
        }
        if (!tok->internal_space && p->type != M40_PIECE_CONTROL && p->type != M40_PIECE_UNKNOWN &&
            p->type != M40_PIECE_BYTE) {
            size_t skip = (p->len >= 3 && memcmp(t, M40__SPACE_SYMBOL, 3) == 0) ? 3 : 0;
            if (contains(t + skip, p->len - skip, M40__SPACE_SYMBOL, 3)) tok->internal_space = true;
        }
        if (p->type == M40_PIECE_USER_DEFINED) {
            if (m40__trie_insert(&tok->user, t, p->len, i) == -2) {
                st = M40_ERR_OOM_HOST;
                m40__tok_err(tok, st, "out of memory building the symbol trie");
                goto fail;
            }
            tok->has_user = true;
        }
        if (p->type == M40_PIECE_UNKNOWN) {
            if (tok->unk_id_model >= 0) {
                m40__tok_err(tok, st, "unk is already defined (pieces %d and %d)",
                             (int)tok->unk_id_model, (int)i);
                goto fail;
            }
            tok->unk_id_model = i;
        }
        if (p->type == M40_PIECE_BYTE) {
            if (!m->byte_fallback) {
                m40__tok_err(tok, st, "byte piece %d found although byte_fallback is false", (int)i);
                goto fail;
            }
            int b = piece_to_byte(t, p->len);
            if (b < 0) {
                m40__tok_err(tok, st, "byte piece %d is invalid", (int)i);
                goto fail;
            }
            if (!byte_found[b]) n_bytes++;
            byte_found[b] = true;
            tok->byte_id[b] = i;
        }
    }
    if (tok->unk_id_model < 0 && !m->byte_fallback) {
        m40__tok_err(tok, st, "unk is not defined");
        goto fail;
    }
    if (m->byte_fallback && n_bytes != 256) {
        m40__tok_err(tok, st, "byte_fallback is set but only %d of 256 byte pieces exist", n_bytes);
        goto fail;
    }
    if (unigram) {
        tok->min_score = 3.40282347e+38f; /* FLT_MAX, the reference's start value */
        bool any = false;
        for (int32_t i = 0; i < m->n_pieces; i++) {
            float s = m->pieces[i].score;
            if (isnan(s) || isinf(s)) {
                m40__tok_err(tok, st, "piece %d: score is NaN or Inf", (int)i);
                goto fail;
            }
            if (m->pieces[i].type == M40_PIECE_NORMAL && s < tok->min_score) tok->min_score = s;
            if (!m40__is_reserved_type(m->pieces[i].type) &&
                !(m->pieces[i].len == 1 && piece_text(tok, i)[0] == 0 &&
                  m->pieces[i].type == M40_PIECE_UNUSED))
                any = true;
        }
        if (!any) {
            m40__tok_err(tok, st, "no pieces are loaded");
            goto fail;
        }
    }
    tok->unk_id = special_id(tok, unigram ? &reserved : NULL, &m->unk_piece, "<unk>", M40_PIECE_UNKNOWN);
    tok->bos_id = special_id(tok, unigram ? &reserved : NULL, &m->bos_piece, "<s>", M40_PIECE_CONTROL);
    tok->eos_id = special_id(tok, unigram ? &reserved : NULL, &m->eos_piece, "</s>", M40_PIECE_CONTROL);
    tok->pad_id = special_id(tok, unigram ? &reserved : NULL, &m->pad_piece, "<pad>", M40_PIECE_CONTROL);
    m40__strmap_free(&reserved);
    return M40_OK;
fail:
    m40__strmap_free(&reserved);
    return st;
}

m40_status m40_tokenizer_load_memory(const void *data, size_t size, m40_tokenizer **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (!data && size) return M40_ERR_INVALID_ARG;
    m40_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return M40_ERR_OOM_HOST;
    *out = tok;
    if (size > M40__TOK_MAX_MODEL_BYTES)
        return m40__tok_err(tok, M40_ERR_FORMAT, "model is %zu bytes, over the %zu MiB limit", size,
                            M40__TOK_MAX_MODEL_BYTES >> 20);
    m40_status st = m40__model_parse(tok, data, size);
    if (!st) st = init_pieces(tok);
    if (!st) st = m40__charsmap_init(tok);
    return st;
}

/* Reads at most M40__TOK_MAX_MODEL_BYTES + 1 bytes of f: a regular file's
** size is checked first; a device or FIFO (/dev/zero) is read only up to the
** limit. Returns the status; for M40_ERR_IO, *err is the errno. */
static m40_status read_model(FILE *f, char **out, size_t *n, int *err) {
    struct stat sb;
    size_t cap = 1 << 20, len = 0;
    if (fstat(fileno(f), &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            *err = EISDIR;
            return M40_ERR_IO;
        }
        if (S_ISREG(sb.st_mode)) {
            if ((uint64_t)sb.st_size > M40__TOK_MAX_MODEL_BYTES) {
                *n = (size_t)M40__TOK_MAX_MODEL_BYTES + 1;
                return M40_ERR_FORMAT;
            }
            cap = (size_t)sb.st_size + 1; /* +1 sees growth since the stat */
        }
    }
    char *buf = NULL;
    for (;;) {
        if (len == cap || !buf) {
            size_t nc = !buf ? cap : cap * 2;
            if (nc > M40__TOK_MAX_MODEL_BYTES + 1) nc = M40__TOK_MAX_MODEL_BYTES + 1;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                return M40_ERR_OOM_HOST;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len > M40__TOK_MAX_MODEL_BYTES) {
            free(buf);
            *n = len;
            return M40_ERR_FORMAT;
        }
        if (got == 0) {
            if (ferror(f)) {
                *err = errno;
                free(buf);
                return M40_ERR_IO;
            }
            break;
        }
    }
    *out = buf;
    *n = len;
    return M40_OK;
}

m40_status m40_tokenizer_load_file(const char *path, m40_tokenizer **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (!path) return M40_ERR_INVALID_ARG;
    FILE *f = fopen(path, "rb");
    int err = errno;
    char *buf = NULL;
    size_t len = 0;
    m40_status st = f ? read_model(f, &buf, &len, &err) : M40_ERR_IO;
    if (f) fclose(f);
    if (st == M40_OK) {
        st = m40_tokenizer_load_memory(buf, len, out);
        free(buf);
        if (st && *out) {
            char prev[sizeof (*out)->errmsg];
            memcpy(prev, (*out)->errmsg, sizeof prev);
            m40__tok_err(*out, st, "%s: %s", path, prev);
        }
        return st;
    }
    m40_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return st;
    *out = tok;
    if (st == M40_ERR_IO)
        return m40__tok_err(tok, st, "%s: cannot read: %s", path, strerror(err));
    if (st == M40_ERR_FORMAT)
        return m40__tok_err(tok, st, "%s: model file over the %zu MiB limit (not a SentencePiece model)",
                            path, M40__TOK_MAX_MODEL_BYTES >> 20);
    return m40__tok_err(tok, st, "%s: out of memory reading file", path);
}

void m40_tokenizer_destroy(m40_tokenizer *tok) {
    if (!tok) return;
    free(tok->m.strings);
    free(tok->m.pieces);
    m40__strmap_free(&tok->map);
    m40__trie_free(&tok->lattice);
    m40__trie_free(&tok->user);
    free(tok->charsmap_owned);
    free(tok->norm);
    free(tok->work);
    free(tok->res_id);
    free(tok->res_off);
    free(tok->res_len);
    free(tok);
}

m40_tokenizer_model m40_tokenizer_get_model_type(const m40_tokenizer *tok) {
    return tok ? (m40_tokenizer_model)tok->m.model_type : (m40_tokenizer_model)0;
}
int32_t m40_tokenizer_get_vocab_size(const m40_tokenizer *tok) { return tok ? tok->m.n_pieces : 0; }
int32_t m40_tokenizer_get_unk_id(const m40_tokenizer *tok) { return tok ? tok->unk_id : -1; }
int32_t m40_tokenizer_get_bos_id(const m40_tokenizer *tok) { return tok ? tok->bos_id : -1; }
int32_t m40_tokenizer_get_eos_id(const m40_tokenizer *tok) { return tok ? tok->eos_id : -1; }
int32_t m40_tokenizer_get_pad_id(const m40_tokenizer *tok) { return tok ? tok->pad_id : -1; }

m40_status m40_tokenizer_get_piece(const m40_tokenizer *tok, int32_t id, const char **text, size_t *len,
                               float *score, m40_piece_type *type) {
    if (!tok || id < 0 || id >= tok->m.n_pieces) return M40_ERR_INVALID_ARG;
    const m40__piece *p = &tok->m.pieces[id];
    if (text) *text = (const char *)piece_text(tok, id);
    if (len) *len = p->len;
    if (score) *score = p->score;
    if (type) *type = (m40_piece_type)p->type;
    return M40_OK;
}

m40_status m40_tokenizer_encode(m40_tokenizer *tok, const char *text, size_t len, int32_t *ids,
                                size_t cap, size_t *n_ids) {
    if (!tok || !n_ids || (!text && len) || (!ids && cap)) {
        if (tok) m40__tok_err(tok, M40_ERR_INVALID_ARG, "encode: NULL argument");
        return M40_ERR_INVALID_ARG;
    }
    *n_ids = 0;
    if (len == 0) return M40_OK;
    size_t n = m40__normalize(tok, (const uint8_t *)text, len);
    if (n == (size_t)-1) return m40__tok_err(tok, M40_ERR_OOM_HOST, "encode: out of memory");
    if (n > UINT32_MAX / 2)
        return m40__tok_err(tok, M40_ERR_UNSUPPORTED, "encode: input too long (%zu bytes)", len);
    m40_status st = tok->m.model_type == M40_TOKENIZER_BPE ? m40__bpe_encode(tok, n)
                                                          : m40__unigram_encode(tok, n);
    if (st) return m40__tok_err(tok, st, "encode: %s", m40__tok_status_text(st));

    const m40__piece *pieces = tok->m.pieces;
    const uint8_t *norm = (const uint8_t *)tok->norm;
    size_t count = 0;
    bool prev_unk = false;
#define EMIT(x)                                                                                    \
    do {                                                                                           \
        if (count < cap) ids[count] = (x);                                                         \
        count++;                                                                                   \
    } while (0)
    for (size_t i = 0; i < tok->res_n; i++) {
        int32_t id = tok->res_id[i];
        if (id >= 0 && pieces[id].type == M40_PIECE_CONTROL) {
            EMIT(id);
            prev_unk = false;
            continue;
        }
        bool unk = id < 0 || id == tok->unk_id || pieces[id].type == M40_PIECE_UNKNOWN;
        if (unk && tok->m.byte_fallback) {
            for (uint32_t k = 0; k < tok->res_len[i]; k++) EMIT(tok->byte_id[norm[tok->res_off[i] + k]]);
        } else if (!prev_unk || !unk) {
            EMIT(id); /* runs of unknown pieces collapse into one <unk> */
        }
        prev_unk = unk;
    }
#undef EMIT
    *n_ids = count;
    return M40_OK;
}
