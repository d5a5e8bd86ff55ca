/* Malformed and hostile model files must be rejected with a status, never a
** crash (run under ASan/UBSan in CI), and a loaded model must encode and decode
** any bytes. usage: test_tokenizer_malformed MODEL... */
#define _POSIX_C_SOURCE 200809L /* ftruncate, getpid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "m40/tokenizer.h"

static int fails;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (fails++ < 20) {                                                                    \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { /* xorshift64*: fixed seed, reproducible */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* Loads, and if that works, exercises encode/decode; returns the status. */
static m40_status try_load(const void *data, size_t n) {
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_memory(data, n, &tok);
    CHECK(tok != NULL, "load_memory returned no handle");
    CHECK(st == M40_OK || m40_tokenizer_errmsg(tok)[0] != 0, "error without a message");
    if (st == M40_OK) {
        char text[64];
        for (size_t i = 0; i < sizeof text; i++) text[i] = (char)rnd();
        int32_t ids[256];
        size_t n_ids = 0, len = 0;
        CHECK(m40_tokenizer_encode(tok, text, sizeof text, ids, 256, &n_ids) == M40_OK, "encode failed");
        for (size_t i = 0; i < n_ids && i < 256; i++)
            CHECK(ids[i] >= 0 && ids[i] < m40_tokenizer_get_vocab_size(tok), "id %d out of range", (int)ids[i]);
        char out[4096];
        CHECK(m40_tokenizer_decode(tok, ids, n_ids < 256 ? n_ids : 256, out, sizeof out, &len) == M40_OK,
              "decode failed");
    }
    m40_tokenizer_destroy(tok);
    return st;
}

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)sz + 1);
    *n = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    return buf;
}

/* Ends of top-level fields: cutting a file there leaves valid protobuf. */
static int is_boundary(const unsigned char *d, size_t n, size_t cut) {
    size_t pos = 0;
    while (pos < n) {
        if (pos == cut) return 1;
        uint64_t tag = 0, len = 0;
        int sh = 0;
        while (d[pos] & 0x80) tag |= (uint64_t)(d[pos++] & 0x7F) << sh, sh += 7;
        tag |= (uint64_t)d[pos++] << sh;
        if ((tag & 7) != 2) return 0; /* the fixtures only have embedded messages at top level */
        sh = 0;
        while (d[pos] & 0x80) len |= (uint64_t)(d[pos++] & 0x7F) << sh, sh += 7;
        len |= (uint64_t)d[pos++] << sh;
        pos += len;
    }
    return pos == cut;
}

