/* m40-chat's streaming decoder (examples/chatglm2/stream.c) on the test
** tokenizer of make_chat_model.py: no chunk splits a UTF-8 character, ids
** with no piece are skipped, and the chunks add up to the official
** post-processed answer (m40_chatglm_decode_response of the same ids), for
** CJK, emoji (byte-fallback pieces), punctuation next to CJK, whitespace,
** "[[训练时间]]", ChatGLM3's metadata line, and random id sequences.
**   test_chat_stream TOKENIZER_MODEL */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define CHECK(c, ...) \
    do { \
        if (!(c)) { \
            fails++; \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

static m40_tokenizer *tok;
static chat_stream *s3; /* ChatGLM3's: no official decoder here */

/* Streams ids; returns the concatenated chunks (static buffer). */
static const char *stream(chat_stream *s, const int32_t *ids, int n, int *chunks_ok) {
    static char out[1 << 16];
    size_t at = 0;
    const char *t;
    size_t len;
    *chunks_ok = 1;
    chat_stream_begin(s);
    for (int i = 0; i <= n; i++) {
        int rc = i < n ? chat_stream_push(s, ids[i], &t, &len) : chat_stream_finish(s, &t, &len);
        CHECK(rc == 0, "push/finish failed");
        if (!utf8_valid(t, len)) *chunks_ok = 0;
        if (at + len < sizeof out) memcpy(out + at, t, len), at += len;
    }
    out[at] = 0;
    size_t tl;
    const char *all = chat_stream_text(s, &tl);
    CHECK(tl == at && !memcmp(all, out, at), "chat_stream_text != the chunks");
    return out;
}

static int encode(const char *text, int32_t *ids, int cap) {
    size_t n = 0;
    if (m40_tokenizer_encode(tok, text, strlen(text), ids, (size_t)cap, &n) != M40_OK || n > (size_t)cap)
        return -1;
    return (int)n;
}

/* The official answer for ids: specials and pieceless ids dropped, decoded,
** processed. */
static const char *reference(const int32_t *ids, int n) {
    static char out[1 << 16];
    static int32_t keep[4096];
    int k = 0, V = m40_tokenizer_get_vocab_size(tok);
    for (int i = 0; i < n && k < 4096; i++)
        if (ids[i] >= 0 && ids[i] < V) keep[k++] = ids[i];
    size_t len = 0;
    if (m40_chatglm_decode_response(tok, keep, (size_t)k, out, sizeof out, &len) != M40_OK ||
        len >= sizeof out)
        return "(decode failed)";
    return out;
}

static void text_case(chat_stream *s, const char *text, const char *want) {
    int32_t ids[512], mixed[1024];
    int n = encode(text, ids, 512), m = 0, ok;
    CHECK(n > 0, "encode '%s'", text);
    if (n <= 0) return;
    /* specials and padded ids between the pieces: skipped */
    for (int i = 0; i < n; i++) {
        if (i % 3 == 1) mixed[m++] = i % 2 ? M40_CHATGLM2_GMASK : 65000;
        mixed[m++] = ids[i];
    }
    const char *got = stream(s, mixed, m, &ok);
    CHECK(ok, "'%s': a chunk splits a character", text);
    CHECK(!strcmp(got, want), "'%s': got '%s', want '%s'", text, got, want);
    CHECK(!strcmp(got, reference(mixed, m)), "'%s': got '%s', official '%s'", text, got,
          reference(mixed, m));
}

/* The chunk that holds the ',' of "你好,世界" comes with 世, not before. */
static void held_punct(chat_stream *s) {
    int32_t ids[64];
    int n = encode("你好,世界", ids, 64);
    const char *t;
    size_t len;
    char seen[256] = "";
    chat_stream_begin(s);
    for (int i = 0; i < n; i++) {
        chat_stream_push(s, ids[i], &t, &len);
        CHECK(!(len && t[len - 1] == ','), "an ASCII ',' was printed before its neighbour");
        strncat(seen, t, len);
    }
    chat_stream_finish(s, &t, &len);
    strncat(seen, t, len);
    CHECK(!strcmp(seen, "你好，世界"), "got '%s'", seen);
}

/* Text pushed one byte piece at a time (ids 3 + byte: make_chat_model.py's
** byte pieces), so the chunks break at every byte: the held-back tails
** (partial "[[训练时间]]", trailing spaces and punctuation) are hit at each
** length. want: the processed answer. */
static void byte_case(chat_stream *s, const char *text, const char *want) {
    int32_t ids[512];
    int n = 0, ok;
    for (const unsigned char *p = (const unsigned char *)text; *p && n < 512; p++) ids[n++] = 3 + *p;
    const char *got = stream(s, ids, n, &ok);
    CHECK(ok, "bytes of '%s': a chunk splits a character", text);
    CHECK(!strcmp(got, want), "bytes of '%s': got '%s', want '%s'", text, got, want);
    CHECK(s == s3 || !strcmp(got, reference(ids, n)), "bytes of '%s': got '%s', official '%s'", text,
          got, reference(ids, n));
}

/* utf8_valid at the edges of UTF-8 (a mutation run found them untested) */
static void utf8_edges(void) {
    static const struct { const char *s; int ok; } t[] = {
        {"\xC2\x80", 1}, {"\xC1\xBF", 0},                 /* U+0080; overlong U+007F */
        {"\xE0\xA0\x80", 1}, {"\xE0\x9F\xBF", 0},        /* U+0800; overlong U+07FF */
        {"\xF0\x90\x80\x80", 1}, {"\xF0\x8F\xBF\xBF", 0}, /* U+10000; overlong U+FFFF */
        {"\xF4\x8F\xBF\xBF", 1}, {"\xF4\x90\x80\x80", 0}, /* U+10FFFF; U+110000 */
        {"\xED\x9F\xBF", 1}, {"\xED\xA0\x80", 0},        /* U+D7FF; the surrogate U+D800 */
        {"\xED\xBF\xBF", 0}, {"\xEE\x80\x80", 1},        /* U+DFFF; U+E000 */
        {"\xF9\x80\x80\x80", 0}, {"\xF8\x88\x80\x80", 0}, /* 5-byte leads */
        {"a\xE4\xBD", 0}, {"\x80", 0},                     /* cut short; a lone continuation */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECK(utf8_valid(t[i].s, strlen(t[i].s)) == t[i].ok, "utf8_valid case %zu", i);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_chat_stream TOKENIZER_MODEL\n");
        return 2;
    }
    if (m40_tokenizer_load_file(argv[1], &tok) != M40_OK) {
        printf("FAIL tokenizer: %s\n", m40_tokenizer_errmsg(tok));
        return 1;
    }
    chat_stream *s;
    if (chat_stream_create(tok, 0, &s) || chat_stream_create(tok, 1, &s3)) return 1;
    text_case(s, "你好😀世界", "你好😀世界");
    text_case(s, "  emoji 🎉🐼 and 㐀 (CJK ext. A)  ", "emoji 🎉🐼 and 㐀 (CJK ext. A)");
    text_case(s, "你好,世界!真的?好:是;", "你好，世界！真的？好：是；");
    text_case(s, "a, b! 中, x", "a, b! 中， x");
    text_case(s, "训练于[[训练时间]]。", "训练于2023年。");
    text_case(s, "[[训练", "[[训练");
    text_case(s, "\n\n 你好 \n", "你好");
    held_punct(s);
    CHECK(chat_stream_skipped(s) == 0, "held_punct skipped ids");
    utf8_edges();
    byte_case(s, "训练于[[训练时间]]。", "训练于2023年。");
    byte_case(s, "好?真的[[训练]]! ", "好？真的[[训练]]!");
    byte_case(s, "你好\x1c", "你好");          /* U+001C: Python's isspace() */
    byte_case(s, "你好\xc2\xa0", "你好");      /* U+00A0 */
    /* ids without a piece are skipped and counted, a negative one too */
    {
        const char *t;
        size_t len;
        chat_stream_begin(s);
        CHECK(chat_stream_push(s, -1, &t, &len) == 0 && len == 0, "id -1");
        CHECK(chat_stream_push(s, M40_CHATGLM2_GMASK, &t, &len) == 0 && len == 0, "gMASK");
        CHECK(chat_stream_push(s, 65000, &t, &len) == 0 && len == 0, "id 65000");
        CHECK(chat_stream_skipped(s) == 3, "skipped %d ids, want 3", chat_stream_skipped(s));
        chat_stream_begin(s);
        CHECK(chat_stream_skipped(s) == 0, "begin keeps the skipped count");
    }
    /* ChatGLM3: the metadata line */
    int32_t ids[256];
    int n, ok;
    const char *got;
    n = encode("\n你好 [[训练时间]]! ", ids, 256);
    got = stream(s3, ids + 1, n - 1, &ok); /* without the "▁" of the dummy prefix */
    CHECK(ok && !strcmp(got, "你好 2023年!"), "ChatGLM3 content: '%s'", got);
    n = encode("tool_call\n{\"a\": 1}", ids, 256);
    got = stream(s3, ids, n, &ok);
    CHECK(ok && !strcmp(got, "tool_call\n{\"a\": 1}"), "ChatGLM3 with metadata: '%s'", got);
    /* ChatGLM3: "[[训练时间]]" at the very end, multi-byte spaces stripped
    ** whole (U+3000 at both ends), a one-character metadata line */
    byte_case(s3, "\n[[训练时间]]", "2023年");
    byte_case(s3, "\n\xe3\x80\x80你好\xe3\x80\x80", "你好");
    byte_case(s3, "x\n你好 ", "x\n你好 ");
    byte_case(s3, "\n你好\x1c", "你好"); /* str.strip(): U+001C and U+00A0 too */
    byte_case(s3, "\n你好\xc2\xa0", "你好");
    n = encode("no newline ", ids, 256);
    got = stream(s3, ids, n, &ok);
    CHECK(ok && !strcmp(got, "no newline"), "ChatGLM3 without a metadata line: '%s'", got);
    /* random ids over the whole padded vocabulary, bytes weighted up */
    static int32_t r[2000];
    uint64_t x = 18;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 2000; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            uint32_t v = (uint32_t)(x >> 33);
            r[i] = v % 4 == 0 ? 3 + (int32_t)(v / 4 % 256) : (int32_t)(v / 4 % 65024);
        }
        got = stream(s, r, 2000, &ok);
        CHECK(ok, "random ids %d: a chunk splits a character", round);
        CHECK(!strcmp(got, reference(r, 2000)), "random ids %d: the chunks differ from the "
              "official answer", round);
    }
    chat_stream_destroy(s);
    chat_stream_destroy(s3);
    m40_tokenizer_destroy(tok);
    printf("%s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
