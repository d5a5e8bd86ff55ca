/* The planner: random-DAG fuzz (no two live tensors overlap, alignment,
** determinism, results equal to eager ops), the arena against the liveness
** lower bound on ResNet-50, ChatGLM2-6B and a transformer layer, the
** model facts m40-plan must get right, and linear_q's GEMV scratch. CPU only. */
#include "check.h"
#include "fixtures.h"
#include "m40/models.h"
#include "m40/plan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static m40_ctx *C;

typedef struct snap { uint64_t off, size; int region; } snap;

/* Checks one planned graph; returns arena/lower bound. */
static double check_plan(m40_graph *g, const char *what) {
    m40_plan_info pi;
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    int nt = m40_graph_get_tensor_count(g), bad = 0;
    m40_graph_tensor_info *ti = calloc((size_t)nt, sizeof *ti);
    for (int i = 0; i < nt; i++) {
        CHECK_ST(m40_graph_get_tensor_info(g, i, &ti[i]), M40_OK);
        if (ti[i].region >= 0 && ti[i].offset % M40_GRAPH_ALIGN) bad++;
        if (ti[i].region >= 0 && ti[i].offset + ti[i].size > pi.region_bytes[ti[i].region]) bad++;
    }
    CHECK(bad == 0);
    /* no two arena tensors live at the same step share a byte, unless the
    ** second is the in-place successor of the first */
    int overlaps = 0;
    for (int i = 0; i < nt; i++)
        for (int j = i + 1; j < nt; j++) {
            const m40_graph_tensor_info *a = &ti[i], *b = &ti[j];
            if (a->region != M40_REGION_ACTIVATIONS || b->region != M40_REGION_ACTIVATIONS) continue;
            if (!a->size || !b->size) continue;
            bool time = a->first_step <= b->last_step && b->first_step <= a->last_step;
            bool space = a->offset < b->offset + b->size && b->offset < a->offset + a->size;
            if (!time || !space) continue;
            bool inplace = a->offset == b->offset && a->size == b->size &&
                           (a->last_step == b->first_step || b->last_step == a->first_step);
            if (!inplace) {
                if (overlaps++ < 3)
                    fprintf(stderr, "%s: '%s' [%d,%d]@%llu+%llu overlaps '%s' [%d,%d]@%llu+%llu\n",
                            what, a->name, a->first_step, a->last_step,
                            (unsigned long long)a->offset, (unsigned long long)a->size, b->name,
                            b->first_step, b->last_step, (unsigned long long)b->offset,
                            (unsigned long long)b->size);
            }
        }
    CHECK(overlaps == 0);
    CHECK(pi.region_bytes[M40_REGION_ACTIVATIONS] >= pi.arena_lower_bound);
    /* planning again gives the same plan */
    m40_plan_info p2;
    CHECK_ST(m40_graph_plan(g, NULL, &p2), M40_OK);
    CHECK(memcmp(&pi, &p2, sizeof pi) == 0);
    for (int i = 0; i < nt; i++) {
        m40_graph_tensor_info t2;
        m40_graph_get_tensor_info(g, i, &t2);
        CHECK(t2.offset == ti[i].offset && t2.region == ti[i].region);
    }
    free(ti);
    return pi.arena_lower_bound ? (double)pi.region_bytes[M40_REGION_ACTIVATIONS] /
                                      (double)pi.arena_lower_bound
                                : 1.0;
}


/* ----- small hand-built graphs with exact expectations (a mutation run of
** lib/graph/planner.c found these unpinned) ----- */

static int sp_tensor(m40_graph *g, m40_tensor_role role, const char *name, int64_t n) {
    int64_t shape[1] = {n};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, shape);
    int id = -1;
    CHECK_ST(m40_graph_tensor(g, role, name, &d, &id), M40_OK);
    return id;
}

/* y = op(a[, b]) into `out` (M40_TENSOR_NEW: a new activation) */
static int sp_node(m40_graph *g, m40_op op, const char *name, int a, int b, int out) {
    m40_node_desc nd;
    m40_node_desc_init(&nd, op);
    nd.name = name;
    nd.alpha = 0.5f;
    nd.inputs[0] = a;
    nd.inputs[1] = b;
    nd.ninputs = b == M40_NO_TENSOR ? 1 : 2;
    nd.output = out;
    int y = -1;
    CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
    return y;
}