/* Minimal protobuf writer for hand-made models. */
typedef struct { unsigned char b[16384]; size_t n; } buf; /* a piece of 8000 bytes fits */
static void varint(buf *o, uint64_t v) {
    while (v >= 0x80) o->b[o->n++] = (unsigned char)(v | 0x80), v >>= 7;
    o->b[o->n++] = (unsigned char)v;
}
static void field_bytes(buf *o, int f, const void *p, size_t n) {
    varint(o, (uint64_t)f << 3 | 2);
    varint(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void piece(buf *o, const char *text, size_t len, float score, int type) {
    buf p = {{0}, 0};
    field_bytes(&p, 1, text, len);
    varint(&p, 2 << 3 | 5);
    memcpy(p.b + p.n, &score, 4);
    p.n += 4;
    varint(&p, 3 << 3 | 0);
    varint(&p, (uint64_t)type);
    field_bytes(o, 1, p.b, p.n);
}
static void trainer(buf *o, int model_type, int byte_fallback) {
    buf t = {{0}, 0};
    varint(&t, 3 << 3);
    varint(&t, (uint64_t)model_type);
    varint(&t, 35 << 3);
    varint(&t, (uint64_t)byte_fallback);
    field_bytes(o, 2, t.b, t.n);
}

/* A tiny BPE model with a precompiled_charsmap blob (normalizer_spec field
** 2); the load's status, its message into msg. */
static m40_status charsmap_load(const unsigned char *blob, size_t n, char *msg, size_t cap) {
    static buf o, ns;
    o.n = ns.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, -1, 1);
    trainer(&o, 2, 0);
    field_bytes(&ns, 2, blob, n);
    field_bytes(&o, 3, ns.b, ns.n);
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_memory(o.b, o.n, &tok);
    snprintf(msg, cap, "%s", m40_tokenizer_errmsg(tok));
    m40_tokenizer_destroy(tok);
    return st;
}

/* The charsmap's header checks, each named (a mutation run found them
** untested): a trie as large as the blob, a trie of 0 or 1000 bytes, strings
** without their final NUL. */
static void charsmap_header(void) {
    static unsigned char blob[4 + 1024 + 8];
    char msg[256];
    static const struct { uint32_t trie; size_t strings; const char *why; } t[] = {
        {1024, 0, "larger than blob"}, {0, 2, "multiple of 1024"}, {1000, 2, "multiple of 1024"},
        {1024, 2, "NUL-terminated"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        memset(blob, 0, sizeof blob);
        for (int k = 0; k < 4; k++) blob[k] = (unsigned char)(t[i].trie >> (8 * k));
        memcpy(blob + 4 + t[i].trie, "ab", t[i].strings); /* no NUL after them */
        m40_status st = charsmap_load(blob, 4 + t[i].trie + t[i].strings, msg, sizeof msg);
        CHECK(st == M40_ERR_FORMAT && strstr(msg, t[i].why), "charsmap case %zu: %d '%s'", i, (int)st, msg);
    }
    /* the smallest valid trie (256 units: the root's offset 1, the rest
    ** empty) with a value unit (bit 31) at 5 into the strings "a\0": value
    ** 1 is inside them, 2 (their length) is not */
    for (uint32_t v = 1; v <= 2; v++) {
        memset(blob, 0, sizeof blob);
        blob[0] = 0, blob[1] = 4; /* 1024 */
        blob[4 + 1] = 1 << 2;     /* units[0] = 1 << 10 */
        const uint32_t u = 0x80000000u | v;
        for (int k = 0; k < 4; k++) blob[4 + 4 * 5 + k] = (unsigned char)(u >> (8 * k));
        memcpy(blob + 4 + 1024, "a", 2);
        m40_status st = charsmap_load(blob, 4 + 1024 + 2, msg, sizeof msg);
        CHECK(v == 1 ? st == M40_OK : st == M40_ERR_FORMAT && strstr(msg, "invalid"), "charsmap value %u: %d '%s'",
              (unsigned)v, (int)st, msg);
    }
}

static void handmade(void) {
    buf o;
    /* A valid tiny BPE model, to show the writer is right. */
    o.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, -1, 1);
    piece(&o, "b", 1, -2, 1);
    piece(&o, "ab", 2, -0.5f, 1);
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_OK, "valid handmade BPE rejected");
    {
        m40_tokenizer *tok = NULL;
        m40_tokenizer_load_memory(o.b, o.n, &tok);
        int32_t ids[8];
        size_t n = 0;
        m40_tokenizer_encode(tok, "ab", 2, ids, 8, &n);
        /* add_dummy_prefix gives "\u2581ab": "\u2581" is unknown, then "ab" merges. */
        CHECK(n == 2 && ids[0] == 0 && ids[1] == 3, "handmade encode gave %zu ids", n);
        m40_tokenizer_destroy(tok);
    }
    o.n = 0; /* remove_extra_whitespaces (on without a normalizer spec): every
             ** leading space piece is dropped, "▁" then "▁a" decode as "a" */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "\xe2\x96\x81", 3, -1, 1);
    piece(&o, "\xe2\x96\x81" "a", 4, -2, 1);
    piece(&o, "a", 1, -3, 1);
    trainer(&o, 2, 0);
    {
        m40_tokenizer *tok = NULL;
        const int32_t two[2] = {1, 2};
        char text[16];
        size_t len = 0;
        CHECK(m40_tokenizer_load_memory(o.b, o.n, &tok) == M40_OK, "remove_extra_ws model");
        CHECK(m40_tokenizer_decode(tok, two, 2, text, sizeof text, &len) == M40_OK && len == 1 && text[0] == 'a',
              "remove_extra_ws decode: '%.*s'", (int)len, text);
        m40_tokenizer_destroy(tok);
    }
    /* user-defined symbols: the longest one matches ("<x>>" over "<x>") and
    ** stays whole (no merge into "<x>a"); a CONTROL piece is never a merge
    ** ("ab" stays a, b) nor a character's id ("z" is <unk>) */
    o.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "<x>", 3, 0, 4);
    piece(&o, "<x>>", 4, 0, 4);
    piece(&o, "a", 1, -1, 1);
    piece(&o, "b", 1, -2, 1);
    piece(&o, "<x>a", 4, -0.1f, 1);
    piece(&o, "ab", 2, -0.2f, 3);
    piece(&o, "z", 1, -0.3f, 3);
    trainer(&o, 2, 0);
    {
        m40_tokenizer *tok = NULL;
        CHECK(m40_tokenizer_load_memory(o.b, o.n, &tok) == M40_OK, "user-defined model");
        static const struct { const char *text; int n; int32_t ids[4]; } u[] = {
            {"<x>>", 2, {0, 2}}, {"<x>a", 3, {0, 1, 3}}, {"ab", 3, {0, 3, 4}}, {"z", 1, {0}},
        };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
            int32_t ids[8];
            size_t n = 0;
            CHECK(m40_tokenizer_encode(tok, u[i].text, strlen(u[i].text), ids, 8, &n) == M40_OK &&
                      n == (size_t)u[i].n && !memcmp(ids, u[i].ids, n * sizeof *ids),
                  "user-defined '%s': %zu ids [%d %d %d]", u[i].text, n, (int)ids[0], (int)ids[1], n > 2 ? (int)ids[2] : -1);
        }
        m40_tokenizer_destroy(tok);
    }
    /* 16 pieces: the piece map's 16 slots must not all fill (a lookup of a
    ** missing pair would probe forever; ctest's timeout names that) */
    o.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    for (int i = 0; i < 15; i++) {
        char c = (char)('a' + i);
        piece(&o, &c, 1, -1.0f - (float)i, 1);
    }
    trainer(&o, 2, 0);
    {
        m40_tokenizer *tok = NULL;
        int32_t ids[8];
        size_t n = 0;
        CHECK(m40_tokenizer_load_memory(o.b, o.n, &tok) == M40_OK, "16-piece model");
        CHECK(m40_tokenizer_encode(tok, "abz", 3, ids, 8, &n) == M40_OK && n == 4 && ids[1] == 1 && ids[2] == 2,
              "16 pieces: %zu ids", n);
        m40_tokenizer_destroy(tok);
    }
    /* the merge order: the best score first, ties to the leftmost pair, for
    ** negative ("aa" -1) and positive ("dd" +2) scores alike, a positive
    ** before a negative ("ab" +1 over "bc" -1) */
    o.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, -3, 1);
    piece(&o, "b", 1, -3, 1);
    piece(&o, "c", 1, -3, 1);
    piece(&o, "d", 1, -3, 1);
    piece(&o, "aa", 2, -1, 1);
    piece(&o, "ab", 2, 1, 1);
    piece(&o, "bc", 2, -1, 1);
    piece(&o, "dd", 2, 2, 1);
    trainer(&o, 2, 0);
    {
        m40_tokenizer *tok = NULL;
        CHECK(m40_tokenizer_load_memory(o.b, o.n, &tok) == M40_OK, "merge-order model");
        static const struct { const char *text; int32_t ids[3]; } u[] = {
            {"aaa", {0, 5, 1}}, {"ddd", {0, 8, 4}}, {"abc", {0, 6, 3}},
        };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
            int32_t ids[8];
            size_t n = 0;
            CHECK(m40_tokenizer_encode(tok, u[i].text, strlen(u[i].text), ids, 8, &n) == M40_OK && n == 3 &&
                      !memcmp(ids, u[i].ids, sizeof u[i].ids),
                  "merge order '%s': %zu ids [%d %d %d]", u[i].text, n, (int)ids[0], (int)ids[1], (int)ids[2]);
        }
        m40_tokenizer_destroy(tok);
    }
    /* UNUSED pieces (sentencepiece's resegmentation): a merge into one is
    ** split back into the pair it came from, recursively ("abcd" from "ab"
    ** and "cd", "ab" again into a, b); a single character of that type, with
    ** no merge to undo, is <unk> */
    o.n = 0;
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, -1, 1);
    piece(&o, "b", 1, -1, 1);
    piece(&o, "c", 1, -1, 1);
    piece(&o, "d", 1, -1, 1);
    piece(&o, "ab", 2, -0.1f, 5);
    piece(&o, "cd", 2, -0.2f, 1);
    piece(&o, "abcd", 4, -0.3f, 5);
    piece(&o, "e", 1, -1, 5);
    trainer(&o, 2, 0);
    {
        m40_tokenizer *tok = NULL;
        CHECK(m40_tokenizer_load_memory(o.b, o.n, &tok) == M40_OK, "unused-piece model");
        static const struct { const char *text; int n; int32_t ids[5]; } u[] = {
            {"ab", 3, {0, 1, 2}}, {"abcd", 4, {0, 1, 2, 6}}, {"e", 1, {0}}, /* unks merge */
        };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
            int32_t ids[8];
            size_t n = 0;
            CHECK(m40_tokenizer_encode(tok, u[i].text, strlen(u[i].text), ids, 8, &n) == M40_OK &&
                      n == (size_t)u[i].n && !memcmp(ids, u[i].ids, n * sizeof *ids),
                  "unused '%s': %zu ids [%d %d %d]", u[i].text, n, (int)ids[0], (int)ids[1], n > 2 ? (int)ids[2] : -1);
        }
        m40_tokenizer_destroy(tok);
    }
    o.n = 0; /* duplicate piece */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, -1, 1);
    piece(&o, "a", 1, -2, 1);
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "duplicate piece accepted");
    o.n = 0; /* empty piece */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "", 0, -1, 1);
    trainer(&o, 1, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "empty piece accepted");
    o.n = 0; /* no <unk>, no byte fallback */
    piece(&o, "a", 1, -1, 1);
    trainer(&o, 1, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "model without unk accepted");
    o.n = 0; /* byte piece without byte_fallback */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "<0x41>", 6, 0, 6);
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "byte piece without byte_fallback accepted");
    o.n = 0; /* byte_fallback with 1 of 256 byte pieces */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "<0x41>", 6, 0, 6);
    trainer(&o, 2, 1);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "incomplete byte pieces accepted");
    o.n = 0; /* WORD model */
    piece(&o, "<unk>", 5, 0, 2);
    trainer(&o, 3, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_UNSUPPORTED, "WORD model not reported unsupported");
    o.n = 0; /* piece containing NUL */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a\0b", 3, -1, 1);
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "NUL in piece accepted");
    o.n = 0; /* two unknown pieces */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "<unk2>", 6, 0, 2);
    piece(&o, "a", 1, -1, 1);
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "a second unk accepted");
    o.n = 0; /* an infinite score (unigram reads scores) */
    piece(&o, "<unk>", 5, 0, 2);
    piece(&o, "a", 1, 1.0f / 0.0f, 1);
    trainer(&o, 1, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "an infinite score accepted");
    { /* pieces of 7999 bytes load, of 8000 do not (MAX_PIECE_SIZE) */
        static char longp[8000];
        memset(longp, 'x', sizeof longp);
        for (int len = 7999; len <= 8000; len++) {
            o.n = 0;
            piece(&o, "<unk>", 5, 0, 2);
            piece(&o, longp, (size_t)len, -1, 1);
            trainer(&o, 2, 0);
            CHECK(try_load(o.b, o.n) == (len < 8000 ? M40_OK : M40_ERR_FORMAT),
                  "a piece of %d bytes", len);
        }
    }

    /* a valid model, then one unknown top-level field that breaks a rule of
    ** the wire format (a mutation run found these unchecked); the same
    ** field well formed is skipped */
    struct { unsigned char b[256]; size_t n; int ok; const char *what; } tails[8];
    int nt = 0;
    { /* a varint of 10 bytes whose last carries more than the top bit */
        unsigned char t[] = {0x28, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02};
        memcpy(tails[nt].b, t, sizeof t), tails[nt].n = sizeof t, tails[nt].ok = 0, tails[nt++].what = "varint past 64 bits";
        t[10] = 0x01; /* 2^63 + ...: the largest that fits */
        memcpy(tails[nt].b, t, sizeof t), tails[nt].n = sizeof t, tails[nt].ok = 1, tails[nt++].what = "varint of 64 bits";
    }
    { /* fixed64 with 7 bytes, fixed32 with 3 */
        unsigned char t[] = {0x29, 1, 2, 3, 4, 5, 6, 7};
        memcpy(tails[nt].b, t, sizeof t), tails[nt].n = sizeof t, tails[nt].ok = 0, tails[nt++].what = "fixed64 of 7 bytes";
        unsigned char u[] = {0x2D, 1, 2, 3};
        memcpy(tails[nt].b, u, sizeof u), tails[nt].n = sizeof u, tails[nt].ok = 0, tails[nt++].what = "fixed32 of 3 bytes";
    }
    { /* a tag over 32 bits (field 2^32 + 5, varint) */
        buf t = {{0}, 0};
        varint(&t, (1ull << 35) | 5 << 3);
        varint(&t, 1);
        memcpy(tails[nt].b, t.b, t.n), tails[nt].n = t.n, tails[nt].ok = 0, tails[nt++].what = "tag over 32 bits";
    }
    { /* a group closed by another field's end-group */
        unsigned char t[] = {0x2B, 0x34};
        memcpy(tails[nt].b, t, sizeof t), tails[nt].n = sizeof t, tails[nt].ok = 0, tails[nt++].what = "group 5 ended as 6";
    }
    for (int depth = 100; depth <= 101; depth++) { /* groups nested 100 deep (taken), 101 */
        for (int i = 0; i < depth; i++) tails[nt].b[i] = 0x2B, tails[nt].b[depth + i] = 0x2C;
        tails[nt].n = (size_t)(2 * depth), tails[nt].ok = depth == 100;
        tails[nt++].what = depth == 100 ? "groups 100 deep" : "groups 101 deep";
    }
    for (int i = 0; i < nt; i++) {
        o.n = 0;
        piece(&o, "<unk>", 5, 0, 2);
        piece(&o, "a", 1, -1, 1);
        trainer(&o, 2, 0);
        memcpy(o.b + o.n, tails[i].b, tails[i].n);
        o.n += tails[i].n;
        m40_status st = try_load(o.b, o.n);
        CHECK(st == (tails[i].ok ? M40_OK : M40_ERR_FORMAT), "%s: status %d", tails[i].what, (int)st);
    }

    o.n = 0; /* a piece whose score (fixed32) has 3 bytes */
    piece(&o, "<unk>", 5, 0, 2);
    {
        const unsigned char p3[] = {0x0A, 0x01, 'a', 0x15, 0x00, 0x00, 0x80};
        field_bytes(&o, 1, p3, sizeof p3);
    }
    trainer(&o, 2, 0);
    CHECK(try_load(o.b, o.n) == M40_ERR_FORMAT, "a score of 3 bytes accepted");

    static const unsigned char bad[][16] = {
        {0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, /* 11-byte varint */
        {0x0A, 0x80},                                                             /* truncated varint */
        {0x0A, 0x05, 0x0A, 0x01},                                                 /* length past end */
        {0x00, 0x00},                                                             /* field 0 */
        {0x0F, 0x00},                                                             /* wire type 7 */
        {0x0C},                                                                   /* stray end-group */
        {0x0B, 0x08, 0x01},                                                       /* unterminated group */
        {0x0D, 0x01, 0x02},                                                       /* truncated fixed32 */
    };
    static const size_t bad_len[] = {12, 2, 4, 2, 2, 1, 3, 3};
    for (size_t i = 0; i < sizeof bad_len / sizeof *bad_len; i++)
        CHECK(try_load(bad[i], bad_len[i]) == M40_ERR_FORMAT, "bad protobuf #%zu accepted", i);
}

