/* m40-bench norm: not written yet (issue 16). */
#include "bench/harness.h"

#include <stdio.h>

int run_norm(bench_env *e) {
    (void)e;
    fprintf(stderr, "m40-bench norm: not implemented yet\n");
    return 2;
}
