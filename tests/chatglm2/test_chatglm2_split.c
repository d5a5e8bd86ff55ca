/* ChatGLM2 split across several contexts (issue 20's layer split, "two
** contexts on the same device emulate two cards"): a small random
** checkpoint (4 blocks, written here as safetensors) runs whole on one
** context, then as 2 and 3 pipeline stages (m40_chatglm2_desc.layer_begin /
** layer_end), each stage on its own context with its own weights and its
** own slice of the KV cache; the hidden state [B,T,C] f32 goes host-side
** from one stage's hidden_out to the next one's hidden_in. A prefill chunk
** (every position's logits), then greedy decode steps through each
** stage's decode graph. The split must give the whole model's logits
** (max |Δ| / max |ref| <= 1e-5 per position) and the same greedy ids; a
** wrong boundary (a block skipped, a block run twice) must not.
** Also: the stage's tensor ids, the refusals of bad ranges, the old
** struct_size, that the stages' weights and KV caches add up to the
** whole model's, and that a stage reads and checks only its own tensors
** (a stray tensor of block 2 is refused by the stage holding block 2). `--gpu`: every context on GPU 0 (exit 77 without one). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "check.h"
#include "m40/models.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAYERS 4
#define HID 64   /* C */
#define FFN 96   /* F */
#define HEADS 4  /* H */
#define GROUPS 2 /* G */
#define HDIM 16  /* D */
#define VOCAB 97 /* V */
#define CTX 32
#define NPROMPT 7
#define NDECODE 6
#define TOL 1e-5

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double uniform(void) { /* (0, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static float normal(double std) {
    return (float)(std * sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform()));
}

/* The checkpoint's tensors, in file order: name, shape, how to fill. */
typedef struct wspec {
    char name[96];
    int64_t rows, cols; /* cols 0: 1-D [rows] */
    int kind;           /* 0: normal(0, 1/sqrt(cols)) (embedding: 1), 1: norm ~1, 2: bias */
} wspec;

static int specs(wspec *w) {
    int n = 0;
    const int64_t QKV = (HEADS + 2 * GROUPS) * HDIM;
    w[n++] = (wspec){"transformer.embedding.word_embeddings.weight", VOCAB, HID, 0};
    for (int l = 0; l < LAYERS; l++) {
        static const struct { const char *s; int r, c, k; } t[] = {
            {"input_layernorm.weight", 0, -1, 1},
            {"self_attention.query_key_value.weight", 1, 0, 0},
            {"self_attention.query_key_value.bias", 1, -1, 2},
            {"self_attention.dense.weight", 0, 2, 0},
            {"post_attention_layernorm.weight", 0, -1, 1},
            {"mlp.dense_h_to_4h.weight", 3, 0, 0},
            {"mlp.dense_4h_to_h.weight", 0, 4, 0}};
        const int64_t dim[5] = {HID, QKV, HEADS * HDIM, 2 * FFN, FFN};
        for (int i = 0; i < 7; i++) {
            snprintf(w[n].name, sizeof w[n].name, "transformer.encoder.layers.%d.%s", l, t[i].s);
            w[n].rows = dim[t[i].r];
            w[n].cols = t[i].c < 0 ? 0 : dim[t[i].c];
            w[n++].kind = t[i].k;
        }
    }
    w[n++] = (wspec){"transformer.encoder.final_layernorm.weight", HID, 0, 1};
    w[n++] = (wspec){"transformer.output_layer.weight", VOCAB, HID, 0};
    return n;
}

/* Writes the random checkpoint (F32, the heads in the metadata) to path;
** with `extra`, one more tensor [4] of that name. */
static int write_checkpoint(const char *path, const char *extra) {
    wspec w[2 + 7 * LAYERS + 3];
    int n = specs(w);
    if (extra) {
        w[n] = (wspec){"", 4, 0, 2};
        snprintf(w[n++].name, sizeof w[0].name, "%s", extra);
    }
    char head[16384];
    size_t hl = (size_t)snprintf(head, sizeof head, "{\"__metadata__\":{\"num_attention_heads\":"
                                 "\"%d\",\"multi_query_group_num\":\"%d\",\"kv_channels\":\"%d\"}",
                                 HEADS, GROUPS, HDIM);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)w[i].rows * (uint64_t)(w[i].cols ? w[i].cols : 1) * 4;
        char shape[48];
        if (w[i].cols) snprintf(shape, sizeof shape, "%lld,%lld", (long long)w[i].rows, (long long)w[i].cols);
        else snprintf(shape, sizeof shape, "%lld", (long long)w[i].rows);
        hl += (size_t)snprintf(head + hl, sizeof head - hl, ",\"%s\":{\"dtype\":\"F32\",\"shape\":"
                               "[%s],\"data_offsets\":[%llu,%llu]}", w[i].name, shape,
                               (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
        if (hl > sizeof head - 256) return 0;
    }
    head[hl++] = '}';
    while (hl % 8) head[hl++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(head, 1, hl, f) == hl;
    for (int i = 0; ok && i < n; i++) {
        int64_t k = w[i].cols ? w[i].cols : 1, m = w[i].rows * k;
        for (int64_t j = 0; ok && j < m; j++) {
            float v = w[i].kind == 1 ? 1.0f + normal(0.1)
                    : w[i].kind == 2 ? normal(0.1)
                    : normal(i == 0 ? 1.0 : 1.0 / sqrt((double)k));
            ok = fwrite(&v, 4, 1, f) == 1;
        }
    }
    return fclose(f) == 0 && ok;
}

/* One stage of a pipeline on its own context: a prefill graph (every
** position) and a decode graph sharing its weights and KV cache. */
typedef struct stage {
    m40_ctx *c;
    m40_graph *pg, *dg;
    m40_chatglm2_info pi, di;
} stage;

static m40_graph *build(m40_ctx *c, m40_st_file *w, m40_wformat fmt, int decode, int l0, int l1,
                        m40_graph *from, const m40_chatglm2_config *cfg, m40_chatglm2_info *inf) {
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    if (cfg) d.config = *cfg;
    d.weights = fmt;
    d.ctx = CTX;
    d.chunk = NPROMPT;
    d.phase = decode ? M40_PHASE_DECODE : M40_PHASE_PREFILL;
    d.all_logits = 1;
    d.weights_from = from;
    d.layer_begin = l0;
    d.layer_end = l1;
    m40_graph *g = NULL;
    m40_status st = m40_chatglm2_graph(c, &d, from ? NULL : w, &g, inf);
    CHECK_ST(st, M40_OK);
    if (st != M40_OK) fprintf(stderr, "stage %d..%d: %s\n", l0, l1, m40_errmsg(c));
    return g;
}

/* max |got - ref| / max |ref| over one row of V logits. */
static double rel_err(const float *got, const float *ref) {
    double e = 0, m = 0;
    for (int i = 0; i < VOCAB; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= e)) e = d; /* NaN counts */
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
    }
    return m > 0 ? e / m : e;
}

