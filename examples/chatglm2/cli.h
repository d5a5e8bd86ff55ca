/* m40-chat's command line, shared by main.c (options, loading, --ids) and
** repl.c (the chat: terminal, lines, --prompt, --json). */
#ifndef M40_EXAMPLES_CHATGLM2_CLI_H
#define M40_EXAMPLES_CHATGLM2_CLI_H

#include "chatglm2.h"

#include <m40/tokenizer.h>
#include <m40/transformer.h>

typedef struct cli_args {
    glm_open_opts open;
    m40_sampler_desc sampler;
    const char *system;  /* --system */
    const char *prompt;  /* --prompt: one answer, then exit */
    const char *json_log; /* --json-log FILE: each answer's --json object, appended */
    int json, quiet, glm3;
    long max_new;        /* 0: until the context is full */
} cli_args;

/* The chat on a loaded model; returns the exit status. */
int repl_run(glm_model *m, m40_tokenizer *tok, const cli_args *a);

#endif
