/* m40-chat's chat: a terminal (prompt, streaming, commands, Ctrl-C), or one
** prompt per line from a pipe, or --prompt once; --json prints one object
** per answer. All terminal I/O of the chat is here. */
#define _GNU_SOURCE /* getline, sigaction */
#include "chat.h"
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_interrupt;

static void on_sigint(int sig) {
    (void)sig;
    g_interrupt = 1;
}

/* Ctrl-C must not cut a write short while an answer streams (SA_RESTART, or
** stdio would drop the rest of a chunk), and must end the wait at the
** prompt: on a terminal wait_input() waits in ppoll, which a signal always
** interrupts, with SIGINT blocked until then so that none is missed; from a
** pipe the read itself is made interruptible (restart 0). */
static void sigint_mode(int restart, struct sigaction *old) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old);
}

/* Waits until stdin (a terminal) has input: 0, or 1 when Ctrl-C came first. */
static int wait_input(void) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    int intr = g_interrupt;
    while (!intr) {
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int rc = ppoll(&p, 1, NULL, &old);
        if (rc > 0 || (rc < 0 && errno != EINTR)) break; /* input, EOF, or let getline see */
        intr = g_interrupt;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return intr;
}

typedef struct repl {
    const cli_args *a;
    json_t *chunks; /* --json, --json-log: the streamed chunks of this answer */
    FILE *log;      /* --json-log */
    int log_failed; /* a write to the log failed: said once, the exit status 1 */
    int tty_in, tty_out;
} repl;

static void emit(void *user, const char *text, size_t len) {
    repl *r = user;
    if (r->chunks) {
        /* a chunk that is not valid UTF-8 (a bug) shows as null */
        json_t *s = utf8_valid(text, len) ? json_stringn(text, len) : NULL;
        json_array_append_new(r->chunks, s ? s : json_null());
        if (r->a->json) return;
    }
    /* on a terminal, a control byte from the model (ESC sequences, ^H) is
    ** shown as U+FFFD: a random or confused model cannot drive the terminal */
    size_t from = 0;
    for (size_t i = 0; r->tty_out && i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7F) {
            fwrite(text + from, 1, i - from, stdout);
            fputs("\xEF\xBF\xBD", stdout);
            from = i + 1;
        }
    }
    fwrite(text + from, 1, len - from, stdout);
    fflush(stdout);
}

static void note(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "m40-chat: %s\n", msg);
}

