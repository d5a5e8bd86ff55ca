/* A cursor over JSON text, for reading small headers and configs without
** building a tree: the caller walks the structure it expects and skips the
** rest. Every function returns false on malformed input and leaves a short
** reason in c->err. Input need not be NUL-terminated.
** Bounds: every call is linear in the bytes it consumes and reads nothing
** past `end`; skip uses a fixed 64-deep stack (no recursion) and allocates
** nothing; a string's copy is at most its encoded length + 1 bytes; the
** callers cap the text itself (safetensors: 100 MB). */
#ifndef M40_IO_JSON_H
#define M40_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct m40_json {
    const char *p, *end;
    const char *err;   /* static reason for the first failure */
    size_t err_pos;    /* byte offset of it */
    const char *start;
} m40_json;

void m40__json_init(m40_json *c, const char *text, size_t len);
/* Skips whitespace; true if the next byte is `ch` (not consumed). */
bool m40__json_peek(m40_json *c, char ch);
/* Consumes `ch` after whitespace. */
bool m40__json_expect(m40_json *c, char ch);
/* Parses a string; *out is malloc'd, NUL-terminated UTF-8 (escapes and
** \uXXXX surrogate pairs decoded). Strings holding NUL are rejected. */
bool m40__json_string(m40_json *c, char **out);
/* Parses an integer that fits int64 (no fraction or exponent). */
bool m40__json_int(m40_json *c, int64_t *out);
/* Skips any value, nesting depth at most 64. */
bool m40__json_skip(m40_json *c);
/* In an object or array after an element: consumes ',' and returns true,
** or sees the closer `close` (consumed) and sets *done. */
bool m40__json_next(m40_json *c, char close, bool *done);
/* True if only whitespace remains. */
bool m40__json_at_end(m40_json *c);

#endif
