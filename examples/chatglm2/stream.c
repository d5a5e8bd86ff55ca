/* Streaming an answer as text: see stream.h. */
#include "stream.h"

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

struct chat_stream {
    m40_tokenizer *tok;
    m40_tokenizer_stream *ts;
    int glm3, skipped;
    int32_t vocab;   /* the tokenizer's pieces */
    buf raw;         /* the decoded answer, before post-processing */
    buf out;         /* the processed answer as emitted so far */
    buf tmp;         /* scratch: the processed text of a prefix */
};

static int buf_reserve(buf *b, size_t n) {
    if (n + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n + 1) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_add(buf *b, const char *s, size_t n) {
    if (n > SIZE_MAX - b->n - 1 || buf_reserve(b, b->n + n)) return -1;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

int utf8_valid(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n) return 0;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k;
    }
    return 1;
}

int chat_stream_create(m40_tokenizer *tok, int glm3, chat_stream **out) {
    chat_stream *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return -1;
    s->tok = tok;
    s->glm3 = glm3;
    s->vocab = m40_tokenizer_get_vocab_size(tok);
    if (m40_tokenizer_stream_create(tok, &s->ts) != M40_OK) {
        free(s);
        return -1;
    }
    chat_stream_begin(s);
    *out = s;
    return 0;
}

void chat_stream_destroy(chat_stream *s) {
    if (!s) return;
    m40_tokenizer_stream_destroy(s->ts);
    free(s->raw.p);
    free(s->out.p);
    free(s->tmp.p);
    free(s);
}

void chat_stream_begin(chat_stream *s) {
    m40_tokenizer_stream_reset(s->ts);
    s->raw.n = s->out.n = 0;
    s->skipped = 0;
    buf_add(&s->raw, "", 0);
    buf_add(&s->out, "", 0);
}

const char *chat_stream_text(const chat_stream *s, size_t *len) {
    if (len) *len = s->out.n;
    return s->out.p ? s->out.p : "";
}

int chat_stream_skipped(const chat_stream *s) { return s->skipped; }

/* The code point that ends at s[n-1] (n > 0, valid UTF-8) and its length. */
static uint32_t last_cp(const char *str, size_t n, size_t *k) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = n - 1;
    while (i > 0 && (s[i] & 0xC0) == 0x80 && n - i < 4) i--;
    *k = n - i;
    uint32_t c = s[i];
    if (*k == 1) return c;
    c &= 0x7F >> *k;
    for (size_t j = i + 1; j < n; j++) c = c << 6 | (s[j] & 0x3F);
    return c;
}

/* Python's str.isspace(), which str.strip() uses. */
static int is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static const char TRAIN[] = "[[训练时间]]";

/* How much of raw[0..n) is final: the tail that post-processing could still
** change (see stream.h) is held back. */
static size_t stable_len(const char *raw, size_t n) {
    for (;;) {
        size_t m = n, k;
        while (m > 0) {
            uint32_t c = last_cp(raw, m, &k);
            if (!is_space(c) && !(c < 0x80 && strchr(",!:;?", (int)c))) break;
            m -= k;
        }
        /* a trailing proper prefix of TRAIN */
        for (size_t p = sizeof TRAIN - 2; p > 0; p--)
            if (p <= m && !memcmp(raw + m - p, TRAIN, p)) {
                m -= p;
                break;
            }
        if (m == n) return n;
        n = m;
    }
}

/* The code point that starts at s[i] (i < n) and its length; a sequence cut
** by the end counts as one byte (the text should be valid UTF-8, but a
** tokenizer file's pieces are not checked here). */
static uint32_t next_cp(const char *str, size_t i, size_t n, size_t *k) {
    const unsigned char *s = (const unsigned char *)str + i;
    *k = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    if (i + *k > n) {
        *k = 1;
        return 0xFFFD;
    }
    uint32_t c = *k == 1 ? s[0] : s[0] & (0x7F >> *k);
    for (size_t j = 1; j < *k; j++) c = c << 6 | (s[j] & 0x3F);
    return c;
}

