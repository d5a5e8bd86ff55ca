/* libFuzzer target: the graph builder and planner (lib/graph/) driven by
** fuzzed shapes, roles, dtypes, ops and parameters, on a CPU context.
**
** The bytes are read as a small program: tensors (role, dtype, rank, each
** extent from a table of edge values or a raw byte), nodes (op, inputs,
** output, every parameter), outputs, then a budget. Every call must return
** a status (never crash or overflow: run with ASan + UBSan), and a plan
** that succeeds must be self-consistent: each planned tensor inside its
** region, regions summing to the total. Tiny plans (16 KB) are also
** allocated and run once on the CPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "m40/graph.h"
#include "m40/m40.h"

/* M40_FUZZ_GRAPH_WRAP=0 keeps each declared tensor under 2^24 elements (so
** a node's inferred output, which multiplies extents of two inputs, stays
** far from 2^63), no zero extents, and int parameters within +-4096: away
** from the known findings in lib/tensor.c, lib/graph/shapes.c and
** kernels/conv_plan.h (tests/fuzz/README.md; issue 15 items 1 and 3). The
** default (1) fuzzes every value, as a hostile caller would. */
static int wrap = -1;

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static uint8_t u8(rd *r) { return r->p < r->end ? *r->p++ : 0; }
static uint32_t u32(rd *r) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | u8(r);
    return v;
}

/* Extents and ints near the edges: zero, small, powers of two, the int and
** int64 limits, products that wrap, negatives. */
static int64_t extent(rd *r) {
    static const int64_t edge[] = {0, 1, 2, 3, 4, 7, 8, 16, 64, 224, 256, 1000, 4096, 65536,
                                   (int64_t)1 << 31, (int64_t)1 << 32, 3037000500, (int64_t)1 << 40,
                                   (int64_t)1 << 62, INT64_MAX, INT64_MAX / 2 + 1, -1, -2, INT64_MIN};
    uint8_t b = u8(r);
    if (b < 128) return b % 9;
    return edge[b % (sizeof edge / sizeof edge[0])];
}

static int param(rd *r) {
    static const int edge[] = {0, 1, 2, 3, 4, 7, 8, -1, -2, 64, 128, 1 << 16, 1 << 30, INT32_MAX, INT32_MIN};
    uint8_t b = u8(r);
    if (b < 160) return b % 6;
    int v = edge[b % (sizeof edge / sizeof edge[0])];
    return !wrap && (v > 4096 || v < -4096) ? v & 7 : v;
}

