/* The ChatGLM2 builder end to end on tests/fixtures/chatglm2/tiny.* (a
** 2-layer model of ChatGLM2's shape: 4 heads of 16 over 2 KV groups, RoPE
** on half of each head, qkv bias, SwiGLU), against the logits of
** transformers' GlmForCausalLM: the last prompt position after prefill,
** then 5 greedy decode steps through a KV cache shared by a prefill graph
** and a decode graph (weights_from: one copy of the weights). fp32 and fp16
** weights must match closely (fp16: the KV cache rounds K and V to fp16);
** int8 and int4 must stay close and agree on most greedy ids.
** `--gpu`: the same on a GPU context (exit 77 without one). */
#include "check.h"
#include "m40/models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIR "tests/fixtures/chatglm2/"
#define MAXV 4096
#define MAXS 16

static int prompt[64], nprompt, greedy[MAXS], ngreedy, V;
static float ref[MAXS][MAXV]; /* [0] prefill's last position, [i] decode step i */
static int nref;

static int load_ref(void) {
    FILE *f = fopen(DIR "tiny.ref", "r");
    if (!f) return 0;
    char tag[16];
    int ok = 1;
    while (ok && fscanf(f, "%15s", tag) == 1) {
        int n, step;
        if (!strcmp(tag, "prompt") || !strcmp(tag, "greedy")) {
            int *dst = tag[0] == 'p' ? prompt : greedy;
            ok = fscanf(f, "%d", &n) == 1 && n > 0 && n <= (tag[0] == 'p' ? 64 : MAXS);
            for (int i = 0; ok && i < n; i++) ok = fscanf(f, "%d", &dst[i]) == 1;
            if (tag[0] == 'p') nprompt = n; else ngreedy = n;
        } else if (!strcmp(tag, "logits")) {
            ok = fscanf(f, "%d %d", &step, &n) == 2 && step >= 0 && step < MAXS && n > 0 && n <= MAXV;
            for (int i = 0; ok && i < n; i++) ok = fscanf(f, "%f", &ref[step][i]) == 1;
            V = n;
            if (step + 1 > nref) nref = step + 1;
        } else {
            ok = 0;
        }
    }
    fclose(f);
    return ok && nprompt > 0 && ngreedy > 0 && nref == ngreedy;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Runs graph g on ids/pos (T tokens) and reads the [1,1,V] logits. */
static int step(m40_ctx *c, m40_graph *g, const m40_chatglm2_info *inf, const int *ids,
                const int *pos, int T, float *logits) {
    m40_tensor *ti, *tp, *tl;
    m40_status st;
    if ((st = m40_graph_get_tensor(g, inf->input_ids, &ti)) ||
        (st = m40_graph_get_tensor(g, inf->position, &tp)) ||
        (st = m40_graph_get_tensor(g, inf->logits, &tl)) ||
        (st = m40_tensor_upload(c, ti, ids, (size_t)T * 4)) ||
        (st = m40_tensor_upload(c, tp, pos, (size_t)T * 4)) || (st = m40_graph_run(g)) ||
        (st = m40_tensor_download(c, tl, logits, (size_t)V * 4))) {
        fprintf(stderr, "step: %s: %s\n", m40_status_str(st), m40_errmsg(c));
        return 0;
    }
    return 1;
}

/* One weight format end to end. tol: per-logit; agree: greedy ids that
** must match the reference (counted while our own continuation is fed). */
static void run_format(m40_ctx *c, m40_st_file *w, m40_wformat fmt, m40t_tol tol, int agree) {
    char name[64];
    const int L = 32;
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.weights = fmt;
    d.ctx = L;
    d.chunk = nprompt;
    m40_chatglm2_info pi, di;
    m40_graph *pg = NULL, *dg = NULL;
    /* the shared cache: k, v per layer, [1, L, G, D] f16 on the context */
    m40_tensor *kv[16] = {0};
    CHECK_ST(m40_chatglm2_graph(c, &d, w, &pg, &pi), M40_OK);
    if (!pg) {
        fprintf(stderr, "%s: %s\n", m40_wformat_name(fmt), m40_errmsg(c));
        return;
    }
    int layers = pi.config.layers;
    CHECK(layers == 2 && pi.config.heads == 4 && pi.config.kv_heads == 2 && pi.config.head_dim == 16);
    /* the prefill graph's own cache is what the decode graph must see:
    ** rebuild the prefill graph with a bound cache */
    m40_graph_destroy(pg);
    for (int i = 0; i < 2 * layers && i < 16; i++) {
        int64_t s[4] = {1, L, pi.config.kv_heads, pi.config.head_dim};
        CHECK_ST(m40_tensor_new(c, M40_DTYPE_F16, 4, s, &kv[i]), M40_OK);
    }
    d.kv_cache = kv;
    CHECK_ST(m40_chatglm2_graph(c, &d, w, &pg, &pi), M40_OK);
    d.phase = M40_PHASE_DECODE;
    d.weights_from = pg;
    CHECK_ST(m40_chatglm2_graph(c, &d, NULL, &dg, &di), M40_OK);
    if (!pg || !dg) {
        fprintf(stderr, "%s: %s\n", m40_wformat_name(fmt), m40_errmsg(c));
        goto out;
    }
    /* one copy of the weights: the decode graph's are all bound */
    CHECK(di.plan.region_bytes[M40_REGION_WEIGHTS] == 0);
    CHECK(di.plan.region_bytes[M40_REGION_KV] < pi.plan.region_bytes[M40_REGION_KV] ||
          pi.plan.region_bytes[M40_REGION_KV] == 0);
    float got[MAXV];
    int pos[64];
    for (int i = 0; i < nprompt; i++) pos[i] = i;
    int match = 0, fed = -1;
    if (step(c, pg, &pi, prompt, pos, nprompt, got)) {
        snprintf(name, sizeof name, "chatglm2 %s prefill", m40_wformat_name(fmt));
        m40t_compare(name, got, ref[0], V, tol);
        for (int s = 0; s < ngreedy; s++) {
            int id = argmax(got, V);
            match += id == greedy[s];
            if (s + 1 == ngreedy) break;
            /* feed the reference's id, so that every step compares with the
            ** reference's logits even when our argmax differs */
            fed = greedy[s];
            int p = nprompt + s;
            if (!step(c, dg, &di, &fed, &p, 1, got)) break;
            snprintf(name, sizeof name, "chatglm2 %s decode %d", m40_wformat_name(fmt), s + 1);
            m40t_compare(name, got, ref[s + 1], V, tol);
        }
    }
    printf("%s: greedy ids agree %d/%d (need %d)\n", m40_wformat_name(fmt), match, ngreedy, agree);
    CHECK(match >= agree);
out:
    m40_graph_destroy(dg);
    m40_graph_destroy(pg);
    for (int i = 0; i < 16; i++) m40_tensor_destroy(kv[i]);
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
    /* fp32: only the fp16 KV cache differs from the reference */
    run_format(c, w, M40_WFMT_FP32, (m40t_tol){.atol = 2e-3, .rtol = 2e-3, .nmse = 1e-5}, ngreedy);
    run_format(c, w, M40_WFMT_FP16, (m40t_tol){.atol = 2e-3, .rtol = 2e-3, .nmse = 1e-5}, ngreedy);
    /* per-row int8: small errors; int4 (7 levels): loose, a property check */
    run_format(c, w, M40_WFMT_INT8, (m40t_tol){.atol = 0.1, .rtol = 0.1, .nmse = 1e-3}, ngreedy - 1);
    run_format(c, w, M40_WFMT_INT4, (m40t_tol){.atol = 1.0, .rtol = 1.0, .nmse = 0.1}, 2);
    m40_st_destroy(w);
    m40_ctx_destroy(c);
    return m40t_finish("test_chatglm2");
}
