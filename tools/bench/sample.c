/* m40-bench sample: not written yet (issue 16). */
#include "bench/harness.h"

#include <stdio.h>

int run_sample(bench_env *e) {
    (void)e;
    fprintf(stderr, "m40-bench sample: not implemented yet\n");
    return 2;
}
