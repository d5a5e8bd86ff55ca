/* m40-chat, the test-friendly form (issue 17): runs a ChatGLM2/3 checkpoint
** on token ids and prints or dumps what it computed. The interactive chat
** (tokenizer, streaming, rounds) builds on the same examples/chatglm2 API.
**
**   m40-chat --model PATH [--dtype fp16|fp32|int8|int4|int4g128] [--ctx N] [--chunk N]
**            --ids a,b,c [--max-new-tokens N] [--greedy | --temperature T
**            --top-p P --top-k K --seed S] [--print-ids] [--all-logits FILE]
**            [--cpu] [--device N]
**
** --all-logits FILE: raw little-endian float32 rows of vocab size, one per
** prompt position, then one per generated token (the logits at its
** position, from which the next one is drawn): n + max-new-tokens rows.
** --save FILE: writes the model as loaded (converted / quantized at load,
** the config, the directory's tokenizer.model) as one safetensors file; the
** next run loads FILE with the same --dtype as a single mmap.
** Exit status: 0, 1 a failure (message on stderr), 2 usage. */
#define _POSIX_C_SOURCE 200809L
#include "chatglm2.h"

#include <m40/transformer.h>

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* Loading progress on a terminal: MB done of the total and the rate. */
static void progress(void *user, const char *stage, uint64_t done, uint64_t total) {
    struct timespec *t0 = user, now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double s = (double)(now.tv_sec - t0->tv_sec) + 1e-9 * (double)(now.tv_nsec - t0->tv_nsec);
    fprintf(stderr, "\r%-6s %8.1f / %.1f MB  %7.1f MB/s%s", stage, done / 1e6, total / 1e6,
            s > 0 ? done / 1e6 / s : 0.0,
            !strcmp(stage, "upload") && done == total ? "\n" : "");
    if (!strcmp(stage, "read") && done == total) {
        fputc('\n', stderr);
        *t0 = now; /* the upload's rate from here */
    }
}

/* --save: the model as loaded, plus tokenizer.model when the checkpoint is
** a directory that has one. */
static int save(glm_model *m, const glm_open_opts *o, const char *path) {
    char tp[4096];
    snprintf(tp, sizeof tp, "%s/tokenizer.model", o->path);
    FILE *f = fopen(tp, "rb");
    void *tok = NULL;
    long len = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && len < (64L << 20) &&
        fseek(f, 0, SEEK_SET) == 0 && (tok = malloc((size_t)len)) &&
        fread(tok, 1, (size_t)len, f) != (size_t)len) {
        free(tok);
        tok = NULL;
    }
    if (f) fclose(f);
    int rc = glm_model_save(m, path, tok, tok ? (size_t)len : 0);
    if (rc) fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
    else fprintf(stderr, "m40-chat: saved %s%s\n", path, tok ? " (with tokenizer.model)" : "");
    free(tok);
    return rc;
}