static float fparam(rd *r) {
    static const float edge[] = {0.0f, 1.0f, -1.0f, 1e-5f, 0.5f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    uint8_t b = u8(r);
    if (b < 200) return edge[b % (sizeof edge / sizeof edge[0])];
    uint32_t bits = u32(r);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static m40_ctx *ctx;

static int64_t tame(int64_t v, int64_t *prod) {
    if (v == 0) v = 1; /* a conv with C = K = 0 divides by zero in kernels/conv_plan.h */
    int64_t a = v < 0 ? 1 : v;
    if (a > 0 && *prod > ((int64_t)1 << 24) / a) v = 1 + (v & 7);
    *prod *= v < 0 ? 1 : (v ? v : 1);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, data + size};
    if (wrap < 0) {
        const char *w = getenv("M40_FUZZ_GRAPH_WRAP");
        wrap = !(w && w[0] == '0');
    }
    if (!ctx) {
        m40_ctx_desc d;
        m40_ctx_desc_init(&d);
        d.device = M40_DEVICE_CPU;
        if (m40_ctx_create(&d, &ctx) != M40_OK) abort();
    }
    m40_graph *g = NULL;
    if (m40_graph_create(ctx, &g) != M40_OK) abort();
    static const m40_dtype dtypes[] = {M40_DTYPE_F32, M40_DTYPE_F32, M40_DTYPE_F16, M40_DTYPE_I8,
                                       M40_DTYPE_I32, M40_DTYPE_COUNT, M40_DTYPE_Q8, (m40_dtype)-1};
    int nt = 1 + u8(&r) % 8;
    for (int i = 0; i < nt; i++) {
        m40_tensor_desc d;
        memset(&d, 0, sizeof d);
        int role = u8(&r) % 5; /* 4 is invalid */
        d.dtype = dtypes[u8(&r) % 8];
        d.ndim = u8(&r) % 6; /* 0..5; 5 is invalid */
        if (u8(&r) == 255) d.ndim = -1;
        int64_t prod = 1;
        for (int k = 0; k < M40_MAX_DIMS; k++) {
            d.shape[k] = k < d.ndim ? extent(&r) : 0;
            if (!wrap && k < d.ndim) d.shape[k] = tame(d.shape[k], &prod);
        }
        char name[8] = {'t', (char)('0' + i), 0};
        int id = -1;
        (void)m40_graph_tensor(g, (m40_tensor_role)role, u8(&r) & 1 ? name : NULL, &d, &id);
    }
    int nn = u8(&r) % 9;
    for (int i = 0; i < nn; i++) {
        m40_node_desc nd;
        m40_node_desc_init(&nd, (m40_op)(u8(&r) % (M40_OP_COUNT + 1)));
        nd.ninputs = u8(&r) % 8 - 1; /* -1..6 */
        for (int k = 0; k < M40_NODE_MAX_INPUTS; k++) nd.inputs[k] = (int)(u8(&r) % (nt + 12)) - 2;
        uint8_t o = u8(&r);
        nd.output = o < 128 ? M40_TENSOR_NEW : (int)(o % (nt + 12)) - 2;
        uint8_t which = u8(&r); /* which parameters to fuzz; the rest keep their defaults */
        if (which & 1) nd.out_dtype = dtypes[u8(&r) % 8];
        if (which & 2) nd.alpha = fparam(&r), nd.eps = fparam(&r);
        if (which & 4) nd.act = (m40_act)(u8(&r) % 4);
        if (which & 8)
            for (int k = 0; k < 2; k++) nd.kernel[k] = param(&r), nd.stride[k] = param(&r), nd.pad[k] = param(&r);
        if (which & 16) nd.groups = param(&r), nd.pool = (m40_pool)(u8(&r) % 4);
        if (which & 32)
            nd.heads = param(&r), nd.kv_heads = param(&r), nd.head_dim = param(&r), nd.rope_dims = param(&r);
        if (which & 64) nd.bits = param(&r), nd.layout = (m40_layout)(u8(&r) % 3);
        if (which & 128) nd.fuse_relu = u8(&r) & 1;
        (void)m40_graph_node(g, &nd, NULL);
    }
    int count = m40_graph_get_tensor_count(g);
    for (int i = 0, k = u8(&r) % 4; i < k && count > 0; i++) (void)m40_graph_mark_output(g, u8(&r) % count);

    m40_budget b, *bp = &b;
    uint8_t bs = u8(&r) % 4;
    if (bs == 0) bp = NULL;
    else if (bs == 1) (void)m40_budget_preset(u8(&r) & 1 ? "m40-12g" : "m40-24g", &b);
    else m40_budget_bytes((uint64_t)u32(&r) << (u8(&r) % 40), &b);
    m40_plan_info info;
    m40_status st = m40_graph_plan(g, bp, &info);
    if (st == M40_OK || st == M40_ERR_OOM_DEVICE) {
        uint64_t sum = 0;
        for (int k = 0; k < M40_REGION_COUNT; k++) {
            if (info.region_bytes[k] > UINT64_MAX - sum) abort();
            sum += info.region_bytes[k];
        }
        if (sum != info.total_bytes) abort();
        if (info.fits != (info.total_bytes <= info.usable_bytes)) abort();
        for (int id = 0; id < count; id++) {
            m40_graph_tensor_info ti;
            if (m40_graph_get_tensor_info(g, id, &ti) != M40_OK) abort();
            if (ti.region >= 0) {
                if (ti.region >= M40_REGION_COUNT || ti.size < ti.bytes) abort();
                if (ti.offset > info.region_bytes[ti.region] ||
                    ti.size > info.region_bytes[ti.region] - ti.offset)
                    abort();
            }
        }
        for (int s = 0; s < info.nodes; s++)
            if (m40_graph_get_step_node(g, s) < 0) abort();
        /* Run only tiny plans: an op's work is at most (output elements) x
        ** (its largest input's elements), here 4K x 4K multiply-adds, so
        ** no input can stall the run with a legitimately huge conv. */
        if (st == M40_OK && info.total_bytes <= (16u << 10) && m40_graph_alloc(g) == M40_OK)
            (void)m40_graph_run(g);
    }
    m40_graph_destroy(g);
    return 0;
}
