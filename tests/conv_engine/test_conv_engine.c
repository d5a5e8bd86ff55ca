/* The conv-engine API on a CPU context, in any build (CI has no cuDNN):
** bad enums, cuDNN asked for where it cannot run ("cuDNN: not built in"
** when the build has none), wrong states, AUTO settling on ours without an
** error, and that none of these calls writes to stdout or stderr. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "convnet.h"

#include <string.h>
#include <unistd.h>

static int has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* Everything the library is asked while stdout and stderr point at a
** temporary file; the checks come after, when they are back. */
typedef struct quiet_results {
    m40_status bad_neg, bad_big, cudnn, autos, deflt, null_ctx;
    char cudnn_msg[512], bad_msg[512];
    m40_conv_engine after_bad, after_auto, after_default;
    m40_status g_bad_node, g_not_conv, g_bad_enum, g_cudnn, g_cudnn_node, g_auto, g_node_auto,
        g_choice_early, g_find, g_find_missing, g_plan, g_alloc, g_set_late, g_choice_bad,
        g_run, g_tune, g_null;
    char g_cudnn_msg[512];
    int node_c;
    m40_conv_choice ch[4];
    char ch_name[4][16]; /* node_name is the graph's, gone with it */
    m40_status ch_st[4];
} quiet_results;

static void quiet_calls(m40_ctx *ctx, quiet_results *r) {
    r->bad_neg = m40_ctx_set_conv_engine(ctx, (m40_conv_engine)-1);
    snprintf(r->bad_msg, sizeof r->bad_msg, "%s", m40_errmsg(ctx));
    r->bad_big = m40_ctx_set_conv_engine(ctx, (m40_conv_engine)4);
    r->after_bad = m40_ctx_get_conv_engine(ctx);
    r->cudnn = m40_ctx_set_conv_engine(ctx, M40_CONV_ENGINE_CUDNN);
    snprintf(r->cudnn_msg, sizeof r->cudnn_msg, "%s", m40_errmsg(ctx));
    r->autos = m40_ctx_set_conv_engine(ctx, M40_CONV_ENGINE_AUTO);
    r->after_auto = m40_ctx_get_conv_engine(ctx);
    r->deflt = m40_ctx_set_conv_engine(ctx, M40_CONV_ENGINE_DEFAULT);
    r->after_default = m40_ctx_get_conv_engine(ctx);
    r->null_ctx = m40_ctx_set_conv_engine(NULL, M40_CONV_ENGINE_OURS);

    cn_net n;
    cn_build(ctx, M40_LAYOUT_NCHW, 2, 5, &n);
    if (n.st != M40_OK) return;
    r->g_bad_node = m40_graph_set_conv_engine(n.g, 7, M40_CONV_ENGINE_OURS);
    r->g_not_conv = m40_graph_set_conv_engine(n.g, -2, M40_CONV_ENGINE_OURS);
    r->g_bad_enum = m40_graph_set_conv_engine(n.g, 0, (m40_conv_engine)9);
    r->g_cudnn = m40_graph_set_conv_engine(n.g, -1, M40_CONV_ENGINE_CUDNN);
    snprintf(r->g_cudnn_msg, sizeof r->g_cudnn_msg, "%s", m40_errmsg(ctx));
    r->g_cudnn_node = m40_graph_set_conv_engine(n.g, 1, M40_CONV_ENGINE_CUDNN);
    r->g_auto = m40_graph_set_conv_engine(n.g, -1, M40_CONV_ENGINE_AUTO);
    r->g_find = m40_graph_find_node(n.g, "c", &r->node_c);
    r->g_find_missing = m40_graph_find_node(n.g, "zz", &r->node_c);
    m40_graph_find_node(n.g, "c", &r->node_c);
    r->g_node_auto = m40_graph_set_conv_engine(n.g, r->node_c, M40_CONV_ENGINE_OURS);
    r->g_choice_early = m40_graph_get_conv_choice(n.g, 0, &r->ch[0]);
    r->g_plan = m40_graph_plan(n.g, NULL, NULL);
    r->g_alloc = m40_graph_alloc(n.g);
    cn_free_host(&n);
    r->g_set_late = m40_graph_set_conv_engine(n.g, 0, M40_CONV_ENGINE_OURS);
    for (int i = 0; i < 4; i++) r->ch_st[i] = m40_graph_get_conv_choice(n.g, i, &r->ch[i]);
    r->g_choice_bad = m40_graph_get_conv_choice(n.g, 4, &r->ch[0]);
    m40_tensor *x;
    if (m40_graph_get_tensor(n.g, n.in_id, &x) == M40_OK)
        m40_fill_random(ctx, 5, M40_RANDOM_UNIFORM, -1, 1, x);
    r->g_run = m40_graph_run(n.g);
    r->g_tune = m40_graph_tune(n.g);
    r->g_null = m40_graph_tune(NULL);
    for (int i = 0; i < 4; i++) {
        r->ch_st[i] |= m40_graph_get_conv_choice(n.g, i, &r->ch[i]);
        snprintf(r->ch_name[i], sizeof r->ch_name[i], "%s", r->ch[i].node_name);
        r->ch[i].node_name = r->ch_name[i];
    }
    cn_free(&n);
}

