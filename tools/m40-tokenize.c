/* m40-tokenize: SentencePiece encode/decode from the command line.
**
**   m40-tokenize --model tokenizer.model [--chatglm] < text   -> ids
**   m40-tokenize --model tokenizer.model --decode < ids       -> text
**
** Encoding reads all of stdin as one string (bytes as they are) and prints the
** ids separated by spaces. --chatglm wraps stdin as a ChatGLM2 query:
** [gMASK, sop] + encode("[Round 1]\n\n问：{stdin}\n\n答："). Decoding reads ids
** separated by whitespace or commas; with --chatglm it also skips the special
** ids and post-processes the answer like the official chat(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m40/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: m40-tokenize --model FILE [--decode] [--chatglm]\n"
               "  encode (default): stdin text -> ids separated by spaces\n"
               "  --decode:         stdin ids  -> text\n"
               "  --chatglm:        ChatGLM2 prompt format / answer post-processing\n");
}

/* stdin over this is refused (`< /dev/zero` would grow without bound). */
#define MAX_INPUT ((size_t)256 << 20)

static char *read_all(FILE *f, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len > MAX_INPUT) {
            free(buf);
            errno = EFBIG;
            return NULL;
        }
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    *n = len;
    return buf;
}

int main(int argc, char **argv) {
    const char *model = NULL;
    int decode = 0, chatglm = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--decode")) decode = 1;
        else if (!strcmp(argv[i], "--chatglm")) chatglm = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "m40-tokenize: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "m40-tokenize: --model is required\n");
        usage(stderr);
        return 2;
    }
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_file(model, &tok);
    if (st) {
        /* the tokenizer's own message: this tool links only m40_tokenizer */
        fprintf(stderr, "m40-tokenize: cannot load model: %s\n",
                tok ? m40_tokenizer_errmsg(tok) : "out of memory");
        m40_tokenizer_destroy(tok);
        return 1;
    }
    size_t n = 0;
    char *in = read_all(stdin, &n);
    if (!in) {
        if (errno == EFBIG)
            fprintf(stderr, "m40-tokenize: stdin is over the %zu MiB limit\n", MAX_INPUT >> 20);
        else
            fprintf(stderr, "m40-tokenize: cannot read stdin: %s\n", strerror(errno));
        m40_tokenizer_destroy(tok);
        return 1;
    }
    int rc = 0;
    if (!decode) {
        size_t count = 0;
        if (chatglm) st = m40_chatglm_encode_chat(tok, NULL, 0, in, NULL, 0, &count);
        else st = m40_tokenizer_encode(tok, in, n, NULL, 0, &count);
        int32_t *ids = st ? NULL : malloc((count ? count : 1) * sizeof *ids);
        if (!st && !ids) st = M40_ERR_OOM_HOST;
        if (!st) {
            if (chatglm) st = m40_chatglm_encode_chat(tok, NULL, 0, in, ids, count, &count);
            else st = m40_tokenizer_encode(tok, in, n, ids, count, &count);
        }
        if (chatglm && !st && strlen(in) != n)
            fprintf(stderr, "m40-tokenize: warning: --chatglm input stops at its first NUL byte\n");
        if (st) {
            fprintf(stderr, "m40-tokenize: encode failed: %s\n", m40_tokenizer_errmsg(tok));
            rc = 1;
        } else {
            for (size_t i = 0; i < count; i++) printf(i ? " %d" : "%d", (int)ids[i]);
            printf("\n");
        }
        free(ids);
    } else {
        size_t cap = n / 2 + 1, count = 0;
        int32_t *ids = malloc(cap * sizeof *ids);
        char *p = in;
        while (ids && *p) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',') p++;
            if (!*p) break;
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > INT32_MAX ||
                !(*end == 0 || *end == ' ' || *end == '\t' || *end == '\n' || *end == '\r' || *end == ',')) {
                fprintf(stderr, "m40-tokenize: not an id at input byte %ld: '%.20s'\n", (long)(p - in), p);
                rc = 2;
                break;
            }
            ids[count++] = (int32_t)v;
            p = end;
        }
        if (!ids) {
            fprintf(stderr, "m40-tokenize: out of memory\n");
            rc = 1;
        }
        if (!rc) {
            size_t len = 0;
            st = chatglm ? m40_chatglm_decode_response(tok, ids, count, NULL, 0, &len)
                         : m40_tokenizer_decode(tok, ids, count, NULL, 0, &len);
            char *text = st ? NULL : malloc(len + 1);
            if (!st && !text) st = M40_ERR_OOM_HOST;
            if (!st) {
                st = chatglm ? m40_chatglm_decode_response(tok, ids, count, text, len + 1, &len)
                             : m40_tokenizer_decode(tok, ids, count, text, len + 1, &len);
            }
            if (st) {
                fprintf(stderr, "m40-tokenize: decode failed: %s\n", m40_tokenizer_errmsg(tok));
                rc = 1;
            } else {
                fwrite(text, 1, len, stdout);
            }
            free(text);
        }
        free(ids);
    }
    free(in);
    m40_tokenizer_destroy(tok);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "m40-tokenize: write error: %s\n", strerror(errno));
        return 1;
    }
    return rc;
}