static m40_graph_tensor_info sp_info(m40_graph *g, int id) {
    m40_graph_tensor_info ti;
    memset(&ti, 0, sizeof ti);
    CHECK_ST(m40_graph_get_tensor_info(g, id, &ti), M40_OK);
    return ti;
}

static void test_small_plans(void) {
    const uint64_t A = M40_GRAPH_ALIGN;
    m40_plan_info pi;
    /* liveness is the LAST reader's step in execution order, not in node
    ** index order: node 1 ("late", reads a and b) runs after node 2 (makes
    ** b from a), so a lives to step 2 */
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    int x = sp_tensor(g, M40_ROLE_INPUT, "x", 100);
    int b = sp_tensor(g, M40_ROLE_ACTIVATION, "b", 100);
    int a = sp_node(g, M40_OP_SCALE, "a", x, M40_NO_TENSOR, M40_TENSOR_NEW);
    int y = sp_node(g, M40_OP_ADD, "late", a, b, M40_TENSOR_NEW);
    sp_node(g, M40_OP_SCALE, "make_b", a, M40_NO_TENSOR, b);
    CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    CHECK(m40_graph_get_step_node(g, 1) == 2 && m40_graph_get_step_node(g, 2) == 1);
    m40_graph_tensor_info ta = sp_info(g, a), tb = sp_info(g, b);
    if (ta.first_step != 0 || ta.last_step != 2)
        fprintf(stderr, "FAIL: 'a' lives [%d,%d], want [0,2] (its last reader runs at step 2)\n",
                ta.first_step, ta.last_step);
    CHECK(ta.first_step == 0 && ta.last_step == 2);
    CHECK(tb.first_step == 1 && tb.last_step == 2);
    m40_graph_destroy(g);

    /* in place never over an output: b = scale(a) is the last step and a
    ** dies there by liveness, but a is an output and must keep its value */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    x = sp_tensor(g, M40_ROLE_INPUT, "x", 100);
    a = sp_node(g, M40_OP_SCALE, "a", x, M40_NO_TENSOR, M40_TENSOR_NEW);
    b = sp_node(g, M40_OP_SCALE, "b", a, M40_NO_TENSOR, M40_TENSOR_NEW);
    CHECK_ST(m40_graph_mark_output(g, a), M40_OK);
    CHECK_ST(m40_graph_mark_output(g, b), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    ta = sp_info(g, a), tb = sp_info(g, b);
    if (pi.inplace != 0 || tb.shares_with != -1 || ta.offset == tb.offset)
        fprintf(stderr, "FAIL: output 'a' overwritten in place by 'b' (inplace %d, shares %d)\n",
                pi.inplace, tb.shares_with);
    CHECK(pi.inplace == 0 && tb.shares_with == -1 && ta.offset != tb.offset);
    CHECK(pi.region_bytes[M40_REGION_ACTIVATIONS] == 3 * 2 * A); /* x, a, b: 400 B -> 512 each */
    m40_graph_destroy(g);

    /* bound tensors take no arena bytes and no region (-1); a graph whose
    ** every input and output is bound has an empty arena, not an error */
    m40_tensor *bx = NULL, *by = NULL;
    int64_t s100[1] = {100};
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s100, &bx), M40_OK);
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s100, &by), M40_OK);
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    x = sp_tensor(g, M40_ROLE_INPUT, "x", 100);
    a = sp_node(g, M40_OP_SCALE, "a", x, M40_NO_TENSOR, M40_TENSOR_NEW);
    CHECK_ST(m40_graph_mark_output(g, a), M40_OK);
    CHECK_ST(m40_graph_bind(g, x, bx), M40_OK);
    CHECK_ST(m40_graph_bind(g, a, by), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    for (int r = 0; r < M40_REGION_COUNT; r++) CHECK(pi.region_bytes[r] == 0);
    CHECK(pi.total_bytes == 0 && pi.external_bytes == 800);
    CHECK(sp_info(g, x).region == -1 && sp_info(g, a).region == -1);
    CHECK_ST(m40_graph_alloc(g), M40_OK);
    CHECK_ST(m40_graph_run(g), M40_OK);
    m40_graph_destroy(g);
    /* bound input, then a chain in the arena: x is not in it, y and z
    ** share one block (scale in place) */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    x = sp_tensor(g, M40_ROLE_INPUT, "x", 100);
    a = sp_node(g, M40_OP_SCALE, "y", x, M40_NO_TENSOR, M40_TENSOR_NEW);
    b = sp_node(g, M40_OP_SCALE, "z", a, M40_NO_TENSOR, M40_TENSOR_NEW);
    CHECK_ST(m40_graph_mark_output(g, b), M40_OK);
    CHECK_ST(m40_graph_bind(g, x, bx), M40_OK);
    CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
    if (pi.region_bytes[M40_REGION_ACTIVATIONS] != 2 * A)
        fprintf(stderr, "FAIL: arena %llu with a bound input, want %llu\n",
                (unsigned long long)pi.region_bytes[M40_REGION_ACTIVATIONS],
                (unsigned long long)(2 * A));
    CHECK(pi.region_bytes[M40_REGION_ACTIVATIONS] == 2 * A && pi.inplace == 1);
    m40_graph_destroy(g);
    m40_tensor_destroy(bx);
    m40_tensor_destroy(by);

    /* the total is capped like each region: weights 2^61 + 2^60 and a KV
    ** cache of 2^61 are each within 2^62, their sum is not */
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    sp_tensor(g, M40_ROLE_WEIGHT, "w0", (int64_t)1 << 59);
    sp_tensor(g, M40_ROLE_WEIGHT, "w1", (int64_t)1 << 58);
    sp_tensor(g, M40_ROLE_STATE, "kv", (int64_t)1 << 59);
    x = sp_tensor(g, M40_ROLE_INPUT, "x", 1);
    a = sp_node(g, M40_OP_SCALE, "s", x, M40_NO_TENSOR, M40_TENSOR_NEW);
    CHECK_ST(m40_graph_mark_output(g, a), M40_OK);
    m40_status st = m40_graph_plan(g, NULL, &pi);
    if (st != M40_ERR_INVALID_ARG)
        fprintf(stderr, "FAIL: a 2^62+ total planned (%s, total %llu)\n", m40_status_str(st),
                (unsigned long long)pi.total_bytes);
    CHECK_ST(st, M40_ERR_INVALID_ARG);
    CHECK(strstr(m40_errmsg(C), "total") && strstr(m40_errmsg(C), "2^62"));
    m40_graph_destroy(g);
    printf("small plans: liveness in execution order, no in place over an output, bound "
           "tensors outside the arena, total capped\n");
}

