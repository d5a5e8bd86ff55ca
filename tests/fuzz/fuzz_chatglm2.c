/* libFuzzer target: the ChatGLM2 checkpoint loader (lib/models/chatglm2.c:
** m40_chatglm2_config_of, m40_chatglm2_graph) on a CPU context, then one
** tiny prefill through what it accepted.
**
** Input: 8 control bytes, then one or more .safetensors files separated by
** SEP (shards: at most 4), each handed to m40_st_open through a memfd.
**   [0] weight format (% 5: fp32 fp16 int8 int4 int4g128)
**   [1] flags: 1 check_config (config.json's values = what config_of read),
**       2 perturb one of them by [3], 4 a decode graph on the prefill's
**       weights (weights_from) and one step, 8 all_logits, 16 a budget of
**       [3]·4 KiB, 32 raw ids (else id % vocab), 64 decode phase first,
**       128 one file passed as shards
**   [2] T = 1 + [2] % 4 tokens, ctx = T + ([2] >> 2) % 16
**   [3] perturbation (field [3] % 8: layers hidden ffn vocab heads kv_heads
**       head_dim, 7: eps and rope_theta; its value from [3] >> 3; 64: the
**       three head fields at once) / budget
**   [4..7] ids
** Every refusal must be a status with a message and no graph; config_of
** returns a config.json it accepts unchanged, and the graph refuses one it
** refused; an accepted checkpoint must report the config config_of read, and
** the prefill of valid ids at valid positions must run (the library checked
** the file, so running what it accepted is the part that finds out-of-bounds
** reads).
** Inputs over 4 MB are skipped (run_fuzz.sh caps them far lower). */
#define _GNU_SOURCE /* memfd_create, memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "m40/models.h"

#define SEP "<m40-shard>"
#define MAX_FILES 4
#define MAX_INPUT (4u << 20)

static m40_ctx *ctx;
static int verbose = -1; /* M40_FUZZ_VERBOSE=1: say what became of each input */
#define SAY(...) (verbose ? fprintf(stderr, __VA_ARGS__) : 0)
static int fds[MAX_FILES] = {-1, -1, -1, -1};

static void need(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_chatglm2: %s (%s)\n", what, ctx ? m40_errmsg(ctx) : "");
        abort();
    }
}

/* A failed call: a status that says why and nothing left behind. */
static void refused(m40_status st, m40_graph *g) {
    SAY("refused: %s: %s\n", m40_status_str(st), m40_errmsg(ctx));
    need(st != M40_OK && st < M40_STATUS_COUNT && m40_errmsg(ctx)[0] && !g, "a refusal without a message");
}

static struct { int bad; } prog;
static void on_progress(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)user;
    if (done > total || (strcmp(stage, "read") && strcmp(stage, "upload"))) prog.bad = 1;
}

static m40_st_file *open_mem(int i, const uint8_t *p, size_t n) {
    char path[64];
    if (fds[i] < 0) need((fds[i] = memfd_create("fuzz_chatglm2", 0)) >= 0, "memfd_create");
    need(ftruncate(fds[i], 0) == 0 && pwrite(fds[i], p, n, 0) == (ssize_t)n, "pwrite");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[i]);
    m40_st_file *f = NULL;
    if (m40_st_open(path, &f) != M40_OK) {
        m40_st_destroy(f);
        return NULL;
    }
    return f;
}

