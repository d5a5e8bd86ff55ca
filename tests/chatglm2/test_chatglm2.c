/* The ChatGLM2 builder end to end on tests/fixtures/chatglm2/tiny.* (a
** 2-layer model of ChatGLM2's head geometry: 4 heads of 128 over 2 KV
** groups, RoPE on 64 dims, qkv bias, SwiGLU with F = 200, hidden 128),
** against transformers' GlmForCausalLM: the logits of every prompt position
** (prefill), 64 greedy steps through the KV cache (decode graph), and a
** second round prefilled on top of the cache, each row against one pass
** over the whole conversation. Three graphs share one set of weights
** (weights_from) and one cache (kv_cache). fp32 and fp16 weights: max |Δ|
** / max |ref| <= 1e-3 per position and the same 64 greedy ids; int8 and
** int4 the same against the oracle run on the dequantized weights.
** `--gpu`: the same on a GPU context (exit 77 without one). */
#include "check.h"
#include "m40/models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIR "tests/fixtures/chatglm2/"
#define MAXP 128
#define MAXV 1024

static int prompt[MAXP], nprompt, greedy[MAXP], ngreedy, round2[MAXP], nround2, V, P;
static float *ref;  /* [P][V]: one pass over prompt + greedy + round2 */
static float *qref[3]; /* the same with int8 / int4 / int4g128 block linears (dequantized) */

static int read_ids(FILE *f, int *dst, int *n) {
    if (fscanf(f, "%d", n) != 1 || *n < 1 || *n > MAXP) return 0;
    for (int i = 0; i < *n; i++)
        if (fscanf(f, "%d", &dst[i]) != 1) return 0;
    return 1;
}

static int load_ref(void) {
    FILE *f = fopen(DIR "tiny.ref", "r");
    if (!f) return 0;
    char tag[16], line[512];
    int ok = 1;
    while (ok && fscanf(f, "%15s", tag) == 1) {
        if (tag[0] == '#') ok = fgets(line, sizeof line, f) != NULL;
        else if (!strcmp(tag, "prompt")) ok = read_ids(f, prompt, &nprompt);
        else if (!strcmp(tag, "greedy")) ok = read_ids(f, greedy, &ngreedy);
        else if (!strcmp(tag, "round2")) ok = read_ids(f, round2, &nround2);
        else if (!strcmp(tag, "logits")) ok = fscanf(f, "%d %d", &P, &V) == 2;
        else ok = 0;
    }
    fclose(f);
    if (!ok || P != nprompt + ngreedy + nround2 || V < 2 || V > MAXV) return 0;
    static const char *const files[4] = {DIR "tiny.logits", DIR "tiny.int8.logits",
                                         DIR "tiny.int4.logits", DIR "tiny.int4g128.logits"};
    float **dst[4] = {&ref, &qref[0], &qref[1], &qref[2]};
    for (int i = 0; i < 4 && ok; i++) {
        size_t n = (size_t)P * (size_t)V;
        *dst[i] = malloc(n * sizeof(float));
        FILE *b = fopen(files[i], "rb");
        ok = *dst[i] && b && fread(*dst[i], sizeof(float), n, b) == n;
        if (b) fclose(b);
    }
    return ok;
}

/* The measure: max |got - ref| / max |ref| over one position. */
static double rel_err(const float *got, const float *r) {
    double e = 0, m = 0;
    for (int i = 0; i < V; i++) {
        double d = fabs((double)got[i] - r[i]);
        if (!(d <= e)) e = d; /* NaN counts */
        if (fabs(r[i]) > m) m = fabs(r[i]);
    }
    return m > 0 ? e / m : e;
}

/* Runs graph g on T ids at positions pos0.. and reads `rows` logits rows. */
static int run(m40_ctx *c, m40_graph *g, const m40_chatglm2_info *inf, const int *ids, int pos0,
               int T, float *logits, int rows) {
    m40_tensor *ti, *tp, *tl;
    int pos[MAXP];
    for (int i = 0; i < T; i++) pos[i] = pos0 + i;
    m40_status st;
    if ((st = m40_graph_get_tensor(g, inf->input_ids, &ti)) ||
        (st = m40_graph_get_tensor(g, inf->position, &tp)) ||
        (st = m40_graph_get_tensor(g, inf->logits, &tl)) ||
        (st = m40_tensor_upload(c, ti, ids, (size_t)T * 4)) ||
        (st = m40_tensor_upload(c, tp, pos, (size_t)T * 4)) || (st = m40_graph_run(g)) ||
        (st = m40_tensor_download(c, tl, logits, (size_t)rows * (size_t)V * 4))) {
        fprintf(stderr, "run: %s: %s\n", m40_status_str(st), m40_errmsg(c));
        return 0;
    }
    return 1;
}

