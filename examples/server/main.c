/* m40-server: an OpenAI-compatible HTTP server for ChatGLM2/3 (docs/server.md).
**
**   m40-server --model PATH [--dtype auto|fp16|fp32|int8|int4|int4g128] [--ctx N] [--chunk N]
**              [--parallel N] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--queue N]
**              [--timeout S] [--max-body BYTES] [--max-connections N] [--max-connections-per-ip N]
**              [--shutdown-timeout S] [--model-name NAME] [--tokenizer FILE]
**              [--format auto|chatglm2|chatglm3] [--cpu] [--device N]
**              [--devices 0,1 --split layer|tensor]   (the model over several GPUs)
**   m40-server --random-weights 6b|tiny --tokenizer FILE [options]   (load tests: seeded
**              random weights of ChatGLM2-6B's shape, no 12.5 GB checkpoint to write or read)
**
** The key may come from the environment instead (M40_SERVER_API_KEY), which
** keeps it out of `ps`. Prints "m40-server: listening on http://HOST:PORT"
** on stderr when it serves (--port 0: a free port). SIGTERM / SIGINT: stops
** taking requests, lets the running answer go on for --shutdown-timeout
** seconds, then cuts it, and exits 0. Exit status: 1 a failure, 2 usage
** (--help: 0, on stdout). */
#define _POSIX_C_SOURCE 200809L
#include "server.h"
#include "files.h"

#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* why NULL: --help (stdout, exit 0); else a usage error (stderr, exit 2) */
static int usage(const char *why) {
    FILE *out = why ? stderr : stdout;
    if (why) fprintf(stderr, "m40-server: %s\n", why);
    fputs("usage: m40-server --model PATH [--dtype auto|fp16|fp32|int8|int4|int4g128] [--ctx N]\n"
          "       [--chunk N] [--parallel N] [--host 127.0.0.1] [--port 8080] [--api-key KEY]\n"
          "       [--queue N] [--timeout S] [--request-timeout S] [--max-body BYTES] [--max-connections N] [--max-connections-per-ip N]\n"
          "       [--shutdown-timeout S] [--model-name NAME] [--tokenizer FILE]\n"
          "       [--format auto|chatglm2|chatglm3]"
          " [--temperature T] [--top-p P] [--cpu] [--device N]\n"
          "       [--devices 0,1 --split layer|tensor]\n"
          "       m40-server --random-weights 6b|tiny --tokenizer FILE [options]"
          "   (load tests: random weights)\n", out);
    return why ? 2 : 0;
}

/* m40-chat's order (files.h: glm_tokenizer_bytes). */
static int load_tokenizer(const char *model, const char *explicit, m40_tokenizer **tok) {
    char where[8400];
    size_t len = 0;
    void *b = glm_tokenizer_bytes(model, explicit, &len, where, sizeof where);
    if (!b) {
        fprintf(stderr, "m40-server: no tokenizer: looked for %s (--tokenizer FILE names one)\n",
                where);
        return -1;
    }
    m40_status st = m40_tokenizer_load_memory(b, len, tok);
    free(b);
    if (st != M40_OK) {
        fprintf(stderr, "m40-server: tokenizer: %s\n", *tok ? m40_tokenizer_errmsg(*tok) : "cannot load");
        return -1;
    }
    return 0;
}

/* The default model name: the path's last part without ".safetensors". */
static void default_name(const char *path, char *out, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    size_t len = n - b;
    const char *ext = ".safetensors";
    if (len > strlen(ext) && !strncmp(path + n - strlen(ext), ext, strlen(ext))) len -= strlen(ext);
    snprintf(out, cap, "%.*s", (int)len, path + b);
}