/* Uploads ids and positions, runs, reads `rows` rows of V logits. */
static m40_status run(m40_graph *g, const m40_chatglm2_info *inf, const int32_t *ids,
                      const int32_t *pos, int T, int rows) {
    m40_tensor *ti, *tp, *tl;
    size_t n = (size_t)rows * (size_t)inf->config.vocab;
    float *logits = malloc(n * sizeof *logits);
    need(logits != NULL, "malloc");
    m40_status st;
    if ((st = m40_graph_get_tensor(g, inf->input_ids, &ti)) == M40_OK &&
        (st = m40_graph_get_tensor(g, inf->position, &tp)) == M40_OK &&
        (st = m40_graph_get_tensor(g, inf->logits, &tl)) == M40_OK &&
        (st = m40_tensor_upload(ctx, ti, ids, (size_t)T * 4)) == M40_OK &&
        (st = m40_tensor_upload(ctx, tp, pos, (size_t)T * 4)) == M40_OK &&
        (st = m40_graph_run(g)) == M40_OK)
        st = m40_tensor_download(ctx, tl, logits, n * sizeof *logits);
    free(logits);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8 || size > MAX_INPUT) return 0;
    if (verbose < 0) verbose = getenv("M40_FUZZ_VERBOSE") && getenv("M40_FUZZ_VERBOSE")[0] == '1';
    if (!ctx) {
        m40_ctx_desc cd;
        m40_ctx_desc_init(&cd);
        cd.device = M40_DEVICE_CPU;
        need(m40_ctx_create(&cd, &ctx) == M40_OK, "CPU context");
    }
    const uint8_t fmt = data[0] % M40_WFMT_COUNT, fl = data[1], tb = data[2], pb = data[3];
    const int T = 1 + tb % 4;
    /* the files */
    m40_st_file *files[MAX_FILES];
    int nf = 0, opened = 1;
    const uint8_t *p = data + 8, *end = data + size;
    while (nf < MAX_FILES && opened) {
        const uint8_t *s = nf < MAX_FILES - 1 ? memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1) : NULL;
        const uint8_t *e = s ? s : end;
        if (!(files[nf] = open_mem(nf, p, (size_t)(e - p)))) opened = 0;
        else nf++;
        if (!s) break;
        p = s + sizeof SEP - 1;
    }
    if (!opened || nf == 0) {
        SAY("a file does not open\n");
        goto done;
    }

    /* the config the loader reads, as the chat example asks for it */
    m40_chatglm2_config cfg, want;
    m40_status st = m40_chatglm2_config_of(ctx, files, nf, NULL, &cfg);
    if (st != M40_OK) {
        refused(st, NULL);
        goto done;
    }
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.weights = (m40_wformat)fmt;
    d.chunk = T;
    d.ctx = T + (tb >> 2) % 16;
    d.phase = fl & 64 ? M40_PHASE_DECODE : M40_PHASE_PREFILL;
    d.all_logits = (fl & 8) != 0;
    d.progress = on_progress;
    m40_budget budget;
    if (fl & 16) {
        m40_budget_bytes((uint64_t)pb << 12, &budget);
        d.budget = &budget;
    }
    want = cfg;
    int want_ok = 1;
    if (fl & 1) {
        if (fl & 2) { /* a config.json that disagrees (or not) with the tensors */
            static const int edge[] = {1, -1, 4, -4, 0, INT32_MAX, INT32_MIN, 1 << 20};
            int *field[] = {&want.layers, &want.hidden, &want.ffn, &want.vocab,
                            &want.heads, &want.kv_heads, &want.head_dim};
            const int e = edge[(pb >> 3) % 8];
            if (pb % 8 == 7) want.eps = pb & 8 ? 0.0f : 0.5f, want.rope_theta = pb & 16 ? 1.0f : 1e31f;
            else if ((pb >> 3) % 8 < 4) *field[pb % 8] += e; /* near the file's value */
            else *field[pb % 8] = e;                         /* an edge value */
            if (pb & 64) want.heads = want.kv_heads = want.head_dim = e; /* all the heads */
        }
        d.config = want;
        d.check_config = 1;
        m40_chatglm2_config c2;
        st = m40_chatglm2_config_of(ctx, files, nf, &want, &c2);
        if (st != M40_OK) refused(st, NULL);
        else need(!memcmp(&c2, &want, sizeof c2), "config_of accepted a config but changed it");
        want_ok = st == M40_OK;
    }
    int as_shards = nf > 1 || (fl & 128);
    if (as_shards) {
        d.shards = files;
        d.nshards = nf;
    }
    m40_graph *g = NULL;
    m40_chatglm2_info inf;
    prog.bad = 0;
    st = m40_chatglm2_graph(ctx, &d, as_shards ? NULL : files[0], &g, &inf);
    need(!prog.bad, "progress: done > total or an unknown stage");
    /* the graph holds copies: the files may go before it runs */
    for (int i = 0; i < nf; i++) m40_st_destroy(files[i]);
    nf = 0;
    if (st != M40_OK) {
        refused(st, g);
        goto done;
    }
    need(want_ok, "the graph accepted a config that config_of refused");
    need(inf.allocated, "a checkpoint graph that is not allocated");
    need(!memcmp(&inf.config, (fl & 1) ? &want : &cfg, sizeof cfg),
         "the graph's config is not what config_of read");

    /* one prefill (or decode step) of T ids at positions 0.. */
    const int Tg = d.phase == M40_PHASE_DECODE ? 1 : T;
    const int V = inf.config.vocab;
    int32_t ids[4], pos[4];
    int valid = 1;
    for (int i = 0; i < Tg; i++) {
        ids[i] = fl & 32 ? (int8_t)data[4 + i] : data[4 + i] % V;
        valid &= ids[i] >= 0 && ids[i] < V;
        pos[i] = i;
    }
    st = run(g, &inf, ids, pos, Tg, d.phase == M40_PHASE_PREFILL && d.all_logits ? Tg : 1);
    SAY("loaded %s: %d layers, hidden %d, ffn %d, vocab %d, %d heads of %d over %d; run: %s\n",
        m40_wformat_name(d.weights), inf.config.layers, inf.config.hidden, inf.config.ffn,
        inf.config.vocab, inf.config.heads, inf.config.head_dim, inf.config.kv_heads,
        st == M40_OK ? "ok" : m40_errmsg(ctx));
    if (st != M40_OK) {
        need(!valid, "valid ids at valid positions did not run");
        need(m40_errmsg(ctx)[0] != 0, "a run failure without a message");
    }
    if (fl & 4) { /* a decode graph on the same weights and cache: one step */
        m40_chatglm2_desc dd;
        m40_chatglm2_desc_decode(&dd, &d, g, &inf);
        dd.budget = NULL;
        m40_graph *dg = NULL;
        m40_chatglm2_info di;
        st = m40_chatglm2_graph(ctx, &dd, NULL, &dg, &di);
        need(st == M40_OK, "a decode graph on an accepted prefill graph's weights");
        int32_t id = ids[0], at = Tg;
        st = run(dg, &di, &id, &at, 1, 1);
        if (st != M40_OK) need(!valid || at >= dd.ctx, "a decode step of a valid id did not run");
        m40_graph_destroy(dg);
    }
    m40_graph_destroy(g);
done:
    for (int i = 0; i < nf; i++) m40_st_destroy(files[i]);
    return 0;
}