static void api_misuse(const unsigned char *model, size_t n) {
    m40_tokenizer *tok = NULL;
    CHECK(m40_tokenizer_load_memory(model, n, NULL) == M40_ERR_INVALID_ARG, "NULL out");
    CHECK(m40_tokenizer_load_memory(NULL, 5, &tok) == M40_ERR_INVALID_ARG && !tok, "NULL data");
    CHECK(m40_tokenizer_load_file("/nonexistent/x.model", &tok) == M40_ERR_IO, "missing file");
    CHECK(tok && strstr(m40_tokenizer_errmsg(tok), "/nonexistent/x.model"), "IO errmsg lacks path");
    m40_tokenizer_destroy(tok);
    m40_tokenizer_destroy(NULL);
    CHECK(m40_tokenizer_load_memory(model, n, &tok) == M40_OK, "fixture load");
    size_t cnt = 0, len = 0;
    int32_t ids[4];
    CHECK(m40_tokenizer_encode(tok, NULL, 3, ids, 4, &cnt) == M40_ERR_INVALID_ARG, "NULL text");
    CHECK(m40_tokenizer_encode(tok, "hello world", 11, NULL, 0, &cnt) == M40_OK && cnt > 0, "measure");
    size_t full = cnt;
    CHECK(m40_tokenizer_encode(tok, "hello world", 11, ids, 1, &cnt) == M40_OK && cnt == full, "short buffer");
    int32_t oob = m40_tokenizer_get_vocab_size(tok);
    char out[8] = "xxxxxxx";
    CHECK(m40_tokenizer_decode(tok, &oob, 1, out, sizeof out, &len) == M40_ERR_INVALID_ARG, "oob id");
    CHECK(strstr(m40_tokenizer_errmsg(tok), "out of range") != NULL, "oob errmsg");
    int32_t neg = -1;
    CHECK(m40_tokenizer_decode(tok, &neg, 1, out, sizeof out, &len) == M40_ERR_INVALID_ARG, "negative id");
    CHECK(m40_tokenizer_get_piece(tok, oob, NULL, NULL, NULL, NULL) == M40_ERR_INVALID_ARG, "piece oob");
    m40_tokenizer_stream *s = NULL;
    const char *t;
    CHECK(m40_tokenizer_stream_create(tok, &s) == M40_OK, "stream");
    CHECK(m40_tokenizer_stream_push(s, oob, &t, &len) == M40_ERR_INVALID_ARG, "stream oob");
    m40_tokenizer_stream_destroy(s);
    m40_tokenizer_stream_destroy(NULL);
    CHECK(m40_tokenizer_errmsg(NULL)[0] == 0, "errmsg(NULL)");
    m40_tokenizer_destroy(tok);
}