static void test_fuzz(void) {
    const int N = 400;
    double sum = 0, worst = 0;
    int over110 = 0, exec_bad = 0;
    for (int k = 0; k < N; k++) {
        int nodes = 3 + k % 60, width = k % 3 == 0 ? 700 : 64;
        fx_dag *d = fx_dag_new(0x5eed0000ull + (uint64_t)k, nodes, width, k % 2);
        m40_graph *g = NULL, *g2 = NULL;
        CHECK(d != NULL);
        CHECK_ST(m40_graph_create(C, &g), M40_OK);
        CHECK_ST(fx_dag_build(d, g), M40_OK);
        char what[32];
        snprintf(what, sizeof what, "dag %d", k);
        double r = check_plan(g, what);
        sum += r;
        if (r > worst) worst = r;
        if (r > 1.10) over110++;
        /* an identical graph built again plans identically */
        CHECK_ST(m40_graph_create(C, &g2), M40_OK);
        CHECK_ST(fx_dag_build(d, g2), M40_OK);
        m40_plan_info a, b;
        CHECK_ST(m40_graph_plan(g, NULL, &a), M40_OK);
        CHECK_ST(m40_graph_plan(g2, NULL, &b), M40_OK);
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        /* and runs to the same bits as the eager ops */
        if (k % 4 == 0) {
            CHECK_ST(m40_graph_alloc(g), M40_OK);
            exec_bad += fx_dag_check_outputs(d, C, g);
        }
        m40_graph_destroy(g);
        m40_graph_destroy(g2);
        fx_dag_free(d);
    }
    CHECK(exec_bad == 0);
    /* the quality docs/planner.md states (mean 1.005, 2 over 1.10) on these
    ** seeded graphs: a placement that loses an order, or a tie rule, shows here */
    if (sum / N > 1.0055 || over110 > 2)
        fprintf(stderr, "FAIL: random DAGs arena / lower bound mean %.4f (want <= 1.0055), "
                "%d over 1.10 (want <= 2)\n", sum / N, over110);
    CHECK(sum / N <= 1.0055 && over110 <= 2);
    printf("random DAGs: %d graphs, arena / lower bound mean %.4f, worst %.4f, %d over 1.10; "
           "%d executed, %d mismatches\n", N, sum / N, worst, over110, N / 4, exec_bad);
}

