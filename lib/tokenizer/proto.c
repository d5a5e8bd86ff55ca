/* A minimal protobuf wire-format reader for SentencePiece's ModelProto.
**
** Only the fields the encoder and decoder need are kept; everything else is
** skipped the way protobuf skips unknown fields. Like protobuf's proto2 lite
** runtime: a known field with an unexpected wire type is skipped, an enum value
** outside the enum leaves the field unchanged, a repeated embedded message
** appends, a repeated singular message merges, the last scalar wins.
** All reads are bounds-checked: any truncation or bad varint is M40_ERR_FORMAT.
*/
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* protobuf's default recursion limit; only reachable through nested groups. */
#define MAX_DEPTH 100

typedef struct reader {
    const uint8_t *base; /* start of the whole buffer: offsets are relative */
    size_t pos, end;
} reader;

static bool read_varint(reader *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->end) return false;
        uint8_t b = r->base[r->pos++];
        /* The 10th byte may only carry the top bit. */
        if (shift == 63 && b > 1) return false;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static bool read_tag(reader *r, uint32_t *field, int *wt) {
    uint64_t t;
    if (!read_varint(r, &t)) return false;
    if (t > UINT32_MAX) return false;
    *field = (uint32_t)(t >> 3);
    *wt = (int)(t & 7);
    return *field != 0;
}

static bool read_len(reader *r, reader *sub) {
    uint64_t n;
    if (!read_varint(r, &n)) return false;
    if (n > r->end - r->pos) return false;
    sub->base = r->base;
    sub->pos = r->pos;
    sub->end = r->pos + (size_t)n;
    r->pos = sub->end;
    return true;
}

static bool skip_field(reader *r, uint32_t field, int wt, int depth) {
    uint64_t v;
    reader sub;
    switch (wt) {
    case WT_VARINT: return read_varint(r, &v);
    case WT_I64:
        if (r->end - r->pos < 8) return false;
        r->pos += 8;
        return true;
    case WT_I32:
        if (r->end - r->pos < 4) return false;
        r->pos += 4;
        return true;
    case WT_LEN: return read_len(r, &sub);
    case WT_SGROUP:
        if (depth >= MAX_DEPTH) return false;
        for (;;) {
            uint32_t f;
            int w;
            if (!read_tag(r, &f, &w)) return false;
            if (w == WT_EGROUP) return f == field;
            if (!skip_field(r, f, w, depth + 1)) return false;
        }
    default: return false; /* stray end-group, or wire types 6 and 7 */
    }
}

static bool read_f32(reader *r, float *f) {
    if (r->end - r->pos < 4) return false;
    const uint8_t *p = r->base + r->pos;
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    memcpy(f, &u, sizeof *f);
    r->pos += 4;
    return true;
}

static bool read_span(reader *r, m40__span *s) {
    reader sub;
    if (!read_len(r, &sub)) return false;
    s->off = (uint32_t)sub.pos;
    s->len = (uint32_t)(sub.end - sub.pos);
    s->present = true;
    return true;
}

/* Reads a varint for a bool field. */
static bool read_bool(reader *r, bool *b) {
    uint64_t v;
    if (!read_varint(r, &v)) return false;
    *b = v != 0;
    return true;
}

static bool parse_piece(reader *r, m40__piece *p) {
    while (r->pos < r->end) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (!read_tag(r, &f, &wt)) return false;
        if (f == 1 && wt == WT_LEN) {
            m40__span s;
            if (!read_span(r, &s)) return false;
            p->off = s.off;
            p->len = s.len;
        } else if (f == 2 && wt == WT_I32) {
            if (!read_f32(r, &p->score)) return false;
        } else if (f == 3 && wt == WT_VARINT) {
            if (!read_varint(r, &v)) return false;
            if (v >= 1 && v <= 6) p->type = (uint8_t)v;
        } else if (!skip_field(r, f, wt, 0)) {
            return false;
        }
    }
    return true;
}

