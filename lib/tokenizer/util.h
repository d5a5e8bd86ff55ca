/* The tokenizer's bottom layer: error text, growable buffers, UTF-8 and the
** model-size limit. Includes nothing of the tokenizer; everything else in
** lib/tokenizer/ may include it (through tok_internal.h). */
#ifndef M40_TOK_UTIL_H
#define M40_TOK_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "m40/m40.h"

/* Largest .model file or buffer accepted. SentencePiece models are a few MB
** (ChatGLM2's is 1 MB, LLaMA's 0.5 MB); the cap keeps `--model /dev/zero` or
** a FIFO from growing memory without bound. */
#define M40__TOK_MAX_MODEL_BYTES ((size_t)64 << 20)

/* vsnprintf into msg[cap]; returns st, for `return m40__tok_vmsg(...)`. */
m40_status m40__tok_vmsg(char *msg, size_t cap, m40_status st, const char *fmt, va_list ap);

/* A status's name for messages (the tokenizer does not need libm40's core). */
const char *m40__tok_status_text(m40_status st);

/* Ensures *buf holds at least `need` elements of `elem` bytes, growing
** *cap geometrically from `first`; false (buffer untouched) on overflow or
** out of memory. */
bool m40__tok_grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first);

/* Length of one "character" as sentencepiece's OneCharLen: from the lead byte. */
static inline size_t m40__one_char_len(uint8_t c) {
    static const uint8_t tbl[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return tbl[c >> 4];
}

/* Decodes one UTF-8 character like sentencepiece's DecodeUTF8: returns the
** code point or 0xFFFD with *mblen = 1 when invalid. n >= 1. */
uint32_t m40__utf8_decode(const uint8_t *p, size_t n, size_t *mblen);

static inline bool m40__utf8_valid_prefix(const uint8_t *p, size_t n, size_t *mblen) {
    uint32_t c = m40__utf8_decode(p, n, mblen);
    return c != 0xFFFD || *mblen == 3;
}

#endif