/* Runs T tokens through the stages (prefill graphs, or decode graphs) at
** positions pos0..: ids into stage 0, the hidden state host-side from each
** stage to the next, T rows of logits out of the last. */
static int step(stage *s, int n, int decode, const int *ids, int pos0, int T, float *logits) {
    float hid[NPROMPT * HID]; /* [1,T,C] */
    int pos[NPROMPT];
    for (int i = 0; i < T; i++) pos[i] = pos0 + i;
    for (int k = 0; k < n; k++) {
        m40_graph *g = decode ? s[k].dg : s[k].pg;
        const m40_chatglm2_info *in = decode ? &s[k].di : &s[k].pi;
        m40_tensor *t;
        m40_status st;
        if ((st = m40_graph_get_tensor(g, in->position, &t)) ||
            (st = m40_tensor_upload(s[k].c, t, pos, (size_t)T * 4)) ||
            (st = m40_graph_get_tensor(g, k ? in->hidden_in : in->input_ids, &t)) ||
            (st = m40_tensor_upload(s[k].c, t, k ? (const void *)hid : (const void *)ids,
                                    (size_t)T * (k ? HID * 4 : 4))) ||
            (st = m40_graph_run(g)) ||
            (st = m40_graph_get_tensor(g, k + 1 < n ? in->hidden_out : in->logits, &t)) ||
            (st = k + 1 < n ? m40_tensor_download(s[k].c, t, hid, (size_t)T * HID * 4)
                            : m40_tensor_download(s[k].c, t, logits, (size_t)T * VOCAB * 4))) {
            fprintf(stderr, "stage %d: %s: %s\n", k, m40_status_str(st), m40_errmsg(s[k].c));
            return 0;
        }
    }
    return 1;
}