static bool parse_trainer(reader *r, m40__model *m) {
    while (r->pos < r->end) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (!read_tag(r, &f, &wt)) return false;
        bool ok = true;
        if (f == 3 && wt == WT_VARINT) {
            ok = read_varint(r, &v);
            if (ok && v >= 1 && v <= 4) m->model_type = (int32_t)v;
        } else if (f == 35 && wt == WT_VARINT) {
            ok = read_bool(r, &m->byte_fallback);
        } else if (f == 24 && wt == WT_VARINT) {
            ok = read_bool(r, &m->treat_ws_as_suffix);
        } else if (f == 44 && wt == WT_LEN) {
            ok = read_span(r, &m->unk_surface);
        } else if (f == 45 && wt == WT_LEN) {
            ok = read_span(r, &m->unk_piece);
        } else if (f == 46 && wt == WT_LEN) {
            ok = read_span(r, &m->bos_piece);
        } else if (f == 47 && wt == WT_LEN) {
            ok = read_span(r, &m->eos_piece);
        } else if (f == 48 && wt == WT_LEN) {
            ok = read_span(r, &m->pad_piece);
        } else {
            ok = skip_field(r, f, wt, 0);
        }
        if (!ok) return false;
    }
    return true;
}

static bool parse_normalizer(reader *r, m40__model *m, bool denorm) {
    while (r->pos < r->end) {
        uint32_t f;
        int wt;
        if (!read_tag(r, &f, &wt)) return false;
        bool ok = true;
        if (f == 2 && wt == WT_LEN) {
            ok = read_span(r, denorm ? &m->denorm_charsmap : &m->charsmap);
        } else if (!denorm && f == 3 && wt == WT_VARINT) {
            ok = read_bool(r, &m->add_dummy_prefix);
        } else if (!denorm && f == 4 && wt == WT_VARINT) {
            ok = read_bool(r, &m->remove_extra_ws);
        } else if (!denorm && f == 5 && wt == WT_VARINT) {
            ok = read_bool(r, &m->escape_ws);
        } else {
            ok = skip_field(r, f, wt, 0);
        }
        if (!ok) return false;
    }
    return true;
}

m40_status m40__model_parse(m40_tokenizer *tok, const uint8_t *data, size_t size) {
    m40__model *m = &tok->m;
    if (size > UINT32_MAX)
        return m40__tok_err(tok, M40_ERR_UNSUPPORTED, "model file over 4 GiB");
    m->strings = malloc(size ? size : 1);
    if (!m->strings) return m40__tok_err(tok, M40_ERR_OOM_HOST, "out of memory copying model");
    if (size) memcpy(m->strings, data, size);
    m->strings_len = size;
    m->model_type = M40_TOKENIZER_UNIGRAM;
    m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = true;

    reader r = {m->strings, 0, size};
    while (r.pos < r.end) {
        uint32_t f;
        int wt;
        size_t at = r.pos;
        if (!read_tag(&r, &f, &wt)) goto bad;
        reader sub;
        if (f == 1 && wt == WT_LEN) {
            if (!read_len(&r, &sub)) goto bad;
            if ((size_t)m->n_pieces == m->cap_pieces) {
                size_t cap = m->cap_pieces ? m->cap_pieces * 2 : 1024;
                if (cap > INT32_MAX) goto bad;
                m40__piece *np = realloc(m->pieces, cap * sizeof *np);
                if (!np) return m40__tok_err(tok, M40_ERR_OOM_HOST, "out of memory reading pieces");
                m->pieces = np;
                m->cap_pieces = cap;
            }
            m40__piece *p = &m->pieces[m->n_pieces];
            memset(p, 0, sizeof *p);
            p->type = M40_PIECE_NORMAL;
            if (!parse_piece(&sub, p)) {
                return m40__tok_err(tok, M40_ERR_FORMAT, "malformed piece #%d at byte %zu",
                                    (int)m->n_pieces, at);
            }
            m->n_pieces++;
        } else if (f == 2 && wt == WT_LEN) {
            if (!read_len(&r, &sub) || !parse_trainer(&sub, m)) goto bad;
        } else if (f == 3 && wt == WT_LEN) {
            if (!read_len(&r, &sub) || !parse_normalizer(&sub, m, false)) goto bad;
        } else if (f == 5 && wt == WT_LEN) {
            if (!read_len(&r, &sub) || !parse_normalizer(&sub, m, true)) goto bad;
        } else if (!skip_field(&r, f, wt, 0)) {
            goto bad;
        }
        continue;
    bad:
        return m40__tok_err(tok, M40_ERR_FORMAT,
                            "not a SentencePiece model: malformed protobuf near byte %zu", at);
    }
    return M40_OK;
}