static json_t *ids_json(const int32_t *ids, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

static json_t *text_json(const char *s, size_t n) {
    json_t *j = utf8_valid(s, n) ? json_stringn(s, n) : NULL;
    return j ? j : json_null();
}

static const char *stop_name(chat_stop s) {
    return s == CHAT_STOP_EOS ? "eos" : s == CHAT_STOP_LENGTH ? "length"
         : s == CHAT_STOP_INTERRUPT ? "interrupt" : "context";
}

static double rate(int n, double s) { return s > 0 ? n / s : 0.0; }

static void print_json(repl *r, chat *c, const char *q, size_t qn, const char *err) {
    json_t *o = json_object();
    json_object_set_new(o, "prompt", text_json(q, qn));
    if (err) {
        json_object_set_new(o, "error", json_string(err));
    } else {
        const chat_stats *st = chat_last_stats(c);
        int n, na;
        const int32_t *ids = chat_ids(c, &n), *ans = chat_answer_ids(c, &na);
        size_t tl;
        const char *t = chat_answer(c, &tl);
        json_object_set_new(o, "text", text_json(t, tl));
        json_object_set_new(o, "ids", ids_json(ans, na));
        json_object_set_new(o, "prompt_ids", ids_json(ids, n - na));
        json_object_set_new(o, "new_ids", ids_json(ids + chat_round_start(c), n - na - chat_round_start(c)));
        json_object_set_new(o, "chunks", r->chunks);
        r->chunks = NULL;
        json_object_set_new(o, "stop", json_string(stop_name(st->stop)));
        json_object_set_new(o, "dropped_rounds", json_integer(st->dropped_rounds));
        json_object_set_new(o, "prompt_tokens", json_integer(st->prompt_tokens));
        json_object_set_new(o, "answer_tokens", json_integer(st->answer_tokens));
        json_object_set_new(o, "prefill_s", json_real(st->prefill_s));
        json_object_set_new(o, "decode_s", json_real(st->decode_s));
        json_object_set_new(o, "prefill_tok_s", json_real(rate(st->prompt_tokens, st->prefill_s)));
        json_object_set_new(o, "decode_tok_s", json_real(rate(st->answer_tokens, st->decode_s)));
    }
    char *s = json_dumps(o, JSON_COMPACT);
    if (s && r->a->json) printf("%s\n", s);
    if (s && r->log && !r->log_failed && (fprintf(r->log, "%s\n", s) < 0 || fflush(r->log) != 0)) {
        fprintf(stderr, "m40-chat: writing %s failed: %s; the log stops here\n", r->a->json_log, strerror(errno));
        r->log_failed = 1;
    }
    fflush(stdout);
    free(s);
    json_decref(o);
}

static void print_stats(glm_model *m, chat *c) {
    const chat_stats *st = chat_last_stats(c);
    m40_plan_info p;
    glm_plans(m, &p, NULL);
    const double MiB = 1024.0 * 1024.0;
    fprintf(stderr,
            "context: %d of %lld tokens, %d round%s\n"
            "memory: weights %.1f MiB, KV cache %.1f MiB, work %.1f MiB\n"
            "last answer: prompt %d tokens, prefill %.1f tok/s; %d tokens, decode %.1f tok/s\n",
            glm_pos(m), (long long)glm_ctx_len(m), chat_rounds(c), chat_rounds(c) == 1 ? "" : "s",
            p.region_bytes[M40_REGION_WEIGHTS] / MiB, p.region_bytes[M40_REGION_KV] / MiB,
            (p.region_bytes[M40_REGION_WORKSPACE] + p.region_bytes[M40_REGION_ACTIVATIONS] +
             glm_graphs_bytes(m)) / MiB,
            st->prompt_tokens, rate(st->prompt_tokens, st->prefill_s), st->answer_tokens,
            rate(st->answer_tokens, st->decode_s));
}

/* One prompt: 0 answered, -1 refused or failed (message printed). */
static int ask(repl *r, chat *c, const char *q, size_t qn) {
    const cli_args *a = r->a;
    size_t k = 0;
    while (k < qn && (q[k] == ' ' || q[k] == '\t' || q[k] == '\r')) k++;
    if (k == qn) {
        if (a->json || r->log) print_json(r, c, q, qn, "an empty prompt: nothing to answer");
        if (!a->json) fprintf(stderr, "m40-chat: an empty prompt: nothing to answer\n");
        return -1;
    }
    if (!utf8_valid(q, qn))
        fprintf(stderr, "m40-chat: the prompt is not valid UTF-8: each invalid byte goes to the "
                "model as U+FFFD (as SentencePiece normalizes it)\n");
    if (r->tty_in && !a->json) {
        printf("\nChatGLM：");
        fflush(stdout);
    }
    if (a->json || r->log) r->chunks = json_array();
    g_interrupt = 0;
    int rc = chat_ask(c, q, qn);
    if (rc || chat_last_stats(c)->stop == CHAT_STOP_INTERRUPT) g_interrupt = 0; /* used up */
    if (rc) {
        if (a->json || r->log) print_json(r, c, q, qn, chat_errmsg(c));
        if (!a->json) fprintf(stderr, "%sm40-chat: %s\n", r->tty_in ? "\n" : "", chat_errmsg(c));
    } else {
        const chat_stats *st = chat_last_stats(c);
        if (a->json || r->log) print_json(r, c, q, qn, NULL);
        if (!a->json) printf("\n");
        fflush(stdout);
        if (st->stop == CHAT_STOP_INTERRUPT) fprintf(stderr, "m40-chat: [stopped]\n");
        if (!a->quiet)
            fprintf(stderr, "[prompt %d tokens, prefill %.1f tok/s; answer %d tokens, decode %.1f "
                    "tok/s]\n", st->prompt_tokens, rate(st->prompt_tokens, st->prefill_s),
                    st->answer_tokens, rate(st->answer_tokens, st->decode_s));
    }
    json_decref(r->chunks);
    r->chunks = NULL;
    return rc;
}

int repl_run(glm_model *m, m40_tokenizer *tok, const cli_args *a) {
    struct sigaction old;
    sigint_mode(1, &old);
    repl r = {.a = a, .tty_in = isatty(0), .tty_out = isatty(1)};
    chat_opts o = {.glm3 = a->glm3, .system = a->system, .sampler = a->sampler,
                   .max_new = a->max_new, .interrupt = &g_interrupt, .emit = emit, .note = note,
                   .user = &r};
    chat *c = NULL;
    char err[512];
    if (a->json_log && !(r.log = fopen(a->json_log, "a"))) {
        fprintf(stderr, "m40-chat: cannot write %s: %s\n", a->json_log, strerror(errno));
        return 1;
    }
    if (chat_create(m, tok, &o, &c, err, sizeof err)) {
        fprintf(stderr, "m40-chat: %s\n", err);
        if (r.log) fclose(r.log);
        return 1;
    }
    if (a->system && !a->glm3)
        fprintf(stderr, "m40-chat: --system is ignored: ChatGLM2 has no system prompt\n");
    int rc = 0, failed = 0;
    if (a->prompt) {
        rc = ask(&r, c, a->prompt, strlen(a->prompt)) ? 1 : 0;
        goto out;
    }
    if (r.tty_in && !a->quiet)
        fprintf(stderr, "m40-chat: %s, %lld tokens of context. /reset, /stats, /exit; Ctrl-C stops "
                "an answer, twice (or Ctrl-D) exits\n", a->glm3 ? "ChatGLM3" : "ChatGLM2",
                (long long)glm_ctx_len(m));
    char *line = NULL;
    size_t cap = 0;
    int sigints = 0;
    for (;;) {
        if (r.tty_in) {
            printf("\n用户：");
            fflush(stdout);
        }
        errno = 0;
        ssize_t n = -1;
        if (!r.tty_in || !wait_input()) {
            if (!r.tty_in) sigint_mode(0, NULL);
            n = getline(&line, &cap, stdin);
            if (!r.tty_in) sigint_mode(1, NULL);
        }
        if (n < 0) {
            if (g_interrupt && !feof(stdin)) { /* Ctrl-C at the prompt */
                clearerr(stdin);
                g_interrupt = 0;
                if (++sigints >= 2) break;
                fprintf(stderr, "\nm40-chat: Ctrl-C again (or Ctrl-D) exits\n");
                continue;
            }
            break; /* EOF */
        }
        sigints = 0;
        size_t len = (size_t)n;
        if (r.tty_in && len >= 4095) /* Linux's N_TTY_BUF_SIZE, less the newline */
            fprintf(stderr, "m40-chat: a terminal cuts a line at 4095 bytes: this prompt may have "
                    "been cut (longer ones: --prompt, or one per line from a pipe)\n");
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 5 && !memcmp(line, "/exit", 5)) break;
        if (len == 6 && !memcmp(line, "/reset", 6)) {
            chat_reset(c);
            fprintf(stderr, "m40-chat: a new conversation\n");
            continue;
        }
        if (len == 6 && !memcmp(line, "/stats", 6)) {
            print_stats(m, c);
            continue;
        }
        if (ask(&r, c, line, len)) failed++;
        else if (chat_last_stats(c)->stop == CHAT_STOP_INTERRUPT) sigints = 1;
    }
    if (r.tty_in) printf("\n");
    free(line);
    rc = !r.tty_in && failed ? 1 : 0;
out:
    fflush(stdout);
    chat_destroy(c);
    if (r.log && fclose(r.log) != 0 && !r.log_failed) {
        fprintf(stderr, "m40-chat: writing %s failed: %s\n", a->json_log, strerror(errno));
        rc = 1;
    }
    if (r.log_failed) rc = 1;
    if (ferror(stdout) && rc == 0) {
        fprintf(stderr, "m40-chat: writing the answer to the standard output failed\n");
        rc = 1;
    }
    sigaction(SIGINT, &old, NULL);
    return rc;
}
