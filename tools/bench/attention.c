/* m40-bench attention: not written yet (issue 16). */
#include "bench/harness.h"

#include <stdio.h>

int run_attention(bench_env *e) {
    (void)e;
    fprintf(stderr, "m40-bench attention: not implemented yet\n");
    return 2;
}
