/* m40_model_plan_split (issue 20): ChatGLM2-6B's blocks over several cards.
** fp16 fits two 12 GB cards but not one; the stages cover the blocks once,
** in order, the first with the embedding, the last with the output layer;
** their bytes are the builder's (a stage planned here directly gives the
** same); one card gives m40_model_plan_build's total and longest contexts; a larger card takes
** more blocks; a card too small for a block is left out; the refusal names
** the shortfall and what would fit; bad arguments are refused. */
#include "check.h"
#include "m40/plan.h"

#include <string.h>

static m40_budget preset(const char *name) {
    m40_budget b;
    memset(&b, 0, sizeof b);
    CHECK_ST(m40_budget_preset(name, &b), M40_OK);
    return b;
}

/* The stages are contiguous, cover 0..layers once, the flags sit on the
** first and last used cards, and the sums are the stages'. */
static void check_shape(const m40_split_plan *sp) {
    int b = 0, first = -1, last = -1;
    uint64_t total = 0, usable = 0, params = 0;
    for (int i = 0; i < sp->ncards; i++) {
        const m40_stage_plan *s = &sp->stage[i];
        CHECK(s->layer_begin == b && s->layer_end >= b);
        if (s->layer_end > b) {
            if (first < 0) first = i;
            last = i;
        }
        CHECK(s->embedding == (i == first && s->layer_end > b));
        b = s->layer_end;
        total += s->plan.total_bytes;
        usable += s->card.usable_bytes;
        params += s->params;
        CHECK(s->plan.fits == (s->plan.total_bytes <= s->card.usable_bytes));
    }
    for (int i = 0; i < sp->ncards; i++) CHECK(sp->stage[i].output == (i == last));
    CHECK(b == sp->layers && sp->layers == 28 && first >= 0);
    CHECK(total == sp->total_bytes && usable == sp->usable_bytes && params == sp->params);
}

/* The stage's bytes as the builder gives them: both phases planned
** directly, persistent regions once, the larger arena and workspace. */
static uint64_t stage_total(m40_ctx *c, m40_wformat f, int l0, int l1) {
    uint64_t reg[M40_REGION_COUNT] = {0};
    for (int ph = 0; ph < 2; ph++) {
        m40_chatglm2_desc d;
        m40_chatglm2_desc_init(&d);
        d.weights = f;
        d.phase = (m40_model_phase)ph;
        d.layer_begin = l0;
        d.layer_end = l1;
        m40_graph *g = NULL;
        m40_plan_info pi;
        CHECK_ST(m40_chatglm2_graph(c, &d, NULL, &g, NULL), M40_OK);
        CHECK_ST(m40_graph_plan(g, NULL, &pi), M40_OK);
        m40_graph_destroy(g);
        for (int r = 0; r < M40_REGION_COUNT; r++)
            if (pi.region_bytes[r] > reg[r]) reg[r] = pi.region_bytes[r];
    }
    return reg[0] + reg[1] + reg[2] + reg[3];
}

