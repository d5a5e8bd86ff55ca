/* Encode throughput of the libm40 tokenizer: reads a corpus file, encodes each
** line (as the reference benchmark does), repeats `reps` times and prints
** "MBps <best> ids <total> checksum <x>" for tokenizer_bench.py to compare.
** usage: tokenizer_bench MODEL CORPUS [reps] */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "m40/tokenizer.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL CORPUS [reps]\n", argv[0]);
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    m40_tokenizer *tok = NULL;
    if (m40_tokenizer_load_file(argv[1], &tok)) {
        fprintf(stderr, "load: %s\n", m40_tokenizer_errmsg(tok));
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) return 1;
    fclose(f);
    int32_t *ids = malloc(((size_t)1 << 20) * sizeof *ids);
    double best = 1e30;
    unsigned long long total = 0, checksum = 0;
    for (int r = 0; r < reps; r++) {
        total = checksum = 0;
        double t0 = now();
        for (long p = 0; p < size;) {
            char *nl = memchr(buf + p, '\n', (size_t)(size - p));
            long end = nl ? nl - buf : size;
            size_t n = 0;
            m40_tokenizer_encode(tok, buf + p, (size_t)(end - p), ids, 1 << 20, &n);
            for (size_t i = 0; i < n; i++) checksum = checksum * 1000003u + (unsigned)ids[i];
            total += n;
            p = end + 1;
        }
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    printf("MBps %.3f ids %llu checksum %llu\n", (double)size / 1e6 / best, total, checksum);
    free(ids);
    free(buf);
    m40_tokenizer_destroy(tok);
    return 0;
}
