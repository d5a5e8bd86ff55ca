/* Shared by the tokenizer tests: golden files write id lists as "1,2,3",
** and "-" for an empty list. */
#ifndef M40_TESTS_GOLDEN_IDS_H
#define M40_TESTS_GOLDEN_IDS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Parses an id list into out; returns its length, or -1 if malformed. */
static inline long parse_ids(const char *s, int32_t *out) {
    if (strcmp(s, "-") == 0) return 0;
    long n = 0;
    while (*s) {
        char *end;
        out[n++] = (int32_t)strtol(s, &end, 10);
        if (end == s) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

#endif