int main(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *ctx;
    if (m40_ctx_create(&d, &ctx) != M40_OK) {
        fprintf(stderr, "no CPU context: %s\n", m40_errmsg(ctx));
        return 1;
    }
    int built = m40_cudnn_version() != 0;
    printf("libm40 %s, cuDNN %s (version %d)\n", m40_build_info(),
           built ? "built in" : "not built in", m40_cudnn_version());
    CHECK(built == (strstr(m40_build_info(), "cudnn=yes") != NULL));

    CHECK(!strcmp(m40_conv_engine_name(M40_CONV_ENGINE_DEFAULT), "default"));
    CHECK(!strcmp(m40_conv_engine_name(M40_CONV_ENGINE_OURS), "ours"));
    CHECK(!strcmp(m40_conv_engine_name(M40_CONV_ENGINE_CUDNN), "cudnn"));
    CHECK(!strcmp(m40_conv_engine_name(M40_CONV_ENGINE_AUTO), "auto"));
    CHECK(!strcmp(m40_conv_engine_name((m40_conv_engine)42), "?"));
    CHECK(m40_ctx_get_conv_engine(ctx) == M40_CONV_ENGINE_OURS);
    CHECK(m40_ctx_get_conv_engine(NULL) == M40_CONV_ENGINE_OURS);

    /* the library's calls, with stdout and stderr captured */
    static quiet_results r;
    fflush(stdout);
    fflush(stderr);
    FILE *tf = tmpfile();
    int o1 = dup(1), o2 = dup(2);
    CHECK(tf && o1 >= 0 && o2 >= 0);
    if (!tf || o1 < 0 || o2 < 0) return m40t_finish("test_conv_engine");
    dup2(fileno(tf), 1);
    dup2(fileno(tf), 2);
    quiet_calls(ctx, &r);
    fflush(stdout);
    fflush(stderr);
    dup2(o1, 1);
    dup2(o2, 2);
    close(o1);
    close(o2);
    fseek(tf, 0, SEEK_END);
    long printed = ftell(tf);
    fclose(tf);
    CHECK(printed == 0); /* the library never prints */

    CHECK(r.bad_neg == M40_ERR_INVALID_ARG && has(r.bad_msg, "unknown engine -1"));
    CHECK(r.bad_big == M40_ERR_INVALID_ARG);
    CHECK(r.after_bad == M40_CONV_ENGINE_OURS);
    CHECK(r.cudnn == M40_ERR_UNSUPPORTED);
    CHECK(has(r.cudnn_msg, built ? "cuDNN: needs a GPU context" : "cuDNN: not built in"));
    printf("cuDNN asked on this CPU context: %s\n", r.cudnn_msg);
    CHECK(r.autos == M40_OK && r.after_auto == M40_CONV_ENGINE_AUTO);
    CHECK(r.deflt == M40_OK && r.after_default == M40_CONV_ENGINE_OURS);
    CHECK(r.null_ctx == M40_ERR_INVALID_ARG);

    CHECK(r.g_bad_node == M40_ERR_INVALID_ARG);
    CHECK(r.g_not_conv == M40_ERR_INVALID_ARG);
    CHECK(r.g_bad_enum == M40_ERR_INVALID_ARG);
    CHECK(r.g_cudnn == M40_ERR_UNSUPPORTED && has(r.g_cudnn_msg, "cuDNN:"));
    CHECK(r.g_cudnn_node == M40_ERR_UNSUPPORTED);
    CHECK(r.g_auto == M40_OK);
    CHECK(r.g_find == M40_OK && r.node_c == 2);
    CHECK(r.g_find_missing == M40_ERR_INVALID_ARG);
    CHECK(r.g_node_auto == M40_OK);
    CHECK(r.g_choice_early == M40_ERR_STATE);
    CHECK(r.g_plan == M40_OK && r.g_alloc == M40_OK);
    CHECK(r.g_set_late == M40_ERR_STATE);
    CHECK(r.g_choice_bad == M40_ERR_INVALID_ARG);
    CHECK(r.g_run == M40_OK && r.g_tune == M40_OK && r.g_null == M40_ERR_INVALID_ARG);
    for (int i = 0; i < 4; i++) {
        const m40_conv_choice *c = &r.ch[i];
        CHECK(r.ch_st[i] == M40_OK);
        CHECK(c->engine == M40_CONV_ENGINE_OURS); /* a CPU context runs the reference */
        CHECK(c->asked == (i == 2 ? M40_CONV_ENGINE_OURS : M40_CONV_ENGINE_AUTO));
        CHECK(c->cudnn_algo == -1 && c->ours_ms == 0 && c->cudnn_ms == 0);
        CHECK(c->node_name && c->node_name[0] == "abcd"[i]);
        printf("  node %d %s [%s]: asked %s, runs %s (%s)\n", i, c->node_name, c->shape,
               m40_conv_engine_name(c->asked), m40_conv_engine_name(c->engine), c->note);
    }
    CHECK(has(r.ch[0].note, "CPU context"));
    CHECK(has(r.ch[1].shape, "N2 C5 15x13 -> K40 8x7, 1x1 s2 p0 +bias"));
    m40_ctx_destroy(ctx);
    return m40t_finish("test_conv_engine");
}