/* Prefill the prompt, then NDECODE greedy steps, each fed the run's own
** argmax. out: [NPROMPT + NDECODE][V] logits; ids: the greedy ids. */
static int conversation(stage *s, int n, float *out, int *ids) {
    static const int prompt[NPROMPT] = {3, 41, 77, 12, 96, 5, 58};
    if (!step(s, n, 0, prompt, 0, NPROMPT, out)) return 0;
    int next = m40t_argmax(out + (NPROMPT - 1) * VOCAB, VOCAB);
    for (int i = 0; i < NDECODE; i++) {
        ids[i] = next;
        float *row = out + (size_t)(NPROMPT + i) * VOCAB;
        if (!step(s, n, 1, &next, NPROMPT + i, 1, row)) return 0;
        next = m40t_argmax(row, VOCAB);
    }
    return 1;
}

static m40_ctx *new_ctx(int gpu) {
    return gpu ? m40t_gpu_ctx_or_skip("test_chatglm2_split") : m40t_ctx(0);
}

/* The stages given by bounds[0..n] (bounds[0] = 0 unless testing a wrong
** split) on contexts ctxs[0..n-1]. Returns 1 with every graph built. */
static int make_stages(stage *s, int n, m40_ctx **ctxs, m40_st_file *w, m40_wformat fmt,
                       const int *l0, const int *l1) {
    for (int k = 0; k < n; k++) {
        memset(&s[k], 0, sizeof s[k]);
        s[k].c = ctxs[k];
        if (!(s[k].pg = build(s[k].c, w, fmt, 0, l0[k], l1[k], NULL, NULL, &s[k].pi)) ||
            !(s[k].dg = build(s[k].c, w, fmt, 1, l0[k], l1[k], s[k].pg, &s[k].pi.config, &s[k].di)))
            return 0;
    }
    return 1;
}

static void free_stages(stage *s, int n) {
    for (int k = 0; k < n; k++) {
        m40_graph_destroy(s[k].dg);
        m40_graph_destroy(s[k].pg);
        s[k].dg = s[k].pg = NULL;
    }
}

/* The worst row's error of a split against the whole run, and how many
** greedy ids agree. Returns 0 if the split could not run. */
static int compare(stage *s, int n, const float *ref, const int *ref_ids, float *got,
                   double *worst, int *same) {
    int ids[NDECODE];
    *worst = 0;
    *same = 0;
    if (!conversation(s, n, got, ids)) return 0;
    for (int p = 0; p < NPROMPT + NDECODE; p++) {
        double e = rel_err(got + (size_t)p * VOCAB, ref + (size_t)p * VOCAB);
        if (!(e <= *worst)) *worst = e;
    }
    for (int i = 0; i < NDECODE; i++) *same += ids[i] == ref_ids[i];
    return 1;
}

/* A stage checks its own tensors only: a stray tensor named as block 2's
** is refused by the stage holding block 2 and by the whole model, not by
** the stage of blocks 0-1; that stage reads exactly its own bytes. */
static uint64_t read_done, read_total;
static void on_progress(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)user;
    if (!strcmp(stage, "read")) read_done = done, read_total = total;
}

