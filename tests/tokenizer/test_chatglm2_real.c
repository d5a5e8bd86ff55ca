/* The real ChatGLM2 tokenizer against the golden ids in docs/models.md.
** Runs when M40_CHATGLM2_TOKENIZER=/path/to/tokenizer.model is set; otherwise
** exits 77 so CTest reports it as skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m40/tokenizer.h"

/* [gMASK, sop] + encode(text) == want */
static int check(m40_tokenizer *tok, const char *text, const int32_t *want, size_t nw) {
    int32_t ids[256] = {M40_CHATGLM2_GMASK, M40_CHATGLM2_SOP};
    size_t n = 0;
    m40_status st = m40_tokenizer_encode(tok, text, strlen(text), ids + 2, 254, &n);
    n += 2;
    if (st || n != nw || memcmp(ids, want, n * sizeof *ids) != 0) {
        fprintf(stderr, "FAIL %s: got", text);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, "\n");
        return 1;
    }
    return 0;
}

int main(void) {
    const char *path = getenv("M40_CHATGLM2_TOKENIZER");
    if (!path || !*path) {
        printf("skipped: set M40_CHATGLM2_TOKENIZER=/path/to/chatglm2 tokenizer.model\n");
        return 77;
    }
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_file(path, &tok);
    if (st) {
        fprintf(stderr, "FAIL load: %s\n", m40_tokenizer_errmsg(tok));
        m40_tokenizer_destroy(tok);
        return 1;
    }
    int fails = 0;
    if (m40_tokenizer_get_vocab_size(tok) != 64789) {
        fprintf(stderr, "FAIL vocab size %d, want 64789\n", (int)m40_tokenizer_get_vocab_size(tok));
        fails++;
    }
    static const int32_t hello[] = {64790, 64792, 36474, 54591};
    static const int32_t round1[] = {64790, 64792, 790, 30951, 517, 30910, 30939, 30996, 13, 13,
                                     54761, 31211, 39701, 13, 13, 55437, 31211};
    fails += check(tok, "你好", hello, sizeof hello / sizeof *hello);
    fails += check(tok, "[Round 1]\n\n问：你好\n\n答：", round1, sizeof round1 / sizeof *round1);
    /* The prompt builder must produce that same second sequence from the query alone. */
    int32_t ids[64];
    size_t n = 0;
    st = m40_chatglm_encode_chat(tok, NULL, 0, "你好", ids, 64, &n);
    if (st || n != sizeof round1 / sizeof *round1 || memcmp(ids, round1, sizeof round1) != 0) {
        fprintf(stderr, "FAIL encode_chat(\"你好\")\n");
        fails++;
    }
    char text[64];
    size_t len = 0;
    st = m40_chatglm_decode_response(tok, hello, 4, text, sizeof text, &len);
    if (st || len != strlen("你好") || memcmp(text, "你好", len) != 0) {
        fprintf(stderr, "FAIL decode_response(hello) = \"%.*s\"\n", (int)len, text);
        fails++;
    }
    m40_tokenizer_destroy(tok);
    printf("chatglm2 real tokenizer: %d failures\n", fails);
    return fails ? 1 : 0;
}