/* Streams ids into out (NUL-terminated); *lens: each push's length. */
static void push_all(m40_tokenizer_stream *s, const int32_t *ids, int n, char *out, size_t *lens) {
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const char *t = "";
        size_t len = 0;
        CHECK(m40_tokenizer_stream_push(s, ids[i], &t, &len) == M40_OK, "stream push %d", (int)ids[i]);
        if (lens) lens[i] = len;
        memcpy(out + at, t, len);
        at += len;
    }
    out[at] = 0;
}

/* The stream's edges on bpe_bf.model (a mutation run found them unpinned):
** byte pieces (ids 3 + byte) give a character with its last byte, not
** before nor after; the dummy prefix's space ("▁hel" 272, "lo" 388, "▁"
** 1570) is dropped at the start again after a reset or a finish, and not
** after bytes. */
static void stream_edges(const unsigned char *model, size_t n) {
    m40_tokenizer *tok = NULL;
    m40_tokenizer_stream *s = NULL;
    CHECK(m40_tokenizer_load_memory(model, n, &tok) == M40_OK && m40_tokenizer_stream_create(tok, &s) == M40_OK,
          "stream_edges: load");
    if (!s) {
        m40_tokenizer_destroy(tok);
        return;
    }
    char out[256];
    size_t lens[8];
    const int32_t bytes[8] = {3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, 3 + 0xD5, 3 + 0xA1, 3 + 'A', 3 + '9'};
    push_all(s, bytes, 8, out, lens);
    CHECK(!strcmp(out, "\xF0\x9F\x98\x80\xD5\xA1" "A9"), "bytes: '%s'", out);
    CHECK(lens[0] == 0 && lens[1] == 0 && lens[2] == 0 && lens[3] == 4 && lens[4] == 0 && lens[5] == 2 && lens[6] == 1,
          "bytes out at %zu %zu %zu %zu %zu %zu %zu", lens[0], lens[1], lens[2], lens[3], lens[4], lens[5], lens[6]);
    static const int32_t hello[2] = {272, 388}, bare[3] = {1570, 272, 388}, after[3] = {3 + 'A', 272, 388},
                         mid[5] = {272, 388, 1570, 272, 388};
    const struct { const int32_t *ids; int n; const char *want; } t[] = {
        {hello, 2, "hello"}, {bare, 3, " hello"}, {after, 3, "A hello"}, {mid, 5, "hello  hello"},
    };
    const char *ft;
    size_t fl;
    for (int k = 0; k < 4; k++) { /* a reset, then finishes, then a reset */
        if (k == 0 || k == 3) m40_tokenizer_stream_reset(s);
        else CHECK(m40_tokenizer_stream_finish(s, &ft, &fl) == M40_OK, "finish");
        push_all(s, t[k].ids, t[k].n, out, NULL);
        CHECK(!strcmp(out, t[k].want), "stream case %d: '%s', want '%s'", k, out, t[k].want);
        size_t len = 0;
        char text[64];
        CHECK(m40_tokenizer_decode(tok, t[k].ids, (size_t)t[k].n, text, sizeof text, &len) == M40_OK &&
              len == strlen(t[k].want) && !memcmp(text, t[k].want, len), "decode case %d", k);
    }
    /* decode into exactly its length: no NUL past the end */
    char text[8] = "ZZZZZZZ";
    size_t len = 0;
    CHECK(m40_tokenizer_decode(tok, hello, 2, text, 5, &len) == M40_OK && len == 5 && text[5] == 'Z',
          "decode into 5 bytes wrote past them");
    m40_tokenizer_stream_destroy(s);
    m40_tokenizer_destroy(tok);
}

