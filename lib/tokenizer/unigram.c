/* Unigram segmentation, as sentencepiece's unigram_model.cc EncodeOptimized:
** a Viterbi pass over UTF-8 byte positions keeping only the best path that
** ends at each position. Scores are accumulated in float, in the same order,
** with the same periodic rebasing, so ties and rounding match the reference.
*/
#include "tok_internal.h"

#include <string.h>

/* Reference constants: unknown characters cost min_score - 10, and path scores
** are rebased once they leave +-1e5 so float precision does not drift. */
#define UNK_PENALTY 10.0f
#define SCORE_RESET 100000.0f

typedef struct best {
    int32_t id;
    float score;
    int32_t starts_at; /* -1: no path ends here yet */
} best;

m40_status m40__unigram_encode(m40_tokenizer *tok, size_t n) {
    tok->res_n = 0;
    if (n == 0) return M40_OK;
    if (n > INT32_MAX / 2) return M40_ERR_UNSUPPORTED;
    if (!m40__work_reserve(tok, (n + 1) * sizeof(best))) return M40_ERR_OOM_HOST;
    best *b = tok->work;
    for (size_t i = 0; i <= n; i++) b[i] = (best){-1, 0.0f, -1};

    const uint8_t *text = (const uint8_t *)tok->norm;
    const m40__trie *t = &tok->lattice;
    const m40__piece *pieces = tok->m.pieces;
    const float unk_score = tok->min_score - UNK_PENALTY;
    size_t max_frontier = 0;

    for (size_t start = 0; start < n;) {
        float till_here = b[start].score;
        if (till_here < -SCORE_RESET || till_here > SCORE_RESET) {
            const float offset = till_here;
            for (size_t i = start; i <= max_frontier; i++)
                if (i == start || b[i].starts_at != -1) b[i].score -= offset;
            till_here = 0.0f;
        }
        size_t mblen = m40__one_char_len(text[start]);
        if (mblen > n - start) mblen = n - start;
        bool has_single = false;
        uint32_t node = 0;
        for (size_t pos = start; pos < n;) {
            node = m40__trie_child(t, node, text[pos]);
            pos++;
            if (!node) break;
            int32_t id = t->value[node];
            if (id < 0 || pieces[id].type == M40_PIECE_UNUSED) continue;
            if (pos > max_frontier) max_frontier = pos;
            size_t length = pos - start;
            float score = pieces[id].type == M40_PIECE_USER_DEFINED
                              ? (float)(0.1 * (double)((int)length - 1))
                              : pieces[id].score;
            float cand = score + till_here;
            best *tgt = &b[pos];
            if (tgt->starts_at == -1 || cand > tgt->score) {
                tgt->score = cand;
                tgt->starts_at = (int32_t)start;
                tgt->id = id;
            }
            if (!has_single && length == mblen) has_single = true;
        }
        if (!has_single) {
            if (start + mblen > max_frontier) max_frontier = start + mblen;
            best *tgt = &b[start + mblen];
            float cand = unk_score + till_here;
            if (tgt->starts_at == -1 || cand > tgt->score) {
                tgt->score = cand;
                tgt->starts_at = (int32_t)start;
                tgt->id = tok->unk_id_model;
            }
        }
        start += mblen;
    }

    for (size_t end = n; end > 0;) {
        const best *nd = &b[end];
        size_t s = (size_t)nd->starts_at;
        if (!m40__res_push(tok, (uint32_t)s, (uint32_t)(end - s), nd->id)) return M40_ERR_OOM_HOST;
        end = s;
    }
    /* Backtracking produced the pieces last-first. */
    for (size_t i = 0, j = tok->res_n ? tok->res_n - 1 : 0; i < j; i++, j--) {
        int32_t ti = tok->res_id[i];
        uint32_t to = tok->res_off[i], tl = tok->res_len[i];
        tok->res_id[i] = tok->res_id[j];
        tok->res_off[i] = tok->res_off[j];
        tok->res_len[i] = tok->res_len[j];
        tok->res_id[j] = ti;
        tok->res_off[j] = to;
        tok->res_len[j] = tl;
    }
    return M40_OK;
}