/* The loading progress: every call's figures, the last of each stage. */
static struct { int calls; uint64_t read_done, read_total, up_done, up_total; int bad; } prog;
static void on_progress(void *user, const char *stage, uint64_t done, uint64_t total) {
    (void)user;
    prog.calls++;
    if (done > total) prog.bad = 1;
    if (!strcmp(stage, "read")) prog.read_done = done, prog.read_total = total;
    else if (!strcmp(stage, "upload")) prog.up_done = done, prog.up_total = total;
    else prog.bad = 1;
}

/* A graph of the checkpoint: a prefill of T tokens (all logits) or a decode
** step, sharing `kv`, and the weights of `from` when given. */
static m40_graph *graph(m40_ctx *c, m40_st_file *w, m40_wformat fmt, int T, int decode,
                        m40_graph *from, const m40_chatglm2_config *cfg, m40_tensor *const *kv,
                        m40_chatglm2_info *inf) {
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    if (cfg) d.config = *cfg; /* with weights_from: that graph's shape */
    d.weights = fmt;
    d.ctx = MAXP;
    d.chunk = T;
    d.phase = decode ? M40_PHASE_DECODE : M40_PHASE_PREFILL;
    d.all_logits = !decode;
    d.kv_cache = kv;
    d.weights_from = from;
    d.progress = on_progress;
    m40_graph *g = NULL;
    CHECK_ST(m40_chatglm2_graph(c, &d, from ? NULL : w, &g, inf), M40_OK);
    if (!g) fprintf(stderr, "%s: %s\n", m40_wformat_name(fmt), m40_errmsg(c));
    return g;
}

/* One weight format end to end: prefill the prompt (every position), 64
** greedy decode steps through the cache, then a second round prefilled on
** top of the cache; every logits row against the one-pass reference. */
static void run_format(m40_ctx *c, m40_st_file *w, m40_wformat fmt, const float *oracle,
                       double tol, int agree) {
    m40_chatglm2_info pi, di, ri;
    m40_tensor *kv[8] = {0};
    m40_graph *pg = NULL, *dg = NULL, *rg = NULL;
    float *got = malloc((size_t)MAXP * (size_t)V * sizeof(float));
    /* the shared cache: k, v per layer, [1, ctx, G, D] f16 on the context */
    for (int i = 0; i < 4; i++) {
        int64_t s[4] = {1, MAXP, 2, 128};
        CHECK_ST(m40_tensor_new(c, M40_DTYPE_F16, 4, s, &kv[i]), M40_OK);
    }
    if (!got || !(pg = graph(c, w, fmt, nprompt, 0, NULL, NULL, kv, &pi)) ||
        !(dg = graph(c, w, fmt, 1, 1, pg, &pi.config, kv, &di)) ||
        !(rg = graph(c, w, fmt, nround2, 0, pg, &pi.config, kv, &ri)))
        goto out;
    /* the first graph read the whole checkpoint and uploaded its weights;
    ** the two bound graphs reported nothing */
    CHECK(!prog.bad && prog.calls >= 17 && prog.read_done == prog.read_total &&
          prog.read_total == 1252608 && prog.up_done == prog.up_total && prog.up_total > 0);
    memset(&prog, 0, sizeof prog);
    CHECK(pi.config.layers == 2 && pi.config.heads == 4 && pi.config.kv_heads == 2 &&
          pi.config.head_dim == 128 && pi.config.hidden == 128 && pi.config.ffn == 200);
    /* one copy of the weights and of the cache */
    CHECK(di.plan.region_bytes[M40_REGION_WEIGHTS] == 0 && ri.plan.region_bytes[M40_REGION_WEIGHTS] == 0);
    double worst[3] = {0, 0, 0}; /* prefill, decode, round 2 */
    int match = 0;
    if (!run(c, pg, &pi, prompt, 0, nprompt, got, nprompt)) goto out;
    for (int p = 0; p < nprompt; p++) {
        double e = rel_err(got + (size_t)p * V, oracle + (size_t)p * V);
        if (!(e <= worst[0])) worst[0] = e;
    }
    /* greedy ids: our argmax at each step against the oracle's */
    int next = m40t_argmax(got + (size_t)(nprompt - 1) * V, V);
    for (int s = 0; s < ngreedy; s++) {
        match += next == m40t_argmax(oracle + (size_t)(nprompt - 1 + s) * V, V);
        /* feed the reference's id, so that each step compares with the
        ** reference's logits even after an argmax differs */
        if (!run(c, dg, &di, &greedy[s], nprompt + s, 1, got, 1)) goto out;
        double e = rel_err(got, oracle + (size_t)(nprompt + s) * V);
        if (!(e <= worst[1])) worst[1] = e;
        next = m40t_argmax(got, V);
    }
    if (!run(c, rg, &ri, round2, nprompt + ngreedy, nround2, got, nround2)) goto out;
    for (int i = 0; i < nround2; i++) {
        double e = rel_err(got + (size_t)i * V, oracle + (size_t)(nprompt + ngreedy + i) * V);
        if (!(e <= worst[2])) worst[2] = e;
    }
    printf("%s: max |dlogit| / max |logit| per position: prefill %.2e, decode %.2e, second round "
           "%.2e (tolerance %.0e); greedy ids %d/%d (need %d)\n", m40_wformat_name(fmt),
           worst[0], worst[1], worst[2], tol, match, ngreedy, agree);
    CHECK(worst[0] <= tol && worst[1] <= tol && worst[2] <= tol);
    CHECK(match >= agree);
out:
    m40_graph_destroy(rg);
    m40_graph_destroy(dg);
    m40_graph_destroy(pg);
    for (int i = 0; i < 4; i++) m40_tensor_destroy(kv[i]);
    free(got);
}