int main(int argc, char **argv) {
    glm_open_opts open;
    glm_open_opts_init(&open);
    srv s;
    memset(&s, 0, sizeof s);
    m40_sampler_desc_init(&s.defaults);
    s.defaults.temperature = 0.8f; /* the official chat's */
    s.defaults.top_p = 0.8f;
    s.queue_cap = 16;
    s.parallel = 4;
    s.max_body = 1 << 20;
    s.shutdown_s = 10;
    const char *host = "127.0.0.1", *tok_path = NULL, *format = "auto", *name = NULL;
    const char *devices = NULL, *split = NULL;
    int devs[GLM_MAX_RANKS];
    long port = 8080, timeout = 30, max_conn = 256, v;
    s.api_key = getenv("M40_SERVER_API_KEY");
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--cpu")) open.cpu = 1;
        else if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(NULL);
        else if (!val) return usage("an option is missing its value");
        else if (!strcmp(o, "--model")) open.path = argv[++i];
        else if (!strcmp(o, "--random-weights")) open.random_shape = argv[++i];
        else if (!strcmp(o, "--devices")) devices = argv[++i];
        else if (!strcmp(o, "--split")) split = argv[++i];
        else if (!strcmp(o, "--host")) host = argv[++i];
        else if (!strcmp(o, "--api-key")) s.api_key = argv[++i];
        else if (!strcmp(o, "--tokenizer")) tok_path = argv[++i];
        else if (!strcmp(o, "--format")) format = argv[++i];
        else if (!strcmp(o, "--model-name")) name = argv[++i];
        else if (!strcmp(o, "--dtype")) {
            if (glm_parse_dtype(argv[++i], &open.dtype)) return usage("--dtype: " GLM_DTYPE_CHOICES);
        } else if (!strcmp(o, "--ctx")) {
            if (glm_parse_long(argv[++i], 2, 1L << 22, &v)) return usage("--ctx: 2..4194304");
            open.ctx = v;
        } else if (!strcmp(o, "--chunk")) {
            if (glm_parse_long(argv[++i], 1, 1 << 16, &v)) return usage("--chunk: 1..65536");
            open.chunk = (int)v;
        } else if (!strcmp(o, "--device")) {
            if (glm_parse_long(argv[++i], 0, 1023, &v)) return usage("--device: 0..1023");
            open.device = (int)v;
        } else if (!strcmp(o, "--port")) {
            if (glm_parse_long(argv[++i], 0, 65535, &port)) return usage("--port: 0..65535");
        } else if (!strcmp(o, "--parallel")) {
            if (glm_parse_long(argv[++i], 1, GLM_MAX_PARALLEL, &v)) return usage("--parallel: 1..256");
            s.parallel = (int)v;
        } else if (!strcmp(o, "--queue")) {
            if (glm_parse_long(argv[++i], 0, 1 << 16, &v)) return usage("--queue: 0..65536");
            s.queue_cap = (int)v;
        } else if (!strcmp(o, "--timeout")) {
            if (glm_parse_long(argv[++i], 1, 3600, &timeout)) return usage("--timeout: 1..3600 s");
        } else if (!strcmp(o, "--request-timeout")) {
            if (glm_parse_long(argv[++i], 1, 3600, &v)) return usage("--request-timeout: 1..3600 s");
            s.request_timeout_s = (double)v;
        } else if (!strcmp(o, "--shutdown-timeout")) {
            if (glm_parse_long(argv[++i], 0, 3600, &v)) return usage("--shutdown-timeout: 0..3600 s");
            s.shutdown_s = (double)v;
        } else if (!strcmp(o, "--max-body")) {
            if (glm_parse_long(argv[++i], 1024, 64L << 20, &v)) return usage("--max-body: 1 KiB..64 MiB");
            s.max_body = (size_t)v;
        } else if (!strcmp(o, "--max-connections-per-ip")) {
            if (glm_parse_long(argv[++i], 0, 4096, &v)) return usage("--max-connections-per-ip: 0..4096");
            s.max_per_ip = (unsigned)v;
        } else if (!strcmp(o, "--max-connections")) {
            if (glm_parse_long(argv[++i], 1, 4096, &max_conn)) return usage("--max-connections: 1..4096");
        } else if (!strcmp(o, "--temperature") || !strcmp(o, "--top-p")) {
            char *end;
            double x = strtod(argv[++i], &end);
            if (*end || !(x >= 0 && x <= 2)) return usage("--temperature: 0..2, --top-p: (0, 1]");
            if (!strcmp(o, "--top-p")) {
                if (!(x > 0 && x <= 1)) return usage("--top-p: (0, 1]");
                s.defaults.top_p = (float)x;
            } else {
                s.defaults.temperature = (float)x;
            }
        } else {
            return usage("unknown option");
        }
    }
    if (open.random_shape) { /* a load test's model: no checkpoint, the tokenizer named */
        if (strcmp(open.random_shape, "6b") && strcmp(open.random_shape, "tiny"))
            return usage("--random-weights: 6b or tiny");
        if (!tok_path) return usage("--random-weights needs --tokenizer FILE");
        if (open.path) return usage("--random-weights or --model, not both");
        open.path = !strcmp(open.random_shape, "6b") ? "chatglm2-6b-random" : "chatglm2-tiny-random";
    }
    if (!open.path) return usage("--model is required");
    const char *why = NULL;
    if ((devices || split) && glm_parse_devices(devices, split, devs, &open, &why)) return usage(why);
    if (strcmp(format, "auto") && strcmp(format, "chatglm2") && strcmp(format, "chatglm3"))
        return usage("--format: auto, chatglm2 or chatglm3");
    if (s.api_key && !*s.api_key) s.api_key = NULL;
    char namebuf[256];
    if (!name) default_name(open.path, namebuf, sizeof namebuf), name = namebuf;
    s.model_name = name;
    s.glm3 = !strcmp(format, "chatglm3") ||
             (!strcmp(format, "auto") && !open.random_shape && glm_is_chatglm3(open.path));

    /* SIGINT / SIGTERM wait for main's sigwait: every thread inherits the mask */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    char err[512];
    struct MHD_Daemon *d = NULL;
    MHD_socket ls = MHD_INVALID_SOCKET;
    /* two handles (m40/tokenizer.h: one a thread): the HTTP threads encode
    ** prompts with one, under tok_mu; the model thread streams with its own,
    ** so a long prompt being encoded never stalls the running answers */
    if (load_tokenizer(open.path, tok_path, &s.tok) || load_tokenizer(open.path, tok_path, &s.tok_worker))
        goto out;
    /* listen first: a taken port fails before a long load; meanwhile the
    ** server answers 503 (loading) */
    srv_prepare(&s);
    int bound = 0;
    if (!(d = http_start(&s, host, (int)port, (unsigned)timeout, (unsigned)max_conn, &bound, err,
                         sizeof err))) {
        fprintf(stderr, "m40-server: %s\n", err);
        goto out;
    }
    fprintf(stderr, "m40-server: loading %s on port %d\n", open.path, bound);
    if (srv_init(&s, &open, err, sizeof err)) {
        fprintf(stderr, "m40-server: %s\n", err);
        goto out;
    }
    fprintf(stderr, "m40-server: %s (%s), %d conversations of %lld tokens, on the %s\n",
            s.model_name, s.glm3 ? "ChatGLM3" : "ChatGLM2", s.parallel, (long long)s.ctx,
            open.cpu ? "CPU" : "GPU");
    fprintf(stderr, "m40-server: listening on http://%s%s%s:%d\n", strchr(host, ':') ? "[" : "",
            host, strchr(host, ':') ? "]" : "", bound);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "m40-server: %s: shutting down (at most %.0f s for the running answer)\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", s.shutdown_s);
    ls = MHD_quiesce_daemon(d); /* no new connections */
    rc = 0;
out:
    srv_shutdown(&s);
    if (rc == 0) srv_drain(&s, 3.0); /* the cut streams' last events, before the connections close */
    http_stop(&s, d);
    if (d && ls != MHD_INVALID_SOCKET) close(ls);
    srv_destroy(&s);
    m40_tokenizer_destroy(s.tok);
    m40_tokenizer_destroy(s.tok_worker);
    if (rc == 0) fprintf(stderr, "m40-server: stopped\n");
    return rc;
}
