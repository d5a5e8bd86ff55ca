/* libFuzzer target: the ChatGLM2 example's reading of a Hugging Face
** directory (examples/chatglm2/chatglm2.c: config.json and
** model.safetensors.index.json through jansson, the shards it names) and
** the library loader behind it, on the CPU: glm_model_open, a prefill of a
** few ids, one decode step and one greedy sample.
**
** Input: 6 control bytes, then parts separated by SEP: config.json,
** model.safetensors.index.json, then the shards m1.safetensors,
** m2.safetensors, m3.safetensors (the names an index must use).
**   [0] weight format (% 5: fp32 fp16 int8 int4 int4g128)
**   [1] flags: 1 write config.json, 2 write the index (else the first
**       shard is model.safetensors), 4 all_logits, 8 a decode step and a
**       sample after the prefill, 16 raw ids (else id % vocab)
**   [2] ctx = 1 + [2] % 16 (never the config's seq_length: it sizes the
**       cache), chunk = 1 + ([2] >> 4) % 4
**   [3..5] ids (a prefill of 1 + [3] % 3)
** Every refusal must be -1 with a message; an opened model must prefill
** valid ids within its context. The files live in a private directory
** under $TMPDIR (removed at exit). */
#define _GNU_SOURCE /* memmem */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chatglm2.h"

#define SEP "<m40-part>"
#define MAX_INPUT (4u << 20)

static char dir[256];
static int verbose; /* M40_FUZZ_VERBOSE=1: say what became of each input */
static const char *const names[] = {"config.json", "model.safetensors.index.json",
                                    "m1.safetensors", "m2.safetensors", "m3.safetensors",
                                    "model.safetensors"};
#define NNAMES (int)(sizeof names / sizeof names[0])

static void need(int ok, const char *what, const char *msg) {
    if (!ok) {
        fprintf(stderr, "fuzz_chatglm2_dir: %s (%s)\n", what, msg ? msg : "");
        abort();
    }
}

static void clear(void) {
    char p[512];
    for (int i = 0; i < NNAMES; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
}

static void cleanup(void) {
    clear();
    rmdir(dir);
}

static void put(const char *name, const uint8_t *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    need(fd >= 0 && (n == 0 || write(fd, p, n) == (ssize_t)n) && close(fd) == 0, "write", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 6 || size > MAX_INPUT) return 0;
    if (!dir[0]) {
        verbose = getenv("M40_FUZZ_VERBOSE") && getenv("M40_FUZZ_VERBOSE")[0] == '1';
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_chatglm2_dir.XXXXXX", t && *t ? t : "/tmp");
        need(mkdtemp(dir) != NULL, "mkdtemp", dir);
        atexit(cleanup);
    }
    const uint8_t fl = data[1];
    clear();
    /* the parts, in order: config.json, the index, the shards */
    const uint8_t *p = data + 6, *end = data + size;
    for (int part = 0; part < 5; part++) {
        const uint8_t *s = part < 4 ? memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1) : NULL;
        const uint8_t *e = s ? s : end;
        const char *name = names[part];
        if (part == 0 && !(fl & 1)) name = NULL;
        if (part == 1 && !(fl & 2)) name = NULL;
        if (part == 2 && !(fl & 2)) name = "model.safetensors";
        if (name) put(name, p, (size_t)(e - p));
        if (!s) break;
        p = s + sizeof SEP - 1;
    }
    glm_open_opts o;
    glm_open_opts_init(&o);
    o.path = dir;
    o.cpu = 1;
    o.dtype = (m40_wformat)(data[0] % (M40_WFMT_COUNT + 1)); /* COUNT: GLM_DTYPE_AUTO */
    o.ctx = 1 + data[2] % 16;
    o.chunk = 1 + (data[2] >> 4) % 4;
    o.all_logits = (fl & 4) != 0;
    glm_model *m = NULL;
    char err[512] = "";
    if (glm_model_open(&o, &m, err, sizeof err) != 0) {
        need(!m && err[0], "a refusal without a message", err);
        if (verbose) fprintf(stderr, "refused: %s\n", err);
        return 0;
    }
    const m40_chatglm2_config *c = glm_config(m);
    const int V = c->vocab, n = 1 + data[3] % 3;
    int32_t ids[3];
    int valid = n <= glm_ctx_len(m);
    for (int i = 0; i < n; i++) {
        ids[i] = fl & 16 ? (int8_t)data[3 + i] : data[3 + i] % V;
        valid &= ids[i] >= 0 && ids[i] < V;
    }
    float *last = malloc((size_t)V * sizeof *last), *all = malloc((size_t)n * V * sizeof *all);
    need(last && all, "malloc", NULL);
    int rc = glm_prefill(m, ids, n, last, o.all_logits ? all : NULL);
    if (verbose)
        fprintf(stderr, "opened %s: %d layers, hidden %d, vocab %d; prefill of %d: %s\n",
                m40_wformat_name(o.dtype), c->layers, c->hidden, V, n, rc ? glm_errmsg(m) : "ok");
    need(rc == 0 || (!valid && glm_errmsg(m)[0]), "a prefill of valid ids failed", glm_errmsg(m));
    if (rc == 0 && (fl & 8)) {
        int32_t id = ids[0];
        rc = glm_step(m, id, last);
        need(rc == 0 || (glm_pos(m) >= glm_ctx_len(m) && glm_errmsg(m)[0]), "a decode step failed",
             glm_errmsg(m));
        m40_sampler_desc sd;
        m40_sampler_desc_init(&sd); /* greedy */
        float pr;
        need(glm_sample(m, &sd, &id, &pr) == 0 && id >= 0 && id < V, "greedy sampling failed",
             glm_errmsg(m));
    }
    free(last);
    free(all);
    glm_model_close(m);
    return 0;
}
