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

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_chat_stream TOKENIZER_MODEL\n");
        return 2;
    }
    if (m40_tokenizer_load_file(argv[1], &tok) != M40_OK) {
        printf("FAIL tokenizer: %s\n", m40_tokenizer_errmsg(tok));
        return 1;
    }
    chat_stream *s, *s3;
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
