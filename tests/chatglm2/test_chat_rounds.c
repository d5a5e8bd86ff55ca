/* examples/chatglm2/chat.c: a round stopped while its prompt was prefilled
** (Ctrl-C) leaves the conversation as if it had never been asked, the
** repetition penalty's history included. On make_chat_model.py's model,
** greedy with a penalty of 2: the rounds "你好", "讲个故事" alone, then the
** same with a stopped round between them whose prompt is the second
** answer's text many times over (its ids, penalized, would change that
** answer if the history kept them).
**   test_chat_rounds MODEL_DIR */
#define _XOPEN_SOURCE 700 /* realpath, symlink */
#include "chat.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;

/* the ids of the answer to q (malloc'ed, *n of them), or NULL */
static int32_t *ask(chat *c, const char *q, int *n) {
    if (chat_ask(c, q, strlen(q))) {
        printf("ask '%s': %s\n", q, chat_errmsg(c));
        CHECK(!"chat_ask failed");
        return NULL;
    }
    const int32_t *a = chat_answer_ids(c, n);
    int32_t *r = malloc((size_t)(*n ? *n : 1) * sizeof *r);
    if (r) memcpy(r, a, (size_t)*n * sizeof *r);
    return r;
}

static int same(const int32_t *a, int na, const int32_t *b, int nb) {
    return a && b && na == nb && !memcmp(a, b, (size_t)na * sizeof *a);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_chat_rounds MODEL_DIR\n");
        return 2;
    }
    char path[4096], err[512];
    m40_tokenizer *tok = NULL;
    snprintf(path, sizeof path, "%s/tokenizer.model", argv[1]);
    if (m40_tokenizer_load_file(path, &tok) != M40_OK) {
        printf("FAIL tokenizer: %s\n", m40_tokenizer_errmsg(tok));
        return 1;
    }
    glm_open_opts o;
    glm_open_opts_init(&o);
    snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
    o.path = path;
    o.cpu = 1;
    o.ctx = 2048;
    glm_model *m = NULL;
    if (glm_model_open(&o, &m, err, sizeof err)) {
        printf("FAIL open: %s\n", err);
        m40_tokenizer_destroy(tok);
        return 1;
    }
    chat_opts co;
    memset(&co, 0, sizeof co);
    m40_sampler_desc_init(&co.sampler);
    co.sampler.temperature = 0.0f;
    co.sampler.repetition_penalty = 2.0f;
    co.max_new = 12;
    co.interrupt = &stop_flag;

    /* the two rounds alone */
    chat *c = NULL;
    int n1 = 0, n2 = 0, a1n = 0, a2n = 0;
    int32_t *b1 = NULL, *b2 = NULL, *a1 = NULL, *a2 = NULL;
    char *poison = NULL;
    if (chat_create(m, tok, &co, &c, err, sizeof err)) {
        printf("chat: %s\n", err);
        CHECK(!"chat_create failed");
        goto out;
    }
    b1 = ask(c, "你好", &n1);
    b2 = ask(c, "讲个故事", &n2);
    size_t tl = 0;
    const char *text = chat_answer(c, &tl);
    printf("two answers alone: %d and %d ids, %zu bytes of text\n", n1, n2, tl);
    CHECK(b1 && b2 && n2 > 0 && tl > 0);
    if (!tl) goto out;
    /* > 512 ids (chat.c's first prefill piece): stopped after that piece */
    const size_t reps = 4000 / tl + 2;
    poison = malloc(reps * tl + 1);
    if (!poison) goto out;
    for (size_t i = 0; i < reps; i++) memcpy(poison + i * tl, text, tl);
    poison[reps * tl] = 0;
    chat_destroy(c);
    c = NULL;
    glm_reset(m);

    /* the same rounds with a stopped one between them */
    if (chat_create(m, tok, &co, &c, err, sizeof err)) {
        printf("chat: %s\n", err);
        CHECK(!"chat_create failed");
        goto out;
    }
    a1 = ask(c, "你好", &a1n);
    CHECK(same(a1, a1n, b1, n1)); /* the first round again: the same answer */
    int held = glm_pos(m);
    stop_flag = 1;
    CHECK(chat_ask(c, poison, strlen(poison)) == -1 && strstr(chat_errmsg(c), "stopped while reading"));
    printf("a long prompt with Ctrl-C set: %s\n", chat_errmsg(c));
    stop_flag = 0;
    CHECK(glm_pos(m) == held); /* the cache back where the round began */
    a2 = ask(c, "讲个故事", &a2n);
    printf("the next round, as if the stopped one was never asked (penalty history included): %s\n",
           same(a2, a2n, b2, n2) ? "the same ids" : "DIFFERENT ids");
    CHECK(same(a2, a2n, b2, n2));
out:
    chat_destroy(c);
    free(poison);
    free(a1), free(a2), free(b1), free(b2);
    glm_model_close(m);
    /* no ctx: the cache is config.json's seq_length (2048), under 8192 */
    o.path = argv[1];
    o.ctx = 0;
    m = NULL;
    if (glm_model_open(&o, &m, err, sizeof err)) printf("FAIL open %s: %s\n", argv[1], err);
    CHECK(m && glm_ctx_len(m) == 2048);
    CHECK(m && glm_config(m)->rope_theta == 10000.0f);
    glm_model_close(m);
    /* config.json's rope_ratio (ChatGLM3-6B-32K's 50) scales RoPE's base: the
    ** same directory with "rope_ratio": 50 put first */
    char dir[64], cfg[4096], line[8192];
    snprintf(dir, sizeof dir, "/tmp/m40_rope_%d", (int)getpid());
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    FILE *in = fopen(path, "r");
    size_t got = in ? fread(line + 1, 1, sizeof line - 2, in) : 0;
    if (in) fclose(in);
    line[got + 1] = 0;
    char *brace = strchr(line + 1, '{');
    CHECK(brace && mkdir(dir, 0700) == 0);
    if (brace) {
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        FILE *f = fopen(cfg, "w");
        if (f) fprintf(f, "{\"rope_ratio\": 50, %s", brace + 1), fclose(f);
        snprintf(cfg, sizeof cfg, "%s/model.safetensors", dir);
        snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
        char abs[4096];
        CHECK(realpath(path, abs) && symlink(abs, cfg) == 0);
        o.path = dir;
        m = NULL;
        if (glm_model_open(&o, &m, err, sizeof err)) printf("FAIL open %s: %s\n", dir, err);
        CHECK(m && glm_config(m)->rope_theta == 500000.0f);
        glm_model_close(m);
        remove(cfg);
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        remove(cfg);
        rmdir(dir);
    }
    m40_tokenizer_destroy(tok);
    return m40t_finish("test_chat_rounds");
}
