/* ChatGLM2 layer against goldens from the official Python code
** (tests/fixtures/tokenizer/chatglm.golden, made by make_fixtures.py):
**   P: process_response(input) == output
**   C: build_prompt(history, query) == prompt and
**      [gMASK, sop] + encode(prompt) == ids, with the bpe_bf fixture model.
** usage: test_chatglm MODEL GOLDEN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m40/tokenizer.h"
#include "golden_ids.h"

#define CAP (1 << 20)

static long unhex(const char *s, char *out) {
    if (strcmp(s, "-") == 0) {
        out[0] = 0;
        return 0;
    }
    long n = 0;
    for (; s[0] && s[1] && s[0] != ':' && s[0] != ','; s += 2) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1) return -1;
        out[n++] = (char)v;
    }
    out[n] = 0;
    return n;
}


int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL GOLDEN\n", argv[0]);
        return 2;
    }
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_file(argv[1], &tok);
    if (st) {
        fprintf(stderr, "FAIL load: %s\n", m40_tokenizer_errmsg(tok));
        m40_tokenizer_destroy(tok);
        return 1;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        fprintf(stderr, "FAIL cannot open %s\n", argv[2]);
        m40_tokenizer_destroy(tok);
        return 1;
    }
    char *line = malloc(CAP), *a = malloc(CAP), *b = malloc(CAP), *got = malloc(CAP);
    int32_t *want = malloc(CAP * sizeof *want), *ids = malloc(CAP * sizeof *ids);
    char *hist_text = malloc(CAP);
    m40_chat_turn turns[16];
    int fails = 0, n_p = 0, n_c = 0, lineno = 0;
    while (fgets(line, CAP, f)) {
        lineno++;
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *kind = strtok(line, " ");
        if (!kind) continue;
        if (kind[0] == 'P') {
            char *in = strtok(NULL, " "), *out = strtok(NULL, " ");
            long ni = in ? unhex(in, a) : -1, no = out ? unhex(out, b) : -1;
            size_t len = 0;
            n_p++;
            st = (ni < 0 || no < 0) ? M40_ERR_FORMAT : m40_chatglm_process_response(a, (size_t)ni, got, CAP, &len);
            if (st || len != (size_t)no || memcmp(got, b, len) != 0) {
                if (fails++ < 10) fprintf(stderr, "FAIL line %d: process_response got \"%.*s\" want \"%s\"\n", lineno, (int)len, got, b);
            }
        } else if (kind[0] == 'C') {
            char *h = strtok(NULL, " "), *q = strtok(NULL, " "), *p = strtok(NULL, " "), *idstr = strtok(NULL, " ");
            if (!h || !q || !p || !idstr) {
                fails++;
                continue;
            }
            n_c++;
            size_t nh = 0, used = 0;
            if (strcmp(h, "-") != 0) {
                for (char *s = h; *s && nh < 16;) { /* qhex:rhex,qhex:rhex */
                    turns[nh].query = hist_text + used;
                    used += (size_t)unhex(s, hist_text + used) + 1;
                    s = strchr(s, ':') + 1;
                    turns[nh].response = hist_text + used;
                    used += (size_t)unhex(s, hist_text + used) + 1;
                    nh++;
                    char *c = strchr(s, ',');
                    if (!c) break;
                    s = c + 1;
                }
            }
            unhex(q, a);
            long np = unhex(p, b), nw = parse_ids(idstr, want);
            size_t len = 0, n = 0;
            st = m40_chatglm_build_prompt(turns, nh, a, got, CAP, &len);
            if (st || len != (size_t)np || memcmp(got, b, len) != 0) {
                if (fails++ < 10) fprintf(stderr, "FAIL line %d: prompt \"%.*s\"\n", lineno, (int)len, got);
                continue;
            }
            st = m40_chatglm_encode_chat(tok, turns, nh, a, ids, CAP, &n);
            if (st || n != (size_t)nw || memcmp(ids, want, n * sizeof *ids) != 0) {
                if (fails++ < 10) fprintf(stderr, "FAIL line %d: encode_chat status %s, %zu ids want %ld\n", lineno, m40_status_str(st), n, nw);
            }
        }
    }
    fclose(f);
    /* decode_response drops the special ids and post-processes. */
    {
        const char *text = "中,文";
        size_t n = 0, len = 0;
        m40_tokenizer_encode(tok, text, strlen(text), ids + 1, CAP - 2, &n);
        ids[0] = M40_CHATGLM2_SOP;
        ids[n + 1] = M40_CHATGLM2_GMASK;
        st = m40_chatglm_decode_response(tok, ids, n + 2, got, CAP, &len);
        if (st || len != strlen("中，文") || memcmp(got, "中，文", len) != 0) {
            fails++;
            fprintf(stderr, "FAIL decode_response: \"%.*s\"\n", (int)len, got);
        }
    }
    /* The edges (a mutation run found them unpinned): the CJK block's first
    ** and last code points, Python's isspace() U+001C, the tag at the very
    ** end, and every special id dropped (MASK..EOP are not in this model). */
    {
        static const struct { const char *in, *out; } t[] = {
            {"\xe4\xb8\x80,", "\xe4\xb8\x80\xef\xbc\x8c"},       /* U+4E00 */
            {"\xe9\xbf\xbf!", "\xe9\xbf\xbf\xef\xbc\x81"},       /* U+9FFF */
            {"\xe3\x90\x80,", "\xe3\x90\x80,"},                   /* U+3400: not CJK here */
            {"\xea\x80\x80?", "\xea\x80\x80?"},                   /* U+A000 */
            {"a\x1c", "a"}, {"\x1d\x1c a", "a"}, {"a\x1b", "a\x1b"},
            {"[[训练时间]]", "2023年"}, {"x[[训练时间]]", "x2023年"},
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            size_t len = 0;
            st = m40_chatglm_process_response(t[i].in, strlen(t[i].in), got, CAP, &len);
            if (st || len != strlen(t[i].out) || memcmp(got, t[i].out, len) != 0) {
                fails++;
                fprintf(stderr, "FAIL process_response edge %zu: \"%.*s\"\n", i, (int)len, got);
            }
        }
        const char *text = "a";
        size_t n = 0, len = 0;
        m40_tokenizer_encode(tok, text, 1, ids, CAP, &n);
        for (int32_t sp = M40_CHATGLM2_MASK; sp <= M40_CHATGLM2_EOP; sp++) ids[n++] = sp;
        st = m40_chatglm_decode_response(tok, ids, n, got, CAP, &len);
        if (st || len != 1 || got[0] != 'a') {
            fails++;
            fprintf(stderr, "FAIL decode_response of MASK..EOP: %s \"%.*s\"\n", m40_status_str(st), (int)len, got);
        }
    }
    /* No byte past cap is written: the prompt's NUL, [gMASK, sop] into 1 id */
    {
        m40_chat_turn h = {"q", "r"}, hn = {NULL, "r"};
        size_t len = 0, n = 0;
        st = m40_chatglm_build_prompt(&h, 1, "x", NULL, 0, &len);
        memset(got, 'Z', len + 2);
        size_t len2 = 0;
        st = st ? st : m40_chatglm_build_prompt(&h, 1, "x", got, len, &len2);
        if (st || len2 != len || got[len] != 'Z') {
            fails++;
            fprintf(stderr, "FAIL build_prompt into exactly its length wrote past it\n");
        }
        ids[1] = -7;
        st = m40_chatglm_encode_chat(tok, &h, 1, "x", ids, 1, &n);
        if (st || ids[0] != M40_CHATGLM2_GMASK || ids[1] != -7 || n < 3) {
            fails++;
            fprintf(stderr, "FAIL encode_chat into 1 id: %s, ids[1] %d\n", m40_status_str(st), (int)ids[1]);
        }
        if (m40_chatglm_build_prompt(&hn, 1, "x", got, CAP, &len) != M40_ERR_INVALID_ARG ||
            m40_chatglm_encode_chat(tok, &hn, 1, "x", ids, CAP, &n) != M40_ERR_INVALID_ARG) {
            fails++;
            fprintf(stderr, "FAIL a NULL history query accepted\n");
        }
    }
    if (n_p < 100 || n_c < 40) {
        fprintf(stderr, "FAIL golden file has only %d P and %d C records\n", n_p, n_c);
        fails++;
    }
    printf("chatglm: %d process_response, %d prompt records, %d failures\n", n_p, n_c, fails);
    free(line);
    free(a);
    free(b);
    free(got);
    free(want);
    free(ids);
    free(hist_text);
    m40_tokenizer_destroy(tok);
    return fails ? 1 : 0;
}
