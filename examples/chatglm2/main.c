/* m40-chat: chat with a ChatGLM2/ChatGLM3 checkpoint (repl.c), or run it on
** token ids and print or dump what it computed (the test-friendly form).
**
**   m40-chat --model PATH [--dtype auto|fp16|fp32|int8|int4|int4g128] [--ctx N] [--chunk N]
**            [--tokenizer FILE] [--format auto|chatglm2|chatglm3] [--system TEXT]
**            [--prompt TEXT] [--json] [--json-log FILE] [--quiet]
**            [--max-new-tokens N] [--greedy | --temperature T --top-p P --top-k K
**            --repeat-penalty R --seed S] [--cpu] [--device N]
**   m40-chat --model PATH --ids a,b,c [--max-new-tokens N] [sampling] [--print-ids]
**            [--all-logits FILE]
**
** --json prints each answer as one JSON object (text, ids, the cache's ids
** before it, the streamed chunks, timings); --json-log FILE appends the same
** objects to FILE while the terminal shows the chat.
** Sampling defaults are the official chat's: temperature 0.8, top_p 0.8.
** The tokenizer: --tokenizer FILE, else the directory's tokenizer.model,
** else the file's "extra.tokenizer.model" tensor (written by --save), else
** tokenizer.model next to the file.
** --all-logits FILE: raw little-endian float32 rows of vocab size, one per
** prompt position, then one per generated token (the logits at its
** position, from which the next one is drawn): n + max-new-tokens rows.
** --devices 0,1 --split tensor: the model split over those GPUs by tensor
** parallelism (each holds its share of every block; with --cpu, that many
** CPU contexts); --split layer: consecutive blocks on each (pipeline stages).
** --random-weights 6b|tiny: seeded random weights of ChatGLM2-6B's shape (or
** a 2-layer one) instead of the checkpoint's (a GPU test of the chat at
** full size without a 12.5 GB file); --model then only says where the
** tokenizer and the chat format are.
** --save FILE: writes the model as loaded (converted / quantized at load,
** the config, the tokenizer) as one safetensors file; the next run loads
** FILE as a single mmap (--dtype auto, the default, takes its format).
** Exit status: 0 (also --help, on stdout), 1 a failure (message on stderr),
** 2 usage. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* why NULL: --help (stdout, exit 0); else a usage error (stderr, exit 2) */
static int usage(const char *why) {
    FILE *out = why ? stderr : stdout;
    if (why) fprintf(stderr, "m40-chat: %s\n", why);
    fputs("usage: m40-chat --model PATH [--dtype auto|fp16|fp32|int8|int4|int4g128] [--ctx N] [--chunk N]\n"
          "       [--tokenizer FILE] [--format auto|chatglm2|chatglm3] [--system TEXT]\n"
          "       [--prompt TEXT] [--json] [--json-log FILE] [--quiet] [--max-new-tokens N] [--greedy]\n"
          "       [--temperature T] [--top-p P] [--top-k K] [--repeat-penalty R] [--seed S]\n"
          "       [--cpu] [--device N] [--devices 0,1 --split layer|tensor] [--save FILE]\n"
          "       [--random-weights 6b|tiny]\n"
          "       m40-chat --model PATH --ids a,b,c [--print-ids] [--all-logits FILE] ...\n"
          "chat commands: /reset, /stats, /exit; Ctrl-C stops an answer, twice exits\n",
          out);
    return why ? 2 : 0;
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

/* --ids: prefill, then sample max_new ids (printed with --print-ids). */
static int run_ids(glm_model *m, const cli_args *a, const int32_t *ids, int n, int print_ids,
                   const char *logits_path) {
    FILE *lf = NULL;
    /* the cache holds the prompt and every generated id that is stepped:
    ** all but the last, and the last too with --all-logits (its row) */
    const long long need = (long long)n + (a->max_new > 0 ? a->max_new - (logits_path ? 0 : 1) : 0);
    if (need > glm_ctx_len(m)) {
        fprintf(stderr, "m40-chat: %d ids and %ld new tokens%s need a cache of %lld tokens; it holds %lld (--ctx)\n",
                n, a->max_new, logits_path ? " with --all-logits" : "", need, (long long)glm_ctx_len(m));
        return 1;
    }
    if (logits_path && !(lf = fopen(logits_path, "wb"))) {
        fprintf(stderr, "m40-chat: cannot write %s: %s\n", logits_path, strerror(errno));
        return 1;
    }
    const int V = glm_config(m)->vocab;
    int rc = 1;
    float *rows = malloc((size_t)n * (size_t)V * sizeof(float));
    if (!rows) {
        fprintf(stderr, "m40-chat: out of host memory\n");
        goto out;
    }
    if (glm_prefill(m, ids, n, rows + (size_t)(n - 1) * V, lf ? rows : NULL)) goto model;
    if (lf && fwrite(rows, sizeof(float), (size_t)n * V, lf) != (size_t)n * V) goto io;
    for (long s = 0; s < a->max_new; s++) {
        int32_t id;
        if (glm_sample(m, &a->sampler, &id, NULL)) goto model;
        if (print_ids) printf("%s%d", s ? "," : "", (int)id);
        fflush(stdout);
        if (s + 1 == a->max_new && !lf) break; /* --all-logits: the last id's row too */
        if (glm_step(m, id, lf ? rows : NULL)) goto model;
        if (lf && fwrite(rows, sizeof(float), (size_t)V, lf) != (size_t)V) goto io;
    }
    if (print_ids && a->max_new > 0) printf("\n");
    rc = 0;
    goto out;
model:
    fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
    goto out;
io:
    fprintf(stderr, "m40-chat: writing %s failed: %s\n", logits_path, strerror(errno));
out:
    if (lf && fclose(lf) != 0 && rc == 0) {
        fprintf(stderr, "m40-chat: writing %s failed: %s\n", logits_path, strerror(errno));
        rc = 1;
    }
    if (print_ids && fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "m40-chat: writing the ids failed: %s\n", strerror(errno));
        rc = 1;
    }
    free(rows);
    return rc;
}