int main(void) {
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    m40_ctx *c = NULL;
    if (m40_ctx_create(&cd, &c) != M40_OK) return 1;
    m40_model_desc d;
    m40_model_desc_init(&d, M40_MODEL_CHATGLM2_6B); /* fp16, ctx 8192 */
    m40_split_plan sp;
    const m40_budget two12[2] = {preset("m40-12g"), preset("m40-12g")};

    /* fp16: one 12 GB card is not enough, two are */
    CHECK_ST(m40_model_plan_split(c, &d, two12, 1, &sp), M40_ERR_OOM_DEVICE);
    CHECK(!sp.fits && sp.shortfall_bytes > 0 && sp.max_ctx == 0 && sp.fits_format[M40_WFMT_INT8]);
    CHECK(strstr(m40_errmsg(c), "short by") && strstr(m40_errmsg(c), "int8 with ctx <= 32768"));
    check_shape(&sp);
    m40_model_plan mp; /* one card: the single-card plan's bytes */
    CHECK_ST(m40_model_plan_build(c, &d, &two12[0], &mp), M40_ERR_OOM_DEVICE);
    CHECK(mp.plan.total_bytes == sp.total_bytes && mp.params == sp.params);
    CHECK((uint64_t)(-sp.stage[0].plan.headroom_bytes) == sp.shortfall_bytes);

    /* batch 16 int8: the longest contexts (7144 and the like) as one card's plan */
    m40_model_desc d16 = d;
    d16.batch = 16;
    d16.weights = M40_WFMT_INT8;
    m40_model_plan mq;
    m40_model_plan_build(c, &d16, &two12[0], &mq);
    m40_model_plan_split(c, &d16, two12, 1, &sp);
    CHECK(mq.plan.total_bytes == sp.total_bytes && mq.max_ctx == sp.max_ctx &&
          sp.max_ctx > 0 && sp.max_ctx < 32768);
    for (int f = 0; f < M40_WFMT_COUNT; f++)
        CHECK(mq.max_ctx_format[f] == sp.max_ctx_format[f] && mq.fits_format[f] == sp.fits_format[f]);

    CHECK_ST(m40_model_plan_split(c, &d, two12, 2, &sp), M40_OK);
    check_shape(&sp);
    printf("fp16 on 2x m40-12g: layers %d-%d | %d-%d, %.1f%% full at most\n",
           sp.stage[0].layer_begin, sp.stage[0].layer_end - 1, sp.stage[1].layer_begin,
           sp.stage[1].layer_end - 1, 100 * sp.fill);
    CHECK(sp.fits && sp.shortfall_bytes == 0 && sp.fill <= 1.0 && sp.max_ctx == 32768);
    CHECK(sp.stage[0].layer_end == 14); /* alike cards: even halves */
    CHECK(sp.fits_format[M40_WFMT_FP16] == 1 && sp.fits_format[M40_WFMT_FP32] == 0);
    CHECK(sp.hidden_bytes_per_token == 4096 * 4);
    /* exact: each stage is the builder's plan of its range */
    for (int i = 0; i < 2; i++)
        CHECK(sp.stage[i].plan.total_bytes ==
              stage_total(c, M40_WFMT_FP16, sp.stage[i].layer_begin, sp.stage[i].layer_end));
    /* the weights are split, not copied: the stages' weights are the model's */
    CHECK(sp.stage[0].plan.region_bytes[M40_REGION_WEIGHTS] +
              sp.stage[1].plan.region_bytes[M40_REGION_WEIGHTS] ==
          mp.plan.region_bytes[M40_REGION_WEIGHTS]);

    /* a mix, fp32 (23.7 GB): the 24 GB card takes more blocks */
    const m40_budget mix[2] = {preset("m40-24g"), preset("m40-12g")};
    d.weights = M40_WFMT_FP32;
    CHECK_ST(m40_model_plan_split(c, &d, mix, 2, &sp), M40_OK);
    check_shape(&sp);
    CHECK(sp.fits && sp.stage[0].layer_end - sp.stage[0].layer_begin >
                         sp.stage[1].layer_end - sp.stage[1].layer_begin);
    /* refused on 2x 12 GB: per card and in all, and what would fit */
    CHECK_ST(m40_model_plan_split(c, &d, two12, 2, &sp), M40_ERR_OOM_DEVICE);
    check_shape(&sp);
    CHECK(!sp.fits && sp.total_bytes > sp.usable_bytes && sp.shortfall_bytes > 0 && sp.fill > 1);
    CHECK(strstr(m40_errmsg(c), "split over 2 cards") && strstr(m40_errmsg(c), "short by") &&
          strstr(m40_errmsg(c), "fp16 with ctx <= 32768 (fits as asked)"));

    /* four cards, int4: every card used, about equally full */
    const m40_budget four[4] = {two12[0], two12[0], two12[0], two12[0]};
    d.weights = M40_WFMT_INT4;
    CHECK_ST(m40_model_plan_split(c, &d, four, 4, &sp), M40_OK);
    check_shape(&sp);
    double lo = 2;
    for (int i = 0; i < 4; i++) {
        double f = (double)sp.stage[i].plan.total_bytes / (double)sp.stage[i].card.usable_bytes;
        CHECK(sp.stage[i].layer_end > sp.stage[i].layer_begin);
        if (f < lo) lo = f;
    }
    CHECK(sp.fill - lo < 0.02);

    /* a card too small for one block is left out */
    m40_budget tiny[2] = {preset("m40-24g")};
    m40_budget_bytes((uint64_t)64 << 20, &tiny[1]);
    d.weights = M40_WFMT_FP16;
    CHECK_ST(m40_model_plan_split(c, &d, tiny, 2, &sp), M40_OK);
    check_shape(&sp);
    CHECK(sp.stage[0].layer_end == 28 && sp.stage[0].output && sp.stage[1].layer_begin == 28 &&
          sp.stage[1].layer_end == 28 && !sp.stage[1].embedding && sp.stage[1].plan.total_bytes == 0);

    /* refusals */
    CHECK_ST(m40_model_plan_split(c, &d, two12, 0, &sp), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_model_plan_split(c, &d, two12, M40_PLAN_MAX_CARDS + 1, &sp), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_model_plan_split(c, &d, NULL, 2, &sp), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_model_plan_split(c, NULL, two12, 2, &sp), M40_ERR_INVALID_ARG);
    m40_budget zero[2] = {two12[0]};
    CHECK_ST(m40_model_plan_split(c, &d, zero, 2, &sp), M40_ERR_INVALID_ARG);
    m40_model_desc bad = d;
    bad.ctx = 0;
    CHECK_ST(m40_model_plan_split(c, &bad, two12, 2, &sp), M40_ERR_INVALID_ARG);
    bad = d;
    bad.struct_size = 8;
    CHECK_ST(m40_model_plan_split(c, &bad, two12, 2, &sp), M40_ERR_INVALID_ARG);
    m40_model_desc rn;
    m40_model_desc_init(&rn, M40_MODEL_RESNET50);
    CHECK_ST(m40_model_plan_split(c, &rn, two12, 2, &sp), M40_ERR_UNSUPPORTED);
    /* the context is still usable */
    CHECK_ST(m40_model_plan_split(c, &d, two12, 2, &sp), M40_OK);
    /* tensor parallelism on unequal cards: every card holds the same
    ** bytes, so fp32 (12.80 GiB a card) fits the 24 GB card and not the
    ** 12 GB one; the plan must not fit whichever card comes first */
    {
        m40_model_desc f;
        m40_model_desc_init(&f, M40_MODEL_CHATGLM2_6B);
        f.weights = M40_WFMT_FP32;
        const m40_budget mix[2][2] = {{preset("m40-24g"), preset("m40-12g")},
                                      {preset("m40-12g"), preset("m40-24g")}};
        for (int k = 0; k < 2; k++) {
            CHECK_ST(m40_model_plan_tensor(c, &f, mix[k], 2, &sp), M40_ERR_OOM_DEVICE);
            CHECK(!sp.fits && sp.fits_format[M40_WFMT_FP32] == 0 && sp.max_ctx == 0);
            const m40_stage_plan *over = &sp.stage[k == 0 ? 1 : 0];
            CHECK(!over->plan.fits && sp.shortfall_bytes == over->plan.total_bytes - over->card.usable_bytes);
            char want[96];
            snprintf(want, sizeof want, "card %d (m40-12g, layers 0-27) needs 12.80 GiB, short by 2.05 GiB",
                     k == 0 ? 1 : 0);
            if (!strstr(m40_errmsg(c), want)) fprintf(stderr, "FAIL: lacks '%s': %s\n", want, m40_errmsg(c));
            CHECK(strstr(m40_errmsg(c), want) != NULL);
            CHECK(sp.fill == (double)over->plan.total_bytes / (double)over->card.usable_bytes);
        }
        /* equal cards, equal fill: the first is named; both short, summed */
        CHECK_ST(m40_model_plan_tensor(c, &f, two12, 2, &sp), M40_ERR_OOM_DEVICE);
        CHECK(strstr(m40_errmsg(c), "split card 0 (m40-12g") != NULL);
        CHECK(sp.shortfall_bytes == 2 * (sp.stage[0].plan.total_bytes - sp.stage[0].card.usable_bytes));
        /* what moves between cards per token, for the whole batch */
        f.weights = M40_WFMT_FP16;
        f.batch = 2;
        CHECK_ST(m40_model_plan_tensor(c, &f, two12, 2, &sp), M40_OK);
        CHECK(sp.hidden_bytes_per_token == 2ull * 28 * 2 * 4096 * 4);
        CHECK_ST(m40_model_plan_split(c, &f, two12, 2, &sp), M40_OK);
        CHECK(sp.hidden_bytes_per_token == 2ull * 4096 * 4);
        /* one card of exactly the model's bytes: it fits, in every answer */
        m40_model_plan mp;
        m40_budget one[1];
        CHECK_ST(m40_budget_preset("m40-24g", &one[0]), M40_OK);
        f.batch = 1;
        CHECK_ST(m40_model_plan_build(c, &f, &one[0], &mp), M40_OK);
        m40_budget_bytes(mp.plan.total_bytes, &one[0]);
        CHECK_ST(m40_model_plan_split(c, &f, one, 1, &sp), M40_OK);
        CHECK(sp.fits && sp.fits_format[M40_WFMT_FP16] == 1 && sp.max_ctx == f.ctx);
        /* 16 cards is the limit, 17 is over */
        m40_budget many[M40_PLAN_MAX_CARDS];
        for (int i = 0; i < M40_PLAN_MAX_CARDS; i++) many[i] = preset("m40-24g");
        CHECK_ST(m40_model_plan_split(c, &f, many, M40_PLAN_MAX_CARDS, &sp), M40_OK);
        CHECK(sp.ncards == M40_PLAN_MAX_CARDS);
        CHECK_ST(m40_model_plan_split(c, &f, many, M40_PLAN_MAX_CARDS + 1, &sp), M40_ERR_INVALID_ARG);
    }
    m40_ctx_destroy(c);
    return m40t_finish("test_plan_split");
}