/* ChatGLM3's processing of a content string: strip, replace TRAIN. */
static int glm3_content(buf *o, const char *s, size_t n) {
    size_t k, i = 0;
    while (n > 0 && is_space(last_cp(s, n, &k))) n -= k;
    while (i < n && is_space(next_cp(s, i, n, &k))) i += k;
    o->n = 0;
    if (buf_add(o, "", 0)) return -1;
    const size_t tl = sizeof TRAIN - 1;
    for (size_t from = i; i < n;) {
        if (n - i >= tl && !memcmp(s + i, TRAIN, tl)) {
            if (buf_add(o, s + from, i - from) || buf_add(o, "2023年", strlen("2023年"))) return -1;
            from = i += tl;
        } else {
            i++;
        }
        if (i >= n && buf_add(o, s + from, n - from)) return -1;
    }
    return 0;
}

/* The processed text of raw[0..n) into s->tmp. */
static int process(chat_stream *s, size_t n, int final) {
    const char *r = s->raw.p;
    if (!s->glm3) {
        size_t len = 0;
        if (buf_reserve(&s->tmp, n + 16)) return -1;
        /* full-width punctuation grows the text: measured, then again */
        if (m40_chatglm_process_response(r, n, s->tmp.p, s->tmp.cap, &len) != M40_OK) return -1;
        if (len >= s->tmp.cap) {
            if (buf_reserve(&s->tmp, len) ||
                m40_chatglm_process_response(r, n, s->tmp.p, s->tmp.cap, &len) != M40_OK)
                return -1;
        }
        s->tmp.n = len;
        s->tmp.p[len] = 0;
        return 0;
    }
    const char *nl = memchr(r, '\n', n);
    if (!nl) { /* the metadata line is not finished */
        if (!final) return s->tmp.n = 0, buf_add(&s->tmp, "", 0);
        return glm3_content(&s->tmp, r, n);
    }
    size_t meta = (size_t)(nl - r), k;
    int blank = 1;
    for (size_t i = meta; i > 0 && blank; i -= k) blank = is_space(last_cp(r, i, &k));
    if (!blank) { /* a tool call: metadata and content as they are */
        s->tmp.n = 0;
        return buf_add(&s->tmp, r, n);
    }
    return glm3_content(&s->tmp, nl + 1, n - meta - 1);
}

/* Appends the processed text that became final to s->out; the new part is
** returned through text/len. */
static int emit(chat_stream *s, int final, const char **text, size_t *len) {
    size_t cut = final ? s->raw.n : stable_len(s->raw.p, s->raw.n);
    *text = "";
    *len = 0;
    if (process(s, cut, final)) return -1;
    /* the processed prefix only grows (stable_len holds back every tail that
    ** could change); should it ever not, print nothing rather than garble */
    if (s->tmp.n <= s->out.n || memcmp(s->tmp.p, s->out.p, s->out.n)) return 0;
    size_t from = s->out.n;
    if (buf_add(&s->out, s->tmp.p + from, s->tmp.n - from)) return -1;
    *text = s->out.p + from;
    *len = s->out.n - from;
    return 0;
}

int chat_stream_push(chat_stream *s, int32_t id, const char **text, size_t *len) {
    *text = "";
    *len = 0;
    if (id < 0 || id >= s->vocab || (id >= M40_CHATGLM2_MASK && id <= M40_CHATGLM2_EOP + 4)) {
        s->skipped++;
        return 0;
    }
    const char *t;
    size_t n;
    if (m40_tokenizer_stream_push(s->ts, id, &t, &n) != M40_OK) return -1;
    if (!n) return 0;
    if (buf_add(&s->raw, t, n)) return -1;
    return emit(s, 0, text, len);
}

int chat_stream_finish(chat_stream *s, const char **text, size_t *len) {
    const char *t;
    size_t n;
    if (m40_tokenizer_stream_finish(s->ts, &t, &n) != M40_OK || buf_add(&s->raw, t, n)) return -1;
    return emit(s, 1, text, len);
}