int main(int argc, char **argv) {
    cli_args a;
    memset(&a, 0, sizeof a);
    glm_open_opts_init(&a.open);
    m40_sampler_desc_init(&a.sampler);
    a.sampler.temperature = 0.8f; /* the official chat's */
    a.sampler.top_p = 0.8f;
    const char *ids_arg = NULL, *logits_path = NULL, *save_path = NULL, *tok_path = NULL;
    const char *format = "auto", *devices = NULL, *split = NULL;
    int devs[GLM_MAX_RANKS];
    long v;
    int print_ids = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--greedy")) a.sampler.temperature = 0.0f;
        else if (!strcmp(o, "--print-ids")) print_ids = 1;
        else if (!strcmp(o, "--cpu")) a.open.cpu = 1;
        else if (!strcmp(o, "--json")) a.json = 1;
        else if (!strcmp(o, "--quiet")) a.quiet = 1;
        else if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(NULL);
        else if (!val) return usage("an option is missing its value");
        else if (!strcmp(o, "--model")) a.open.path = argv[++i];
        else if (!strcmp(o, "--random-weights")) a.open.random_shape = argv[++i];
        else if (!strcmp(o, "--devices")) devices = argv[++i];
        else if (!strcmp(o, "--split")) split = argv[++i];
        else if (!strcmp(o, "--ids")) ids_arg = argv[++i];
        else if (!strcmp(o, "--all-logits")) logits_path = argv[++i];
        else if (!strcmp(o, "--save")) save_path = argv[++i];
        else if (!strcmp(o, "--tokenizer")) tok_path = argv[++i];
        else if (!strcmp(o, "--format")) format = argv[++i];
        else if (!strcmp(o, "--system")) a.system = argv[++i];
        else if (!strcmp(o, "--prompt")) a.prompt = argv[++i];
        else if (!strcmp(o, "--json-log")) a.json_log = argv[++i];
        else if (!strcmp(o, "--dtype")) {
            if (glm_parse_dtype(argv[++i], &a.open.dtype)) return usage("--dtype: " GLM_DTYPE_CHOICES);
        } else if (!strcmp(o, "--ctx")) {
            if (glm_parse_long(argv[++i], 1, 1L << 22, &v)) return usage("--ctx: 1..4194304");
            a.open.ctx = v;
        } else if (!strcmp(o, "--chunk")) {
            if (glm_parse_long(argv[++i], 1, 1 << 16, &v)) return usage("--chunk: 1..65536");
            a.open.chunk = (int)v;
        } else if (!strcmp(o, "--max-new-tokens")) {
            if (glm_parse_long(argv[++i], 0, 1 << 22, &a.max_new)) return usage("--max-new-tokens: 0..4194304");
        } else if (!strcmp(o, "--device")) {
            if (glm_parse_long(argv[++i], 0, 1023, &v)) return usage("--device: 0..1023");
            a.open.device = (int)v;
        } else if (!strcmp(o, "--seed")) {
            if (glm_parse_long(argv[++i], 0, 0x7fffffffL, &v)) return usage("--seed: 0..2^31-1");
            a.sampler.seed = (uint64_t)v;
        } else if (!strcmp(o, "--top-k")) {
            if (glm_parse_long(argv[++i], 0, 1 << 24, &v)) return usage("--top-k: 0..2^24");
            a.sampler.top_k = (int)v;
        } else if (!strcmp(o, "--temperature") || !strcmp(o, "--top-p") ||
                   !strcmp(o, "--repeat-penalty")) {
            char *end;
            const char *arg = argv[++i];
            double x = strtod(arg, &end);
            if (end == arg || *end || !(x >= 0 && x <= 100))
                return usage("--temperature / --top-p / --repeat-penalty: a number");
            if (!strcmp(o, "--temperature")) a.sampler.temperature = (float)x;
            else if (!strcmp(o, "--top-p")) {
                if (!(x > 0 && x <= 1)) return usage("--top-p: in (0, 1]");
                a.sampler.top_p = (float)x;
            } else {
                if (!(x > 0)) return usage("--repeat-penalty: > 0 (1: off)");
                a.sampler.repetition_penalty = (float)x;
            }
        } else {
            return usage("unknown option");
        }
    }
    if (!a.open.path) return usage("--model is required");
    const char *why = NULL;
    if ((devices || split) && glm_parse_devices(devices, split, devs, &a.open, &why))
        return usage(why);
    if (a.open.random_shape && strcmp(a.open.random_shape, "6b") && strcmp(a.open.random_shape, "tiny"))
        return usage("--random-weights: 6b or tiny");
    if (strcmp(format, "auto") && strcmp(format, "chatglm2") && strcmp(format, "chatglm3"))
        return usage("--format: auto, chatglm2 or chatglm3");
    int32_t *ids = NULL;
    int n = 0;
    if (ids_arg && parse_ids(ids_arg, &ids, &n)) {
        free(ids);
        return usage("--ids: comma-separated non-negative integers");
    }
    const int chat = !ids_arg && !(save_path && !a.prompt);
    /* the tokenizer before the weights: a missing one fails in a moment */
    m40_tokenizer *tok = NULL;
    void *tb = NULL;
    size_t tlen = 0;
    char where[8400];
    struct stat st;
    if (chat && stat(a.open.path, &st) != 0) {
        fprintf(stderr, "m40-chat: %s: %s\n", a.open.path, strerror(errno));
        free(ids);
        return 1;
    }
    if (chat || save_path) {
        tb = glm_tokenizer_bytes(a.open.path, tok_path, &tlen, where, sizeof where);
        if (!tb && chat) {
            fprintf(stderr, "m40-chat: no tokenizer: looked for %s (--tokenizer FILE names one)\n",
                    where);
            free(ids);
            return 1;
        }
        if (tb && chat && m40_tokenizer_load_memory(tb, tlen, &tok) != M40_OK) {
            fprintf(stderr, "m40-chat: tokenizer: %s\n", m40_tokenizer_errmsg(tok));
            m40_tokenizer_destroy(tok);
            free(tb);
            free(ids);
            return 1;
        }
    }
    a.glm3 = !strcmp(format, "chatglm3") || (!strcmp(format, "auto") && glm_is_chatglm3(a.open.path));
    a.open.all_logits = logits_path != NULL;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (isatty(2) && !a.quiet) { /* a terminal: show the load's progress */
        a.open.progress = progress;
        a.open.progress_user = &t0;
    }
    char err[512];
    glm_model *m = NULL;
    int rc = 1;
    if (glm_model_open(&a.open, &m, err, sizeof err)) {
        fprintf(stderr, "m40-chat: %s\n", err);
        goto out;
    }
    if (save_path) {
        if (glm_model_save_as(m, save_path, tb, tb ? tlen : 0, a.glm3 ? "chatglm3" : "chatglm2")) {
            fprintf(stderr, "m40-chat: %s\n", glm_errmsg(m));
            goto out;
        }
        fprintf(stderr, "m40-chat: saved %s%s\n", save_path, tb ? " (with tokenizer.model)" : "");
    }
    if (ids_arg) rc = run_ids(m, &a, ids, n, print_ids, logits_path);
    else if (chat) rc = repl_run(m, tok, &a);
    else rc = 0;
out:
    glm_model_close(m);
    m40_tokenizer_destroy(tok);
    free(tb);
    free(ids);
    return rc;
}
