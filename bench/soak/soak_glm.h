/* m40-soak's ChatGLM2 workload (bench/soak/soak_glm.c): a decode loop of
** many rounds on the public API alone (m40_chatglm2_graph twice, sharing
** weights and a KV cache through weights_from / kv_cache; m40_sample), so
** m40-soak needs no JSON library. One "step" is one decoded token; rounds,
** rewinds and resets happen at the steps where they fall. */
#ifndef M40_SOAK_GLM_H
#define M40_SOAK_GLM_H

#include "m40/models.h"

typedef struct soak_glm_opts {
    const char *weights;  /* a ChatGLM2 safetensors file, or NULL: random weights of `shape` */
    const char *shape;    /* "mid" (default), "tiny" (the fixture's), "6b" */
    m40_wformat format;   /* fp16 default */
    long round;           /* decode steps per round (200) */
    int prompt;           /* random prompt ids prefilled at each round's start (40) */
    int chunk;            /* prefill chunk (16: a 40-id prompt is 16 + 16 + 8 padded) */
    int reset_every;      /* every K-th round starts with a full reset (4) */
    int64_t ctx;          /* KV cache length (1024) */
    int graph;            /* 1: capture the decode step once, replay it (GPU) */
    uint64_t seed;
} soak_glm_opts;

void soak_glm_opts_init(soak_glm_opts *o);

typedef struct soak_glm soak_glm;

/* Builds both graphs on ctx and runs the first prefill; prints a line that
** says what runs. Returns 0, or -1 with a message printed to stderr. */
int soak_glm_open(m40_ctx *ctx, const soak_glm_opts *o, soak_glm **out);
/* Decodes one token (after starting a round when one is due). 0 or -1. */
int soak_glm_step(soak_glm *s, long step);
/* Downloads the last decode step's logits [V]: all finite. 0 or -1. */
int soak_glm_check(soak_glm *s, long step);
/* Prints the counts (rounds, rewinds, resets, the repeat check); returns 0
** when the repeat check passed, -1 when it failed where it must hold. */
int soak_glm_summary(soak_glm *s, double secs, long steps);
void soak_glm_close(soak_glm *s);

#endif
