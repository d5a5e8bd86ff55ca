/* m40-bench's harness: options, the run environment, measure() and the
** result helpers every workload uses (tools/bench/harness.c), and the
** workloads that live in their own files (tools/bench/nn.c). */
#ifndef M40B_HARNESS_H
#define M40B_HARNESS_H

#include <m40/m40.h>

#include "bench/bench.h"
#include "sampler.h"

#include <stdbool.h>
#include <stdint.h>

#define M40B_SKIP 77
#define M40B_MAX_SIZES 32
#define M40B_MAX_REPEATS 10000
#define M40B_MAX_RESULTS 4096 /* a run's results (new_result returns NULL past it) */

typedef struct bench_opts {
    int warmup, repeats, device, telemetry, cpu;
    int layouts; /* bit (1 << m40_layout): which layouts conv and resnet50 run */
    int graph_calls; /* norm, sample, attention decode: also timed as this many
                     ** calls captured in one CUDA graph (0: not) */
    const char *sizes;
    const char *json, *csv; /* NULL: off; "-": stdout instead of text */
} bench_opts;

typedef struct bench_env {
    const bench_opts *o;
    const char *command;
    m40_ctx *ctx;
    m40_device_info info;
    bool is_m40;
    m40b_sampler *smp;
    m40__bench_result *res;
    int nres, cap;
    bool text; /* print result lines to stdout */
    int failed;
} bench_env;

typedef m40_status (*op_fn)(bench_env *e, void *arg);

m40_location side_of(const bench_env *e);
/* Runs op warmup + repeats times, timing each repeat with CUDA events, and
** fills r's time statistics and telemetry. Returns 0 on success. */
int measure(bench_env *e, op_fn op, void *arg, m40__bench_result *r);
/* The same with `graph_calls` calls of op captured back to back in one CUDA
** graph and the graph replayed per repeat (after the warm-ups): the device
** time of a call inside a captured decode step, no host launch or events
** between calls. r's times are per call; " [graph xN]" is added to its impl.
** Returns 0 on success, 1 on a failure or when graph_calls is 0 or the
** context is not a GPU one. */
int measure_graph(bench_env *e, op_fn op, void *arg, m40__bench_result *r);
void print_result(const m40__bench_result *r);
m40__bench_result *new_result(bench_env *e, const char *workload, const char *impl,
                              const char *label, const char *unit);
/* Parses a comma-separated list of sizes, each "A" or "AxBxC", every number
** in 1..2^31-1; -1 for a malformed list or a number outside that range. */
int parse_sizes(const char *list, int64_t dims[][3], int max);
/* max |a-b| / max |b| over two downloaded outputs */
double rel_err(bench_env *e, m40_tensor *got, m40_tensor *ref);
/* Random bytes into a device tensor (quantized codes need no quantizer to be timed). */
m40_status upload_random(bench_env *e, m40_tensor *t, uint64_t seed);

/* tools/bench/attention.c, norm.c, sample.c: the transformer's ops */
int run_attention(bench_env *e);
int run_norm(bench_env *e);
int run_sample(bench_env *e);
int run_chatglm2(bench_env *e);

/* tools/bench/nn.c */
int run_conv(bench_env *e);
#ifdef M40B_HAVE_RESNET
int run_resnet50(bench_env *e);
#endif

#endif
