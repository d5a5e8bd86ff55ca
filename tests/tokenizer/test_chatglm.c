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
