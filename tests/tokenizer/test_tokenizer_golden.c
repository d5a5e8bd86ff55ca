/* Compares encode, decode and the streaming decoder with golden files that the
** reference sentencepiece library produced (tests/fixtures/tokenizer/make_fixtures.py).
**
** usage: test_tokenizer_golden MODEL GOLDEN [MODEL GOLDEN ...]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m40/tokenizer.h"
#include "golden_ids.h"

#define MAX_SHOWN 10

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "-" is empty; returns length or -1. */
static long parse_hex(const char *s, unsigned char *out) {
    if (strcmp(s, "-") == 0) return 0;
    long n = 0;
    for (; s[0] && s[1]; s += 2) {
        int hi = hexval(s[0]), lo = hexval(s[1]);
        if (hi < 0 || lo < 0) return -1;
        out[n++] = (unsigned char)(hi * 16 + lo);
    }
    return s[0] ? -1 : n;
}


/* Strict UTF-8 check (RFC 3629), used on every streamed chunk. */
static int valid_utf8(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n) return 0;
        unsigned cp = k == 1 ? c : k == 2 ? (c & 0x1F) : k == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp < 0xE000))
            return 0;
        i += k;
    }
    return 1;
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
    fprintf(stderr, "    %s:", label);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

static int run(const char *model, const char *golden, int *n_checked) {
    m40_tokenizer *tok = NULL;
    m40_status st = m40_tokenizer_load_file(model, &tok);
    if (st) {
        fprintf(stderr, "FAIL load %s: %s (%s)\n", model, m40_status_str(st), m40_tokenizer_errmsg(tok));
        m40_tokenizer_destroy(tok);
        return 1;
    }
    FILE *f = fopen(golden, "r");
    if (!f) {
        fprintf(stderr, "FAIL cannot open %s\n", golden);
        m40_tokenizer_destroy(tok);
        return 1;
    }
    m40_tokenizer_stream *stream = NULL;
    if (m40_tokenizer_stream_create(tok, &stream)) {
        fprintf(stderr, "FAIL stream_create\n");
        fclose(f);
        m40_tokenizer_destroy(tok);
        return 1;
    }
    size_t line_cap = 1 << 20;
    char *line = malloc(line_cap);
    unsigned char *bytes = malloc(line_cap), *text = malloc(line_cap), *streamed = malloc(line_cap);
    int32_t *want = malloc(line_cap * sizeof *want), *got = malloc(line_cap * sizeof *got);
    int failures = 0, lineno = 0, records = 0;
    while (fgets(line, (int)line_cap, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        char *kind = strtok(line, " "), *a = strtok(NULL, " "), *b = strtok(NULL, " ");
        if (!kind || !a || !b) {
            fprintf(stderr, "FAIL %s:%d: malformed golden line\n", golden, lineno);
            failures++;
            break;
        }
        records++;
        if (kind[0] == 'E') {
            long n = parse_hex(a, bytes), nw = parse_ids(b, want);
            size_t ng = 0;
            if (n < 0 || nw < 0) {
                fprintf(stderr, "FAIL %s:%d: bad record\n", golden, lineno);
                failures++;
                continue;
            }
            st = m40_tokenizer_encode(tok, (const char *)bytes, (size_t)n, got, line_cap, &ng);
            if (st || ng != (size_t)nw || memcmp(got, want, ng * sizeof *got) != 0) {
                if (failures++ < MAX_SHOWN) {
                    fprintf(stderr, "FAIL %s:%d: encode(%s) status=%s\n", golden, lineno, a, m40_status_str(st));
                    print_ids("want", want, (size_t)nw);
                    print_ids("got ", got, ng);
                }
            }
        } else if (kind[0] == 'D') {
            long nw = parse_ids(a, want), n = parse_hex(b, bytes);
            size_t len = 0;
            if (n < 0 || nw < 0) {
                fprintf(stderr, "FAIL %s:%d: bad record\n", golden, lineno);
                failures++;
                continue;
            }
            st = m40_tokenizer_decode(tok, want, (size_t)nw, (char *)text, line_cap, &len);
            if (st || len != (size_t)n || memcmp(text, bytes, len) != 0) {
                if (failures++ < MAX_SHOWN)
                    fprintf(stderr, "FAIL %s:%d: decode status=%s len %zu want %ld: \"%.*s\"\n", golden, lineno,
                            m40_status_str(st), len, n, (int)len, text);
                continue;
            }
            /* The stream must give the same bytes in valid UTF-8 chunks. */
            size_t slen = 0;
            int bad_chunk = 0;
            for (long i = 0; i <= nw; i++) {
                const char *chunk;
                size_t clen;
                st = i < nw ? m40_tokenizer_stream_push(stream, want[i], &chunk, &clen)
                            : m40_tokenizer_stream_finish(stream, &chunk, &clen);
                if (st) break;
                if (!valid_utf8((const unsigned char *)chunk, clen)) bad_chunk = 1;
                memcpy(streamed + slen, chunk, clen);
                slen += clen;
            }
            if (st || bad_chunk || slen != (size_t)n || memcmp(streamed, bytes, slen) != 0) {
                if (failures++ < MAX_SHOWN)
                    fprintf(stderr, "FAIL %s:%d: stream status=%s bad_chunk=%d len %zu want %ld\n", golden,
                            lineno, m40_status_str(st), bad_chunk, slen, n);
                m40_tokenizer_stream_reset(stream);
            }
        } else {
            fprintf(stderr, "FAIL %s:%d: unknown record kind\n", golden, lineno);
            failures++;
        }
    }
    fclose(f);
    if (records < 100) {
        fprintf(stderr, "FAIL %s: only %d records; golden file truncated?\n", golden, records);
        failures++;
    }
    printf("%s: %d records, %d failures\n", golden, records, failures);
    *n_checked += records;
    free(line);
    free(bytes);
    free(text);
    free(streamed);
    free(want);
    free(got);
    m40_tokenizer_stream_destroy(stream);
    m40_tokenizer_destroy(tok);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s MODEL GOLDEN [MODEL GOLDEN ...]\n", argv[0]);
        return 2;
    }
    int failed = 0, checked = 0;
    for (int i = 1; i + 1 < argc; i += 2) failed += run(argv[i], argv[i + 1], &checked);
    printf("%d of %d files passed, %d records\n", (argc - 1) / 2 - failed, (argc - 1) / 2, checked);
    return failed ? 1 : 0;
}