static int usage(const char *why) {
    if (why) fprintf(stderr, "m40-chat: %s\n", why);
    fputs("usage: m40-chat --model PATH --ids a,b,c [--dtype fp16|fp32|int8|int4|int4g128] [--ctx N]\n"
          "       [--chunk N] [--max-new-tokens N] [--greedy] [--temperature T] [--top-p P]\n"
          "       [--top-k K] [--seed S] [--print-ids] [--all-logits FILE] [--cpu] [--device N]\n"
          "       [--save FILE]   (the model as loaded: quantize once, then load FILE)\n",
          stderr);
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int parse_ids(const char *s, int32_t **ids, int *n) {
    int cap = 16;
    *n = 0;
    *ids = malloc((size_t)cap * sizeof **ids);
    while (*ids && *s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX || (*end && *end != ',')) return -1;
        if (*n == cap) {
            int32_t *nb = realloc(*ids, (size_t)(cap *= 2) * sizeof **ids);
            if (!nb) return -1;
            *ids = nb;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = *end ? end + 1 : end;
    }
    return *ids && *n > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    glm_open_opts o;
    glm_open_opts_init(&o);
    m40_sampler_desc sd;
    m40_sampler_desc_init(&sd);
    const char *ids_arg = NULL, *logits_path = NULL, *save_path = NULL;
    long max_new = 0, v;
    int print_ids = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--greedy")) sd.temperature = 0.0f;
        else if (!strcmp(a, "--print-ids")) print_ids = 1;
        else if (!strcmp(a, "--cpu")) o.cpu = 1;
        else if (!val) return usage("an option is missing its value");
        else if (!strcmp(a, "--model")) o.path = argv[++i];
        else if (!strcmp(a, "--ids")) ids_arg = argv[++i];
        else if (!strcmp(a, "--all-logits")) logits_path = argv[++i];
        else if (!strcmp(a, "--save")) save_path = argv[++i];
        else if (!strcmp(a, "--dtype")) {
            const char *d = argv[++i];
            o.dtype = !strcmp(d, "fp32") ? M40_WFMT_FP32 : !strcmp(d, "fp16") ? M40_WFMT_FP16
                    : !strcmp(d, "int8") ? M40_WFMT_INT8 : !strcmp(d, "int4") ? M40_WFMT_INT4
                    : !strcmp(d, "int4g128") ? M40_WFMT_INT4G128 : M40_WFMT_COUNT;
            if (o.dtype == M40_WFMT_COUNT) return usage("--dtype: fp32, fp16, int8, int4 or int4g128");
        } else if (!strcmp(a, "--ctx")) {
            if (parse_long(argv[++i], 1, 1L << 22, &v)) return usage("--ctx: 1..4194304");
            o.ctx = v;
        } else if (!strcmp(a, "--chunk")) {
            if (parse_long(argv[++i], 1, 1 << 16, &v)) return usage("--chunk: 1..65536");
            o.chunk = (int)v;
        } else if (!strcmp(a, "--max-new-tokens")) {
            if (parse_long(argv[++i], 0, 1 << 22, &max_new)) return usage("--max-new-tokens: 0..4194304");
        } else if (!strcmp(a, "--device")) {
            if (parse_long(argv[++i], 0, 1023, &v)) return usage("--device: 0..1023");
            o.device = (int)v;
        } else if (!strcmp(a, "--seed")) {
            if (parse_long(argv[++i], 0, 0x7fffffffL, &v)) return usage("--seed: 0..2^31-1");
            sd.seed = (uint64_t)v;
        } else if (!strcmp(a, "--top-k")) {
            if (parse_long(argv[++i], 0, 1 << 24, &v)) return usage("--top-k: 0..2^24");
            sd.top_k = (int)v;
        } else if (!strcmp(a, "--temperature") || !strcmp(a, "--top-p")) {
            char *end;
            double x = strtod(argv[++i], &end);
            if (*end || !(x >= 0 && x <= 100)) return usage("--temperature / --top-p: a number");
            if (a[2] == 't' && a[3] == 'e') sd.temperature = (float)x;
            else sd.top_p = (float)x;
        } else {
            return usage("unknown option");
        }
    }
    if (!o.path || (!ids_arg && !save_path)) return usage("--model and --ids (or --save) are required");
    int32_t *ids = NULL;
    int n = 0;
    if (ids_arg && parse_ids(ids_arg, &ids, &n)) {
        free(ids);
        return usage("--ids: comma-separated non-negative integers");
    }
    o.all_logits = logits_path != NULL;
    FILE *lf = NULL;
    if (logits_path && !(lf = fopen(logits_path, "wb"))) {
        fprintf(stderr, "m40-chat: cannot write %s: %s\n", logits_path, strerror(errno));
        free(ids);
        return 1;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (isatty(2)) { /* a terminal: show the load's progress */
        o.progress = progress;
        o.progress_user = &t0;
    }
    char err[512];
    glm_model *m = NULL;
    int rc = 1;
    float *rows = NULL;
    if (glm_model_open(&o, &m, err, sizeof err)) {
        fprintf(stderr, "m40-chat: %s\n", err);
        goto out;
    }
    if (save_path && save(m, &o, save_path)) goto out;
    if (!ids_arg) {
        rc = 0;
        goto out;
    }
    const int V = glm_config(m)->vocab;
    if (!(rows = malloc((size_t)n * (size_t)V * sizeof(float)))) {
        fprintf(stderr, "m40-chat: out of host memory\n");
        goto out;
    }
    if (glm_prefill(m, ids, n, rows + (size_t)(n - 1) * V, lf ? rows : NULL)) {
        fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
        goto out;
    }
    if (lf && fwrite(rows, sizeof(float), (size_t)n * V, lf) != (size_t)n * V) goto io;
    for (long s = 0; s < max_new; s++) {
        int32_t id;
        if (glm_sample(m, &sd, &id, NULL)) {
            fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
            goto out;
        }
        if (print_ids) printf("%s%d", s ? "," : "", (int)id);
        fflush(stdout);
        if (s + 1 == max_new && !lf) break; /* --all-logits: the last id's row too */
        if (glm_step(m, id, lf ? rows : NULL)) {
            fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
            goto out;
        }
        if (lf && fwrite(rows, sizeof(float), (size_t)V, lf) != (size_t)V) goto io;
    }
    if (print_ids && max_new > 0) printf("\n");
    rc = 0;
    goto out;
io:
    fprintf(stderr, "m40-chat: writing %s failed\n", logits_path);
out:
    if (lf && fclose(lf) != 0 && rc == 0) rc = 1;
    free(rows);
    free(ids);
    glm_model_close(m);
    return rc;
}
