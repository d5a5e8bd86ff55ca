/* libFuzzer target: the JSON cursor (lib/io/json.c) on arbitrary text.
**
** Walks the text twice: once with m40__json_skip, once with a reader that
** descends objects and arrays through the cursor calls the safetensors
** reader uses (expect, peek, string, int, next), skipping what it does not
** know. Each call must keep the cursor inside the text, and a failure must
** leave a reason. The two walks must agree on whether the first value is
** well formed. The reader refuses the 65th nested container itself, as
** m40__json_skip does (it once handed values deeper than 32 to the skipper,
** which then allowed 64 more levels: tests/fuzz/findings/json/). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"

static void inside(const m40_json *c) {
    if (c->p < c->start || c->p > c->end) abort();
}

static bool value(m40_json *c, int depth);

static bool object(m40_json *c, int depth) {
    if (!m40__json_expect(c, '{')) return false;
    if (m40__json_peek(c, '}')) return m40__json_expect(c, '}');
    for (bool done = false; !done;) {
        char *k = NULL;
        if (!m40__json_string(c, &k)) return false;
        free(k);
        if (!m40__json_expect(c, ':') || !value(c, depth + 1) || !m40__json_next(c, '}', &done)) return false;
        inside(c);
    }
    return true;
}

static bool array(m40_json *c, int depth) {
    if (!m40__json_expect(c, '[')) return false;
    if (m40__json_peek(c, ']')) return m40__json_expect(c, ']');
    for (bool done = false; !done;) {
        if (!value(c, depth + 1) || !m40__json_next(c, ']', &done)) return false;
        inside(c);
    }
    return true;
}

static bool value(m40_json *c, int depth) {
    inside(c);
    bool open = m40__json_peek(c, '{') || m40__json_peek(c, '[');
    if (open && depth == 64) { /* the skipper's cap: 64 open containers */
        c->err = "JSON nested too deeply";
        return false;
    }
    if (m40__json_peek(c, '{')) return object(c, depth);
    if (m40__json_peek(c, '[')) return array(c, depth);
    if (m40__json_peek(c, '"')) {
        char *s = NULL;
        bool ok = m40__json_string(c, &s);
        free(s);
        return ok;
    }
    m40_json save = *c;
    int64_t v;
    if (m40__json_int(c, &v)) return true;
    *c = save; /* a fraction, exponent, literal or junk: let skip decide */
    return m40__json_skip(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m40_json a, b;
    m40__json_init(&a, (const char *)data, size);
    bool sa = m40__json_skip(&a);
    inside(&a);
    if (!sa && !a.err) abort();
    const char *end_a = a.p;
    if (sa) (void)m40__json_at_end(&a);
    m40__json_init(&b, (const char *)data, size);
    bool sb = value(&b, 0);
    inside(&b);
    if (!sb && !b.err) abort();
    if (sb && (!sa || end_a != b.p)) abort(); /* the reader accepted: skip must agree, same end */
    return 0;
}
