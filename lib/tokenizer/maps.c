/* Hash map piece text -> id (BPE merges look up every candidate pair) and a
** byte trie (unigram lattice, user-defined symbols). Both are open-addressing
** tables sized to a load factor <= 1/2 so probes stay short. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* 8 bytes at a time; pieces are short, so hashing cost is a few multiplies. */
uint64_t m40__hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)p[i] << (8 * i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 32;
    return h;
}

m40_status m40__strmap_init(m40__strmap *m, size_t n, const uint8_t *base,
                            const m40__piece *pieces) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) return M40_ERR_OOM_HOST;
    m->mask = (uint32_t)(cap - 1);
    m->base = base;
    m->pieces = pieces;
    return M40_OK;
}

bool m40__strmap_insert(m40__strmap *m, int32_t id) {
    const m40__piece *p = &m->pieces[id];
    const uint8_t *key = m->base + p->off;
    uint32_t i = (uint32_t)m40__hash_bytes(key, p->len) & m->mask;
    for (;;) {
        uint32_t s = m->slots[i];
        if (s == 0) {
            m->slots[i] = (uint32_t)id + 1;
            return true;
        }
        const m40__piece *q = &m->pieces[s - 1];
        if (q->len == p->len && memcmp(m->base + q->off, key, p->len) == 0) return false;
        i = (i + 1) & m->mask;
    }
}

int32_t m40__strmap_find(const m40__strmap *m, const uint8_t *key, size_t len) {
    uint32_t i = (uint32_t)m40__hash_bytes(key, len) & m->mask;
    for (;;) {
        uint32_t s = m->slots[i];
        if (s == 0) return -1;
        const m40__piece *q = &m->pieces[s - 1];
        if (q->len == len && memcmp(m->base + q->off, key, len) == 0) return (int32_t)s - 1;
        i = (i + 1) & m->mask;
    }
}

void m40__strmap_free(m40__strmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static bool trie_grow_edges(m40__trie *t) {
    uint32_t cap = (t->edge_mask + 1) * 2;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *child = malloc(cap * sizeof *child);
    if (!keys || !child) {
        free(keys);
        free(child);
        return false;
    }
    for (uint32_t i = 0; i <= t->edge_mask; i++) {
        uint64_t k = t->edge_keys[i];
        if (!k) continue;
        uint32_t j = (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = k;
        child[j] = t->edge_child[i];
    }
    free(t->edge_keys);
    free(t->edge_child);
    t->edge_keys = keys;
    t->edge_child = child;
    t->edge_mask = cap - 1;
    return true;
}

m40_status m40__trie_init(m40__trie *t) {
    memset(t, 0, sizeof *t);
    t->edge_mask = 255;
    t->edge_keys = calloc(256, sizeof *t->edge_keys);
    t->edge_child = malloc(256 * sizeof *t->edge_child);
    t->cap_nodes = 256;
    t->value = malloc(t->cap_nodes * sizeof *t->value);
    if (!t->edge_keys || !t->edge_child || !t->value) return M40_ERR_OOM_HOST;
    t->n_nodes = 1;
    t->value[0] = -1;
    return M40_OK;
}

int32_t m40__trie_insert(m40__trie *t, const uint8_t *key, size_t len, int32_t id) {
    uint32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t c = m40__trie_child(t, node, key[i]);
        if (!c) {
            if (t->n_nodes == t->cap_nodes) {
                if (t->cap_nodes > UINT32_MAX / 4) return -2;
                int32_t *nv = realloc(t->value, (size_t)t->cap_nodes * 2 * sizeof *nv);
                if (!nv) return -2;
                t->value = nv;
                t->cap_nodes *= 2;
            }
            if ((t->n_edges + 1) * 2 > t->edge_mask + 1 && !trie_grow_edges(t)) return -2;
            c = t->n_nodes++;
            t->value[c] = -1;
            uint64_t k = (((uint64_t)node << 8) | key[i]) + 1;
            uint32_t j = (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & t->edge_mask;
            while (t->edge_keys[j]) j = (j + 1) & t->edge_mask;
            t->edge_keys[j] = k;
            t->edge_child[j] = c;
            t->n_edges++;
        }
        node = c;
    }
    int32_t prev = t->value[node];
    if (prev < 0) t->value[node] = id;
    return prev;
}

void m40__trie_free(m40__trie *t) {
    free(t->edge_keys);
    free(t->edge_child);
    free(t->value);
    memset(t, 0, sizeof *t);
}