static double model_ratio(const m40_model_desc *d, m40_model_phase ph, const char *what) {
    m40_graph *g = NULL;
    CHECK_ST(m40_model_graph(C, d, ph, &g), M40_OK);
    if (!g) return 99;
    double r = check_plan(g, what);
    m40_plan_info pi;
    m40_graph_plan(g, NULL, &pi);
    printf("%-34s nodes %4d  arena %10.1f MiB  lower bound %10.1f MiB  ratio %.4f  in place %d\n",
           what, pi.nodes, (double)pi.region_bytes[M40_REGION_ACTIVATIONS] / 1048576.0,
           (double)pi.arena_lower_bound / 1048576.0, r, pi.inplace);
    m40_graph_destroy(g);
    return r;
}

static void test_ratios(void) {
    m40_model_desc d;
    m40_model_desc_init(&d, M40_MODEL_RESNET50);
    int batches[] = {1, 8, 64};
    for (int i = 0; i < 3; i++) {
        char what[48];
        d.batch = batches[i];
        snprintf(what, sizeof what, "resnet50 batch %d", d.batch);
        CHECK(model_ratio(&d, M40_PHASE_PREFILL, what) <= 1.10);
    }
    m40_model_desc_init(&d, M40_MODEL_CHATGLM2_6B);
    d.weights = M40_WFMT_INT4;
    CHECK(model_ratio(&d, M40_PHASE_PREFILL, "chatglm2-6b prefill 512 (28 layers)") <= 1.10);
    CHECK(model_ratio(&d, M40_PHASE_DECODE, "chatglm2-6b decode") <= 1.10);
    /* the runnable transformer layer */
    fx_layer l;
    CHECK(fx_layer_init(&l, 128, 256, 64, 1024, 7));
    m40_graph *g = NULL;
    CHECK_ST(m40_graph_create(C, &g), M40_OK);
    CHECK_ST(fx_layer_build(g, &l, NULL, NULL, NULL), M40_OK);
    double r = check_plan(g, "layer");
    printf("%-34s ratio %.4f\n", "transformer layer T128 C256 F1024", r);
    CHECK(r <= 1.10);
    m40_graph_destroy(g);
    fx_layer_free(&l);
}