/* Issue 15: a model file without end (/dev/zero), a huge sparse file, a
** directory and an oversized buffer are refused quickly with a message. */
static void big_files(void) {
    m40_tokenizer *tok = NULL;
    clock_t t0 = clock();
    m40_status st = m40_tokenizer_load_file("/dev/zero", &tok);
    double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("/dev/zero: %s in %.3f s: %s\n", m40_status_str(st), sec, m40_tokenizer_errmsg(tok));
    CHECK(st == M40_ERR_FORMAT && strstr(m40_tokenizer_errmsg(tok), "64 MiB limit"), "/dev/zero: %d", (int)st);
    CHECK(sec < 5.0, "/dev/zero took %.2f s", sec);
    m40_tokenizer_destroy(tok);

    char path[64];
    snprintf(path, sizeof path, "/tmp/m40_tok_big_%d.model", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f && ftruncate(fileno(f), (off_t)(65 << 20)) == 0, "cannot make a sparse file");
    if (f) fclose(f);
    tok = NULL;
    st = m40_tokenizer_load_file(path, &tok); /* refused from its size, unread */
    CHECK(st == M40_ERR_FORMAT && strstr(m40_tokenizer_errmsg(tok), "limit"), "65 MiB file: %d", (int)st);
    m40_tokenizer_destroy(tok);
    remove(path);

    tok = NULL;
    st = m40_tokenizer_load_file("/tmp", &tok);
    CHECK(st == M40_ERR_IO && strstr(m40_tokenizer_errmsg(tok), "directory"), "directory: %d %s", (int)st,
          m40_tokenizer_errmsg(tok));
    m40_tokenizer_destroy(tok);

    size_t n = ((size_t)64 << 20) + 1;
    unsigned char *z = calloc(1, n);
    tok = NULL;
    st = m40_tokenizer_load_memory(z, n, &tok);
    CHECK(st == M40_ERR_FORMAT && strstr(m40_tokenizer_errmsg(tok), "limit"), "64 MiB + 1 buffer: %d", (int)st);
    m40_tokenizer_destroy(tok);
    free(z);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL...\n", argv[0]);
        return 2;
    }
    int loads = 0;
    for (int a = 1; a < argc; a++) {
        size_t n = 0;
        unsigned char *d = read_file(argv[a], &n);
        if (!d) {
            fprintf(stderr, "FAIL cannot read %s\n", argv[a]);
            return 1;
        }
        CHECK(try_load(d, n) == M40_OK, "%s: fixture itself rejected", argv[a]);
        if (a == 1) api_misuse(d, n), stream_edges(d, n);
        /* Truncations: every cut inside a field must be FORMAT. */
        size_t step = n / 3000 + 1;
        for (size_t cut = 0; cut < n; cut += step + (rnd() % step)) {
            m40_status st = try_load(d, cut);
            loads++;
            if (!is_boundary(d, n, cut)) CHECK(st == M40_ERR_FORMAT, "%s cut at %zu: %s", argv[a], cut, m40_status_str(st));
        }
        /* Random corruption: any status is fine, crashing is not. */
        unsigned char *c = malloc(n);
        for (int k = 0; k < 300; k++) {
            memcpy(c, d, n);
            int flips = 1 + (int)(rnd() % 8);
            for (int j = 0; j < flips; j++) c[rnd() % n] = (unsigned char)rnd();
            try_load(c, n);
            loads++;
        }
        free(c);
        free(d);
    }
    for (int k = 0; k < 2000; k++) { /* pure random bytes */
        unsigned char r[256];
        size_t n = rnd() % sizeof r;
        for (size_t i = 0; i < n; i++) r[i] = (unsigned char)rnd();
        try_load(r, n);
        loads++;
    }
    handmade();
    charsmap_header();
    big_files();
    printf("malformed: %d loads, %d failures\n", loads, fails);
    return fails ? 1 : 0;
}
