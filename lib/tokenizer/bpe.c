/* BPE segmentation, as sentencepiece's bpe_model.cc (without dropout).
**
** Start from characters (user-defined symbols are single frozen symbols),
** repeatedly merge the adjacent pair whose concatenation is the best-scoring
** piece (ties: leftmost), then split pieces of type UNUSED back into the pairs
** they were merged from. The priority queue holds stale pairs that are skipped
** when popped, exactly like the reference, so the merge order is identical.
*/
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* The reference stops splitting UNUSED pieces at this depth (anti-stack-overflow). */
#define MAX_RESEGMENT_DEPTH 100

typedef struct sym {
    int32_t prev, next;
    uint32_t off, len; /* len 0: merged into its left neighbour */
    bool freeze;
} sym;

typedef struct pair {
    int32_t score_bits; /* float score, compared through its bits as the reference does */
    uint32_t left;
    int32_t right;
    uint32_t size;
} pair;

typedef struct rev_entry {
    uint32_t off, len, loff, llen, roff, rlen;
} rev_entry;

/* The reference's comparator, verbatim in behaviour: true when a ranks below b.
** Negative floats compare reversed as integers; ties go to the smaller left. */
static inline bool pair_less(const pair *a, const pair *b) {
    int32_t i1 = a->score_bits, i2 = b->score_bits;
    if ((i1 & i2) < 0) return i1 > i2 || (i1 == i2 && a->left > b->left);
    bool score_less = ((i1 ^ i2) < 0) ? i1 < 0 : i1 < i2;
    return score_less || (i1 == i2 && a->left > b->left);
}

static void heap_push(pair *h, size_t *n, pair p) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pair_less(&h[parent], &p)) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = p;
}

static void heap_pop(pair *h, size_t *n) {
    pair last = h[--(*n)];
    size_t i = 0, cnt = *n;
    if (cnt == 0) return;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= cnt) break;
        if (c + 1 < cnt && pair_less(&h[c], &h[c + 1])) c++;
        if (!pair_less(&last, &h[c])) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
}

typedef struct bpe_ctx {
    m40_tokenizer *tok;
    const uint8_t *text;
    sym *syms;
    pair *heap;
    size_t n_heap;
    rev_entry *rev;
    size_t n_rev, cap_rev;
} bpe_ctx;

/* PieceToIdNoReserved: every piece is in the map for BPE; a miss is <unk>. */
static inline int32_t lookup(const m40_tokenizer *tok, const uint8_t *p, size_t n) {
    int32_t id = m40__strmap_find(&tok->map, p, n);
    return id < 0 ? tok->unk_id_model : id;
}

static bool add_pair(bpe_ctx *c, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return true;
    const sym *l = &c->syms[left], *r = &c->syms[right];
    if (l->freeze || r->freeze) return true;
    size_t size = (size_t)l->len + r->len;
    const m40_tokenizer *tok = c->tok;
    int32_t id = lookup(tok, c->text + l->off, size);
    if (id == tok->unk_id_model || m40__is_reserved_type(tok->m.pieces[id].type)) return true;
    pair p;
    memcpy(&p.score_bits, &tok->m.pieces[id].score, sizeof p.score_bits);
    p.left = (uint32_t)left;
    p.right = right;
    p.size = (uint32_t)size;
    heap_push(c->heap, &c->n_heap, p);
    if (tok->m.pieces[id].type == M40_PIECE_UNUSED) {
        if (c->n_rev == c->cap_rev) {
            size_t cap = c->cap_rev ? c->cap_rev * 2 : 16;
            rev_entry *nr = realloc(c->rev, cap * sizeof *nr);
            if (!nr) return false;
            c->rev = nr;
            c->cap_rev = cap;
        }
        c->rev[c->n_rev++] = (rev_entry){l->off, (uint32_t)size, l->off, l->len, r->off, r->len};
    }
    return true;
}

/* Latest rev_merge entry for this text (the reference's map keeps the last write). */
static const rev_entry *rev_find(const bpe_ctx *c, uint32_t off, uint32_t len) {
    for (size_t i = c->n_rev; i-- > 0;) {
        const rev_entry *e = &c->rev[i];
        if (e->len == len && memcmp(c->text + e->off, c->text + off, len) == 0) return e;
    }
    return NULL;
}

static bool resegment(bpe_ctx *c, uint32_t off, uint32_t len, int depth) {
    m40_tokenizer *tok = c->tok;
    int32_t id = lookup(tok, c->text + off, len);
    if (depth > MAX_RESEGMENT_DEPTH) return m40__res_push(tok, off, len, id);
    if (id == tok->unk_id_model || m40__is_reserved_type(tok->m.pieces[id].type))
        return m40__res_push(tok, off, len, tok->unk_id_model);
    if (tok->m.pieces[id].type != M40_PIECE_UNUSED) return m40__res_push(tok, off, len, id);
    const rev_entry *e = rev_find(c, off, len);
    if (!e) return m40__res_push(tok, off, len, tok->unk_id_model);
    rev_entry copy = *e; /* c->rev does not move here, but keep the recursion obvious */
    return resegment(c, copy.loff, copy.llen, depth + 1) &&
           resegment(c, copy.roff, copy.rlen, depth + 1);
}

m40_status m40__bpe_encode(m40_tokenizer *tok, size_t n) {
    tok->res_n = 0;
    if (n == 0) return M40_OK;
    if (n > INT32_MAX / 4) return M40_ERR_UNSUPPORTED;
    /* symbols: n; pairs: n initial + 2 per merge < 3n */
    size_t need = n * sizeof(sym) + 3 * n * sizeof(pair) + 16;
    if (!m40__work_reserve(tok, need)) return M40_ERR_OOM_HOST;
    bpe_ctx c = {0};
    c.tok = tok;
    c.text = (const uint8_t *)tok->norm;
    c.syms = tok->work;
    c.heap = (pair *)((char *)tok->work + ((n * sizeof(sym) + 15) & ~(size_t)15));

    int32_t ns = 0;
    for (size_t pos = 0; pos < n;) {
        size_t ml = tok->has_user ? m40__user_match(tok, c.text + pos, n - pos) : 0;
        bool freeze = ml > 0;
        if (!ml) {
            ml = m40__one_char_len(c.text[pos]);
            if (ml > n - pos) ml = n - pos;
        }
        sym *s = &c.syms[ns];
        s->off = (uint32_t)pos;
        s->len = (uint32_t)ml;
        s->freeze = freeze;
        s->prev = ns - 1;
        pos += ml;
        s->next = pos < n ? ns + 1 : -1;
        ns++;
    }

    m40_status st = M40_ERR_OOM_HOST;
    for (int32_t i = 1; i < ns; i++)
        if (!add_pair(&c, i - 1, i)) goto out;

    while (c.n_heap > 0) {
        pair top = c.heap[0];
        sym *l = &c.syms[top.left], *r = &c.syms[top.right];
        heap_pop(c.heap, &c.n_heap);
        if (l->len == 0 || r->len == 0 || l->len + r->len != top.size) continue; /* stale */
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) c.syms[r->next].prev = (int32_t)top.left;
        r->len = 0;
        if (!add_pair(&c, l->prev, (int32_t)top.left)) goto out;
        if (!add_pair(&c, (int32_t)top.left, l->next)) goto out;
    }

    for (int32_t i = 0; i != -1; i = c.syms[i].next)
        if (!resegment(&c, c.syms[i].off, c.syms[i].len, 0)) goto out;
    st = M40_OK;
out:
    free(c.rev);
    return st;
}