static void test_model_facts(void) {
    m40_budget b12, b24;
    CHECK_ST(m40_budget_preset("m40-12g", &b12), M40_OK);
    CHECK_ST(m40_budget_preset("m40-24g", &b24), M40_OK);
    CHECK(b12.usable_bytes == 11008ull << 20 && b24.usable_bytes == 22528ull << 20);
    CHECK(b12.board_bytes == 12288ull << 20 && b12.reserved_bytes == (768ull + 512) << 20 &&
          !strcmp(b12.name, "m40-12g"));
    m40_budget bx;
    CHECK_ST(m40_budget_preset("m40-16g", &bx), M40_ERR_INVALID_ARG);
    /* the no-ECC presets (docs/planner.md): no 1/16 reserve */
    static const struct { const char *name; uint64_t board_mib, usable_mib; } noecc[] = {
        {"m40-12g-noecc", 12288, 11776}, {"m40-24g-noecc", 24576, 24064}};
    for (int i = 0; i < 2; i++) {
        memset(&bx, 0xab, sizeof bx);
        CHECK_ST(m40_budget_preset(noecc[i].name, &bx), M40_OK);
        if (bx.usable_bytes != noecc[i].usable_mib << 20)
            fprintf(stderr, "FAIL: %s usable %llu MiB, want %llu\n", noecc[i].name,
                    (unsigned long long)(bx.usable_bytes >> 20),
                    (unsigned long long)noecc[i].usable_mib);
        CHECK(bx.usable_bytes == noecc[i].usable_mib << 20 &&
              bx.board_bytes == noecc[i].board_mib << 20 &&
              bx.reserved_bytes == 512ull << 20 && !strcmp(bx.name, noecc[i].name));
    }
    /* names match whole: no prefix, no NULL */
    CHECK_ST(m40_budget_preset("m40-12", &bx), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_budget_preset("m40", &bx), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_budget_preset(NULL, &bx), M40_ERR_INVALID_ARG);
    /* an explicit budget: the bytes as given, nothing else left over */
    memset(&bx, 0xab, sizeof bx);
    m40_budget_bytes(12345, &bx);
    CHECK(bx.usable_bytes == 12345 && bx.board_bytes == 0 && bx.reserved_bytes == 0 &&
          !strcmp(bx.name, "explicit"));
    m40_model_desc d;
    m40_model_plan mp;
    m40_model_desc_init(&d, M40_MODEL_CHATGLM2_6B);
    /* fp16 does not fit 12 GB: the weights alone are over */
    CHECK_ST(m40_model_plan_build(C, &d, &b12, &mp), M40_ERR_OOM_DEVICE);
    CHECK(mp.params == 6243584000ull);
    CHECK(!mp.plan.fits && mp.max_ctx == 0);
    CHECK(strstr(m40_errmsg(C), "region weights") && strstr(m40_errmsg(C), "short by") &&
          strstr(m40_errmsg(C), "int8 with ctx <= 32768") && strstr(m40_errmsg(C), "int4"));
    printf("fp16 on m40-12g: %s\n", m40_errmsg(C));
    CHECK(mp.fits_format[M40_WFMT_INT8] == 1 && mp.fits_format[M40_WFMT_INT4] == 1);
    /* the message, exactly: the region, the shortfall, what would fit (not
    ** the asked format with ctx <= 0, nor batch <= 0) */
    CHECK(strstr(m40_errmsg(C), "needs 11.97 GiB but m40-12g has 10.75 GiB usable: region "
                 "weights (11.63 GiB) does not fit, short by 1.22 GiB. Would fit: int8 with "
                 "ctx <= 32768 (fits as asked); int4 with ctx <= 32768 (fits as asked); "
                 "int4g128 with ctx <= 32768 (fits as asked)") != NULL);
    CHECK(!strstr(m40_errmsg(C), "fp16 with") && !strstr(m40_errmsg(C), "batch <="));
    CHECK(mp.phases == 2 && mp.arena[1] > 0 && mp.lower_bound[1] > 0 && mp.workspace[1] > 0);
    CHECK(mp.plan.usable_bytes == b12.usable_bytes &&
          mp.plan.headroom_bytes == -(int64_t)(mp.plan.total_bytes - b12.usable_bytes));
    {
        /* a budget of exactly the total fits (headroom 0), and the
        ** searches' answers are exact at that edge: the context and the
        ** batch that need exactly these bytes */
        m40_model_desc e;
        m40_model_desc_init(&e, M40_MODEL_CHATGLM2_6B);
        e.weights = M40_WFMT_INT4;
        e.ctx = 3001;
        e.batch = 2;
        m40_budget huge, exact;
        m40_budget_bytes((uint64_t)1 << 40, &huge);
        CHECK_ST(m40_model_plan_build(C, &e, &huge, &mp), M40_OK);
        CHECK(mp.kv_bytes_per_token == 2 * 28672); /* the whole batch */
        m40_budget_bytes(mp.plan.total_bytes, &exact);
        CHECK_ST(m40_model_plan_build(C, &e, &exact, &mp), M40_OK);
        CHECK(mp.plan.fits && mp.plan.headroom_bytes == 0 && mp.max_batch == 2);
        int64_t edge = 0;
        CHECK_ST(m40_model_max_ctx(C, &e, &exact, 32768, &edge), M40_OK);
        if (edge != 3001) fprintf(stderr, "FAIL: longest ctx in exactly ctx 3001's bytes: %lld\n",
                                  (long long)edge);
        CHECK(edge == 3001);
        /* the search limit: 1..2^22 */
        CHECK_ST(m40_model_max_ctx(C, &e, &exact, (int64_t)1 << 22, &edge), M40_OK);
        CHECK(edge == 3001);
        CHECK_ST(m40_model_max_ctx(C, &e, &exact, ((int64_t)1 << 22) + 1, &edge), M40_ERR_INVALID_ARG);
        CHECK_ST(m40_model_max_ctx(C, &e, &exact, 0, &edge), M40_ERR_INVALID_ARG);
        /* the weights and KV cache fill the budget exactly: the workspace
        ** is the region that crosses it */
        CHECK_ST(m40_model_plan_build(C, &e, &huge, &mp), M40_OK);
        m40_budget_bytes(mp.plan.region_bytes[M40_REGION_WEIGHTS] + mp.plan.region_bytes[M40_REGION_KV],
                         &exact);
        CHECK_ST(m40_model_plan_build(C, &e, &exact, &mp), M40_ERR_OOM_DEVICE);
        CHECK(strstr(m40_errmsg(C), "region workspace") != NULL);
        /* the shared workspace is the larger phase's: decode's at batch 64, chunk 1 */
        e.batch = 64;
        e.chunk = 1;
        CHECK_ST(m40_model_plan_build(C, &e, &huge, &mp), M40_OK);
        CHECK(mp.workspace[1] > mp.workspace[0] &&
              mp.plan.region_bytes[M40_REGION_WORKSPACE] == mp.workspace[1]);
    }
    /* fp16 fits 24 GB; int8 and int4 fit 12 GB with the full 32K context */
    CHECK_ST(m40_model_plan_build(C, &d, &b24, &mp), M40_OK);
    CHECK(mp.kv_bytes_per_token == 28672);
    /* the KV cache alone: the residual stream is an activation in the fused
    ** graph (lib/models/chatglm2.c; the unfused one kept it as the STATE
    ** "hidden" [1, 512, 4096] f32, 8 MiB more here) */
    CHECK(mp.plan.region_bytes[M40_REGION_KV] == 8192ull * 28672);
    d.ctx = 32768;
    for (int f = M40_WFMT_INT8; f <= M40_WFMT_INT4; f++) {
        d.weights = (m40_wformat)f;
        CHECK_ST(m40_model_plan_build(C, &d, &b12, &mp), M40_OK);
        CHECK(mp.params == 6243584000ull && mp.max_ctx == 32768);
        double gb = (double)mp.plan.region_bytes[M40_REGION_WEIGHTS] / 1e9;
        printf("chatglm2-6b %s: weights %.2f GB, total at 32K %.2f GB, memory allows %lld tokens\n",
               m40_wformat_name(d.weights), gb, (double)mp.plan.total_bytes / 1e9,
               (long long)mp.max_ctx_memory);
        CHECK(f == M40_WFMT_INT8 ? (gb > 6.7 && gb < 6.9) : (gb > 3.8 && gb < 4.0));
    }
    int64_t best = 0;
    d.weights = M40_WFMT_FP16;
    CHECK_ST(m40_model_max_ctx(C, &d, &b24, 32768, &best), M40_OK);
    CHECK(best == 32768);
    m40_budget tight;
    m40_budget_bytes((12ull << 30) + (256ull << 20), &tight); /* fp16 weights 11.63 GiB */
    CHECK_ST(m40_model_max_ctx(C, &d, &tight, 32768, &best), M40_OK);
    CHECK(best > 1000 && best < 32768);
    printf("fp16 longest context in 12.25 GiB: %lld\n", (long long)best);
    /* at ctx 32768 fp16 does not fit there: the asked format is offered
    ** once, at its longest context */
    d.ctx = 32768;
    CHECK_ST(m40_model_plan_build(C, &d, &tight, &mp), M40_ERR_OOM_DEVICE);
    {
        char want[64];
        snprintf(want, sizeof want, "Would fit: fp16 with ctx <= %lld; ", (long long)best);
        const char *first = strstr(m40_errmsg(C), "fp16 with");
        CHECK(strstr(m40_errmsg(C), want) != NULL && first && !strstr(first + 1, "fp16 with"));
    }
    d.ctx = 8192;
    m40_budget tiny;
    m40_budget_bytes(1, &tiny);
    CHECK_ST(m40_model_max_ctx(C, &d, &tiny, 0, &best), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_model_max_ctx(C, &d, &tiny, 1, &best), M40_OK);
    CHECK(best == 0);
    /* ResNet-50: 25.5 M parameters, batch 64 fits a 24 GB card */
    m40_model_desc_init(&d, M40_MODEL_RESNET50);
    d.batch = 64;
    CHECK_ST(m40_model_plan_build(C, &d, &b24, &mp), M40_OK);
    CHECK(mp.params == 25530472ull);
    CHECK(mp.max_batch > 64);
    /* a batch over the card: fp32 (its only format) does not fit */
    d.batch = 4000;
    CHECK_ST(m40_model_plan_build(C, &d, &b24, &mp), M40_ERR_OOM_DEVICE);
    CHECK(!mp.plan.fits && mp.fits_format[M40_WFMT_FP32] == 0 && mp.max_batch < 4000);
    d.batch = 64;
    d.weights = M40_WFMT_FP16;
    CHECK_ST(m40_model_plan_build(C, &d, &b24, &mp), M40_ERR_INVALID_ARG);
}

