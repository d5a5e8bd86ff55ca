/* libFuzzer target: the safetensors reader (lib/io/safetensors.c).
**
** The input is a whole .safetensors file. It goes to a memory-backed file
** (memfd) that m40_st_open opens by its /proc path. A file that opens must
** answer every accessor consistently: each tensor found by name, its bytes
** inside the file, m40_st_expect accepting its own dtype and shape; a file
** that does not open must say why. */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "m40/safetensors.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (fd < 0) {
        fd = memfd_create("fuzz_safetensors", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    m40_st_file *f = NULL;
    m40_status st = m40_st_open(path, &f);
    if (st != M40_OK) {
        if (st != M40_ERR_FORMAT || !f || !m40_st_errmsg(f)[0]) abort(); /* every failure says why */
        if (m40_st_get_count(f) != 0 || m40_st_get(f, 0) || m40_st_find(f, "a")) abort();
        m40_st_destroy(f);
        return 0;
    }
    size_t n = m40_st_get_count(f);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const m40_st_tensor *t = m40_st_get(f, i);
        if (!t || !t->name || t->ndim < 0 || t->ndim > M40_ST_MAX_DIMS) abort();
        if (t->offset < prev || t->offset < 8 || t->offset > size || t->nbytes > size - t->offset) abort();
        prev = t->offset;
        if (m40_st_find(f, t->name) != t) abort(); /* names are unique */
        const unsigned char *p = m40_st_get_data(f, t);
        volatile unsigned char sink = 0;
        if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
        (void)sink;
        if (t->dtype != M40_DTYPE_COUNT) {
            const m40_st_tensor *got = NULL;
            if (m40_st_expect(f, t->name, t->dtype, t->ndim, t->shape, &got) != M40_OK || got != t) abort();
            int64_t other[M40_ST_MAX_DIMS] = {0};
            if (t->ndim > 0 && m40_st_expect(f, t->name, t->dtype, t->ndim, other, &got) == M40_OK &&
                memcmp(other, t->shape, (size_t)t->ndim * sizeof other[0]) != 0)
                abort();
        }
    }
    if (m40_st_get(f, n) != NULL) abort();
    /* lookups of names that may or may not exist, taken from the input */
    char key[16];
    size_t k = size < sizeof key - 1 ? size : sizeof key - 1;
    memcpy(key, data, k);
    key[k] = 0;
    (void)m40_st_find(f, key);
    (void)m40_st_get_metadata(f, key);
    (void)m40_st_get_metadata(f, "format");
    m40_st_destroy(f);
    return 0;
}
