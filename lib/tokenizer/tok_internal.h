/* Private structures of the SentencePiece tokenizer. */
#ifndef M40_TOK_INTERNAL_H
#define M40_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "m40/tokenizer.h"
#include "util.h"

/* Defaults from sentencepiece_model.proto; used when a field is absent. */
#define M40__UNK_SURFACE_DEFAULT " \xE2\x81\x87 "
#define M40__SPACE_SYMBOL "\xE2\x96\x81" /* U+2581 */

typedef struct m40__piece {
    uint32_t off, len; /* text in model->strings */
    float score;
    uint8_t type;      /* m40_piece_type */
} m40__piece;

/* Byte range of the (copied) model file; strings point into it. */
typedef struct m40__span {
    uint32_t off, len;
    bool present;
} m40__span;

/* Everything the encoder needs from ModelProto, parsed by proto.c. */
typedef struct m40__model {
    uint8_t *strings;    /* owned copy of the serialized model */
    size_t strings_len;
    m40__piece *pieces;  /* [n_pieces] */
    int32_t n_pieces;
    size_t cap_pieces;

    int32_t model_type;  /* TrainerSpec.model_type, default UNIGRAM */
    bool byte_fallback;
    bool treat_ws_as_suffix;
    m40__span unk_piece, bos_piece, eos_piece, pad_piece, unk_surface;

    bool add_dummy_prefix, remove_extra_ws, escape_ws;
    m40__span charsmap;     /* NormalizerSpec.precompiled_charsmap */
    m40__span denorm_charsmap;
} m40__model;

/* Open-addressing map from byte strings (slices of a base buffer) to ids. */
typedef struct m40__strmap {
    uint32_t *slots; /* id + 1, 0 = empty */
    uint32_t mask;
    const uint8_t *base;
    const m40__piece *pieces;
} m40__strmap;

/* Byte trie for unigram lattice search and user-defined symbol matching.
** Edges live in a hash keyed by (node, byte). */
typedef struct m40__trie {
    uint64_t *edge_keys;  /* (node << 8 | byte) + 1, 0 = empty */
    uint32_t *edge_child;
    uint32_t edge_mask;
    int32_t *value;       /* [n_nodes] piece id or -1 */
    uint32_t n_nodes, cap_nodes;
    uint32_t n_edges;
} m40__trie;

struct m40_tokenizer {
    m40__model m;
    m40__strmap map;          /* BPE: every piece. Unigram: normal/user/unused. */
    m40__trie lattice;        /* unigram: normal/user-defined/unused pieces */
    m40__trie user;           /* user-defined symbols (prefix matcher) */
    bool has_user;
    int32_t unk_id_model;     /* the UNKNOWN piece, or -1 */
    int32_t unk_id, bos_id, eos_id, pad_id;
    int32_t byte_id[256];     /* id of <0xXX>, -1 without byte fallback */
    float min_score;          /* unigram: min score of NORMAL pieces */
    bool internal_space;      /* some piece has U+2581 after its first char */

    /* Precompiled normalizer: darts double array + NUL-separated outputs. */
    const uint32_t *charsmap_units; /* aligned copy */
    uint32_t *charsmap_owned;
    size_t charsmap_n_units;
    const char *charsmap_norm;
    size_t charsmap_norm_len;

    /* Scratch reused across calls; grows, never shrinks. */
    char *norm;
    size_t norm_cap;
    void *work;
    size_t work_cap;
    int32_t *res_id;        /* encode result before byte fallback */
    uint32_t *res_off, *res_len;
    size_t res_cap, res_n;

    char errmsg[256];
};

/* tokenizer.c: records the message in tok (if not NULL) and returns `st`. */
m40_status m40__tok_err(m40_tokenizer *tok, m40_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* proto.c */
m40_status m40__model_parse(m40_tokenizer *tok, const uint8_t *data, size_t size);

/* maps.c */
uint64_t m40__hash_bytes(const uint8_t *p, size_t n);
m40_status m40__strmap_init(m40__strmap *m, size_t n, const uint8_t *base,
                            const m40__piece *pieces);
/* Inserts id; returns false when an equal key is present. */
bool m40__strmap_insert(m40__strmap *m, int32_t id);
int32_t m40__strmap_find(const m40__strmap *m, const uint8_t *key, size_t len);
void m40__strmap_free(m40__strmap *m);
m40_status m40__trie_init(m40__trie *t);
/* Inserts a key; returns the previous value at that node (-1 if none), or -2 on OOM. */
int32_t m40__trie_insert(m40__trie *t, const uint8_t *key, size_t len, int32_t id);
/* Child of node via byte, or 0 (root is never a child). */
static inline uint32_t m40__trie_child(const m40__trie *t, uint32_t node, uint8_t byte) {
    uint64_t key = (((uint64_t)node << 8) | byte) + 1;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & t->edge_mask;
    for (;;) {
        uint64_t k = t->edge_keys[i];
        if (k == key) return t->edge_child[i];
        if (k == 0) return 0;
        i = (i + 1) & t->edge_mask;
    }
}
void m40__trie_free(m40__trie *t);

/* normalize.c */
m40_status m40__charsmap_init(m40_tokenizer *tok);
/* Longest user-defined symbol at p (sentencepiece's PrefixMatcher), 0 if none. */
size_t m40__user_match(const m40_tokenizer *tok, const uint8_t *p, size_t n);
/* Normalizes text into tok->norm; returns the length or (size_t)-1 on OOM. */
size_t m40__normalize(m40_tokenizer *tok, const uint8_t *text, size_t len);

/* bpe.c / unigram.c: segment tok->norm[0..n) into tok->res_*. */
m40_status m40__bpe_encode(m40_tokenizer *tok, size_t n);
m40_status m40__unigram_encode(m40_tokenizer *tok, size_t n);
/* Appends one (off, len, id) to the result list. */
bool m40__res_push(m40_tokenizer *tok, uint32_t off, uint32_t len, int32_t id);
/* Ensures tok->work holds at least `bytes`. */
bool m40__work_reserve(m40_tokenizer *tok, size_t bytes);

static inline bool m40__is_reserved_type(uint8_t type) {
    return type != M40_PIECE_NORMAL && type != M40_PIECE_USER_DEFINED &&
           type != M40_PIECE_UNUSED;
}

#endif