/* The ChatGLM2 builder is what m40_model_graph plans, phase by phase; it
** refuses bad descriptors and (until its kernels exist) a weights file. */
static void test_chatglm2_builder(void) {
    for (int ph = 0; ph < 2; ph++) {
        m40_chatglm2_desc cd;
        m40_chatglm2_desc_init(&cd);
        cd.weights = M40_WFMT_INT4;
        cd.ctx = 4096;
        cd.phase = (m40_model_phase)ph;
        m40_model_desc md;
        m40_model_desc_init(&md, M40_MODEL_CHATGLM2_6B);
        md.weights = M40_WFMT_INT4;
        md.ctx = 4096;
        m40_graph *a = NULL, *b = NULL;
        m40_chatglm2_info info;
        CHECK_ST(m40_chatglm2_graph(C, &cd, NULL, &a, &info), M40_OK);
        CHECK_ST(m40_model_graph(C, &md, (m40_model_phase)ph, &b), M40_OK);
        CHECK(info.params == 6243584000ull && info.input_ids == 0 && info.position == 1);
        m40_plan_info pa, pb;
        CHECK_ST(m40_graph_plan(a, NULL, &pa), M40_OK);
        CHECK_ST(m40_graph_plan(b, NULL, &pb), M40_OK);
        CHECK(pa.nodes == pb.nodes && pa.tensors == pb.tensors && pa.total_bytes == pb.total_bytes);
        for (int r = 0; r < M40_REGION_COUNT; r++) CHECK(pa.region_bytes[r] == pb.region_bytes[r]);
        m40_graph_tensor_info ti;
        CHECK_ST(m40_graph_get_tensor_info(a, info.logits, &ti), M40_OK);
        CHECK(ti.is_output && ti.desc.ndim == 3 && ti.desc.shape[1] == 1 && ti.desc.shape[2] == 65024);
        m40_graph_destroy(a);
        m40_graph_destroy(b);
    }
    m40_chatglm2_desc cd;
    m40_graph *g = NULL;
    m40_chatglm2_desc_init(&cd);
    cd.struct_size = 8;
    CHECK_ST(m40_chatglm2_graph(C, &cd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    CHECK(g == NULL && strstr(m40_errmsg(C), "struct_size"));
    m40_chatglm2_desc_init(&cd);
    cd.ctx = 0;
    CHECK_ST(m40_chatglm2_graph(C, &cd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    m40_chatglm2_desc_init(&cd);
    cd.phase = (m40_model_phase)7;
    CHECK_ST(m40_chatglm2_graph(C, &cd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    /* each bound one past (a mutation run found only ctx 0 and the phase);
    ** the shards are a real file that is no ChatGLM2 checkpoint, so a check
    ** that let them through would end in FORMAT, not INVALID_ARG */
    m40_st_file *rn = NULL, **many = malloc(4097 * sizeof *many);
    m40_graph *other = NULL;
    CHECK_ST(m40_st_open("tests/fixtures/resnet/reduced_resnet.safetensors", &rn), M40_OK);
    CHECK_ST(m40_graph_create(C, &other), M40_OK);
    for (int i = 0; i < 4097; i++) many[i] = rn;
    for (int k = 0; k < 7; k++) {
        m40_chatglm2_desc_init(&cd);
        switch (k) {
        case 0: cd.batch = (1 << 20) + 1; break;
        case 1: cd.slots = (1 << 20) + 1; break;
        case 2: cd.ctx = ((int64_t)1 << 22) + 1; break;
        case 3: cd.nshards = 4097, cd.shards = many; break;
        case 4: cd.config.kv_heads = 3; break; /* 32 heads in 3 groups */
        case 5: cd.config.head_dim = 126; break;
        case 6: cd.nshards = 1, cd.shards = many, cd.weights_from = other; break;
        }
        g = NULL;
        CHECK_ST(m40_chatglm2_graph(C, &cd, NULL, &g, NULL), M40_ERR_INVALID_ARG);
        CHECK(g == NULL);
        if (k == 4 || k == 5) CHECK(strstr(m40_errmsg(C), "out of range") != NULL); /* the config, named */
    }
    m40_graph_destroy(other);
    m40_st_destroy(rn);
    free(many);
    m40_st_file *w = NULL;
    CHECK_ST(m40_st_open("tests/fixtures/resnet/reduced_resnet.safetensors", &w), M40_OK);
    m40_chatglm2_desc_init(&cd);
    CHECK_ST(m40_chatglm2_graph(C, &cd, w, &g, NULL), M40_ERR_FORMAT);
    CHECK(g == NULL && strstr(m40_errmsg(C), "not a ChatGLM2 checkpoint"));
    m40_st_destroy(w);
    printf("chatglm2 builder: m40_chatglm2_graph = m40_model_graph in both phases; bad descs refused\n");
}

/* linear_q plans the GEMV's split-K scratch by the launcher's rule
** (kernels/quant_plan.h): none when x for all of K fits one block's shared
** memory, nsplit·M·N floats when not; 9..64 rows run as 8-row slices (the
** scratch of M = 8, reused slice after slice), none past them (the GEMM). */
static void test_linear_q_workspace(void) {
    static const struct { int64_t M, N, K; int bits; } cases[] = {
        {1, 4096, 4096, 8}, {8, 27392, 4096, 8}, {8, 27392, 4096, 4}, {1, 4096, 13696, 8},
        {3, 1000, 4096, 4}, {9, 27392, 4096, 8}, {8, 100, 4100, 8}, {64, 27392, 4096, 8},
        {65, 27392, 4096, 8}, {17, 4096, 13696, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t M = cases[i].M, N = cases[i].N, K = cases[i].K;
        const int64_t Ms = M > 8 && M <= 64 ? 8 : M; /* the rows a GEMV call sees */
        const int q4 = cases[i].bits == 4;
        m40_graph *g;
        CHECK_ST(m40_graph_create(C, &g), M40_OK);
        int64_t sx[2] = {M, K}, sw[2] = {N, q4 ? (K + 1) / 2 : K}, ss[1] = {N};
        m40_tensor_desc dx, dw, ds;
        m40_tensor_desc_make(&dx, M40_DTYPE_F32, 2, sx);
        m40_tensor_desc_make(&dw, M40_DTYPE_I8, 2, sw);
        m40_tensor_desc_make(&ds, M40_DTYPE_F16, 1, ss);
        int x, w, sc, y;
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &dx, &x), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "w", &dw, &w), M40_OK);
        CHECK_ST(m40_graph_tensor(g, M40_ROLE_WEIGHT, "s", &ds, &sc), M40_OK);
        m40_node_desc nd;
        m40_node_desc_init(&nd, M40_OP_LINEAR_Q);
        nd.name = "lin";
        nd.bits = cases[i].bits;
        nd.ninputs = 3;
        nd.inputs[0] = x;
        nd.inputs[1] = w;
        nd.inputs[2] = sc;
        CHECK_ST(m40_graph_node(g, &nd, &y), M40_OK);
        CHECK_ST(m40_graph_mark_output(g, y), M40_OK);
        m40_plan_info pi;
        CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
        /* the rule written out: chunks of 1024 (int4) / 512 (int8) columns,
        ** each 4 bytes per column + 128 per batch row of 48 KB, D = 2 */
        const int64_t kc = q4 ? 1024 : 512, cb = kc * 4 + 128, nck = (K + kc - 1) / kc;
        int64_t maxch = 49152 / (Ms * cb), d = maxch >= 2 && nck >= 2 ? 2 : 1, cap = maxch / d * d;
        int64_t nsplit = cap > 0 ? (nck + cap - 1) / cap : 0;
        /* what m40_quant_linear reserves (m40k_quant_gemv_workspace), for any K */
        uint64_t want = Ms <= 8 && nsplit > 1
                            ? (uint64_t)(nsplit * Ms * N * 4) : 0;
        if (pi.region_bytes[M40_REGION_WORKSPACE] < want ||
            pi.region_bytes[M40_REGION_WORKSPACE] > want + M40_GRAPH_ALIGN)
            fprintf(stderr, "linear_q M=%lld N=%lld K=%lld int%d: workspace %llu, want %llu\n",
                    (long long)M, (long long)N, (long long)K, cases[i].bits,
                    (unsigned long long)pi.region_bytes[M40_REGION_WORKSPACE],
                    (unsigned long long)want);
        CHECK(pi.region_bytes[M40_REGION_WORKSPACE] >= want &&
              pi.region_bytes[M40_REGION_WORKSPACE] <= want + M40_GRAPH_ALIGN);
        CHECK(pi.region_bytes[M40_REGION_WORKSPACE] % M40_GRAPH_ALIGN == 0);
        m40_graph_destroy(g);
    }
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) return 1;
    test_model_facts();
    test_chatglm2_builder();
    test_small_plans();
    test_ratios();
    test_fuzz();
    test_linear_q_workspace();
    m40_ctx_destroy(C);
    return m40t_finish("test_graph_planner");
}