static void test_stray(m40_ctx *c, const char *path) {
    m40_st_file *w = NULL;
    if (!write_checkpoint(path, "transformer.encoder.layers.2.mlp.stray") ||
        m40_st_open(path, &w) != M40_OK) {
        CHECK(0);
        return;
    }
    static const int r[3][2] = {{0, 2}, {2, 4}, {0, 0}};
    for (int i = 0; i < 3; i++) {
        m40_chatglm2_desc d;
        m40_chatglm2_desc_init(&d);
        d.weights = M40_WFMT_FP32;
        d.ctx = CTX;
        d.layer_begin = r[i][0];
        d.layer_end = r[i][1];
        d.progress = on_progress;
        read_done = read_total = 0;
        m40_graph *g = NULL;
        m40_status st = m40_chatglm2_graph(c, &d, w, &g, NULL);
        if (i == 0) {
            /* the embedding and blocks 0-1: (V + 2·(C + Q·C + Q + C·H·D + C + 2F·C + C·F))·4 bytes */
            const uint64_t Q = (HEADS + 2 * GROUPS) * HDIM;
            const uint64_t blk = HID + Q * HID + Q + (uint64_t)HID * HEADS * HDIM + HID +
                                 2 * FFN * HID + (uint64_t)HID * FFN;
            CHECK_ST(st, M40_OK);
            CHECK(read_done == read_total && read_total == ((uint64_t)VOCAB * HID + 2 * blk) * 4);
        } else {
            CHECK_ST(st, M40_ERR_FORMAT);
            CHECK(strstr(m40_errmsg(c), "unknown tensor 'transformer.encoder.layers.2.mlp.stray'"));
        }
        m40_graph_destroy(g);
    }
    m40_st_destroy(w);
}