/* The builder refuses bad files with a status and a message. */
static void test_refusals(m40_ctx *c) {
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    m40_graph *g = (m40_graph *)&d;
    d.config.heads = 3; /* 3 * 128 != 4096 */
    CHECK_ST(m40_chatglm2_graph(c, &d, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    CHECK(g == NULL);
    m40_chatglm2_desc_init(&d);
    d.ctx = 0;
    CHECK_ST(m40_chatglm2_graph(c, &d, NULL, &g, NULL), M40_ERR_INVALID_ARG);
    /* a ResNet file is not a ChatGLM2 checkpoint */
    m40_st_file *f = NULL;
    if (m40_st_open("tests/fixtures/resnet/reduced_resnet.safetensors", &f) == M40_OK) {
        m40_chatglm2_desc_init(&d);
        CHECK_ST(m40_chatglm2_graph(c, &d, f, &g, NULL), M40_ERR_FORMAT);
        CHECK(strstr(m40_errmsg(c), "not a ChatGLM2 checkpoint") != NULL);
    }
    m40_st_destroy(f);
}

int main(int argc, char **argv) {
    int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    m40_ctx *c = NULL;
    if (gpu) {
        c = m40t_gpu_ctx_or_skip("test_chatglm2");
        if (!c) return M40T_SKIP;
    } else {
        m40_ctx_desc cd;
        m40_ctx_desc_init(&cd);
        cd.device = M40_DEVICE_CPU;
        if (m40_ctx_create(&cd, &c) != M40_OK) return 1;
    }
    if (!load_ref()) {
        fprintf(stderr, "test_chatglm2: cannot read " DIR "tiny.ref\n");
        return 1;
    }
    m40_st_file *w = NULL;
    if (m40_st_open(DIR "tiny.safetensors", &w) != M40_OK) {
        fprintf(stderr, "test_chatglm2: %s\n", w ? m40_st_errmsg(w) : "cannot open the fixture");
        return 1;
    }
    test_refusals(c);
    /* fp32 and fp16 weights (the same values): FP32 math, the KV cache in
    ** fp16, against FP32 PyTorch: the 1e-3 */
    run_format(c, w, M40_WFMT_FP32, ref, 1e-3, ngreedy);
    run_format(c, w, M40_WFMT_FP16, ref, 1e-3, ngreedy);
    /* int8 and int4 (quantized at load) against the oracle run on the
    ** same quantized-then-dequantized weights: the same 1e-3 */
    run_format(c, w, M40_WFMT_INT8, qref[0], 1e-3, ngreedy);
    run_format(c, w, M40_WFMT_INT4, qref[1], 1e-3, ngreedy);
    run_format(c, w, M40_WFMT_INT4G128, qref[2], 1e-3, ngreedy);
    m40_st_destroy(w);
    m40_ctx_destroy(c);
    return m40t_finish("test_chatglm2");
}