/* The stage ids, the weights and KV cache adding up, the refusals. */
static void test_api(m40_ctx *c, m40_st_file *w, const m40_chatglm2_info *whole) {
    stage s[2];
    m40_ctx *cs[2] = {c, c};
    const int l0[2] = {0, 1}, l1[2] = {1, LAYERS};
    if (make_stages(s, 2, cs, w, M40_WFMT_FP32, l0, l1)) {
        CHECK(s[0].pi.input_ids >= 0 && s[0].pi.hidden_in == -1 && s[0].pi.hidden_out >= 0 &&
              s[0].pi.logits == -1 && s[0].pi.layer_begin == 0 && s[0].pi.layer_end == 1);
        CHECK(s[1].pi.input_ids == -1 && s[1].pi.hidden_in >= 0 && s[1].pi.hidden_out == -1 &&
              s[1].pi.logits >= 0 && s[1].pi.layer_begin == 1 && s[1].pi.layer_end == LAYERS);
        CHECK(whole->hidden_in == -1 && whole->hidden_out == -1 && whole->layer_begin == 0 &&
              whole->layer_end == LAYERS);
        /* each weight and cache once: the stages' regions are the whole's,
        ** but each stage has its own residual stream (STATE, [1,T,C] f32) */
        CHECK(s[0].pi.plan.region_bytes[M40_REGION_WEIGHTS] +
                  s[1].pi.plan.region_bytes[M40_REGION_WEIGHTS] ==
              whole->plan.region_bytes[M40_REGION_WEIGHTS]);
        CHECK(s[0].pi.plan.region_bytes[M40_REGION_KV] + s[1].pi.plan.region_bytes[M40_REGION_KV] ==
              whole->plan.region_bytes[M40_REGION_KV] + NPROMPT * HID * 4);
        m40_graph_tensor_info ti;
        CHECK_ST(m40_graph_get_tensor_info(s[0].dg, s[0].di.hidden_out, &ti), M40_OK);
        CHECK(ti.desc.ndim == 3 && ti.desc.shape[0] == 1 && ti.desc.shape[1] == 1 &&
              ti.desc.shape[2] == HID && ti.desc.dtype == M40_DTYPE_F32 && ti.is_output);
        CHECK_ST(m40_graph_get_tensor_info(s[1].pg, s[1].pi.hidden_in, &ti), M40_OK);
        CHECK(ti.role == M40_ROLE_INPUT && ti.desc.shape[1] == NPROMPT && ti.desc.shape[2] == HID);
    }
    free_stages(s, 2);
    /* bad ranges: refused with a message, nothing built */
    static const int bad[][2] = {{2, 2}, {3, 1}, {-1, 2}, {0, LAYERS + 1}, {1, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m40_chatglm2_desc d;
        m40_chatglm2_desc_init(&d);
        d.ctx = CTX;
        d.layer_begin = bad[i][0];
        d.layer_end = bad[i][1];
        m40_graph *g = (m40_graph *)&d;
        CHECK_ST(m40_chatglm2_graph(c, &d, w, &g, NULL), M40_ERR_INVALID_ARG);
        CHECK(g == NULL && strstr(m40_errmsg(c), "layer range") != NULL);
    }
    /* a caller built before the layer range: the whole model, whatever
    ** follows its struct */
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.ctx = CTX;
    d.struct_size = offsetof(m40_chatglm2_desc, layer_begin);
    d.layer_begin = 3;
    d.layer_end = 1;
    m40_graph *g = NULL;
    m40_chatglm2_info inf;
    CHECK_ST(m40_chatglm2_graph(c, &d, w, &g, &inf), M40_OK);
    CHECK(g && inf.layer_begin == 0 && inf.layer_end == LAYERS && inf.logits >= 0);
    m40_graph_destroy(g);
    d.struct_size = offsetof(m40_chatglm2_desc, layer_begin) - 1;
    CHECK_ST(m40_chatglm2_graph(c, &d, w, &g, &inf), M40_ERR_INVALID_ARG);
}

int main(int argc, char **argv) {
    int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    m40_ctx *ctxs[4] = {0};
    for (int i = 0; i < 4; i++)
        if (!(ctxs[i] = new_ctx(gpu))) {
            for (int j = 0; j < i; j++) m40_ctx_destroy(ctxs[j]);
            return gpu ? M40T_SKIP : 1;
        }
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/m40_split_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    m40_st_file *w = NULL;
    if (fd < 0 || close(fd) != 0 || !write_checkpoint(path, NULL) || m40_st_open(path, &w) != M40_OK) {
        fprintf(stderr, "test_chatglm2_split: cannot write and open the checkpoint %s\n", path);
        return 1;
    }
    size_t nrows = NPROMPT + NDECODE;
    float *ref = malloc(nrows * VOCAB * 4), *got = malloc(nrows * VOCAB * 4);
    CHECK(ref && got);
    static const m40_wformat fmts[3] = {M40_WFMT_FP32, M40_WFMT_FP16, M40_WFMT_INT8};
    for (int fi = 0; ref && got && fi < 3; fi++) {
        m40_wformat fmt = fmts[fi];
        stage whole[1];
        int ref_ids[NDECODE];
        const int a0[1] = {0}, a1[1] = {LAYERS};
        if (!make_stages(whole, 1, ctxs + 3, w, fmt, a0, a1) ||
            !conversation(whole, 1, ref, ref_ids)) {
            CHECK(0);
            free_stages(whole, 1);
            continue;
        }
        if (fi == 0) test_api(ctxs[0], w, &whole[0].pi);
        /* the splits: 2 stages (even, uneven) and 3, on separate contexts;
        ** then two wrong boundaries that must be caught */
        static const struct { int n, l0[3], l1[3], wrong; const char *what; } cases[] = {
            {2, {0, 2}, {2, 4}, 0, "2 stages 0-1 | 2-3"},
            {2, {0, 3}, {3, 4}, 0, "2 stages 0-2 | 3"},
            {3, {0, 1, 3}, {1, 3, 4}, 0, "3 stages 0 | 1-2 | 3"},
            {2, {0, 3}, {2, 4}, 1, "wrong: block 2 skipped"},
            {2, {0, 1}, {2, 4}, 1, "wrong: block 1 run twice"}};
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            stage s[3];
            double worst = 0;
            int same = 0;
            int ok = make_stages(s, cases[k].n, ctxs, w, fmt, cases[k].l0, cases[k].l1) &&
                     compare(s, cases[k].n, ref, ref_ids, got, &worst, &same);
            printf("%s %-28s max |dlogit| / max |logit| %.2e (tolerance %.0e), greedy ids %d/%d%s\n",
                   m40_wformat_name(fmt), cases[k].what, worst, TOL, same, NDECODE,
                   cases[k].wrong ? (worst > TOL ? ": caught" : ": NOT CAUGHT") : "");
            CHECK(ok);
            if (cases[k].wrong) CHECK(ok && worst > 100 * TOL);
            else CHECK(ok && worst <= TOL && same == NDECODE);
            free_stages(s, cases[k].n);
        }
        free_stages(whole, 1);
    }
    free(ref);
    free(got);
    m40_st_destroy(w);
    test_stray(ctxs[0], path);
    remove(path);
    for (int i = 0; i < 4; i++) m40_ctx_destroy(ctxs[i]);
    return m40t_finish("test_chatglm2_split");
}
