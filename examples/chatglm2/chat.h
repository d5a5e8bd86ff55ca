/* A multi-round conversation on one glm_model: the official prompt formats,
** the KV cache reused across rounds, streaming through chat_stream, and the
** context's limits. No terminal I/O here: text goes to an emit callback,
** notes (context dropped, truncation) to a note callback.
**
** Round formats (../shared/docs/models.md):
**   ChatGLM2, first round (or after a rebuild): [gMASK, sop] +
**     encode("[Round 1]\n\n问：q\n\n答：") (m40_chatglm_encode_chat's format over
**     the kept history, built with lengths: a line may hold NUL bytes); a later round on the cached history, as the official
**     stream_chat with past_key_values: encode("\n\n[Round N]\n\n问：q\n\n答：")
**     without its first id (the "▁" piece), after the cached ids (history +
**     the answer's ids, without the eos that ended it). Not token-identical
**     to encoding the whole history as text: the cache holds the model's own
**     answer ids (encoding the processed answer text may split it otherwise)
**     and the "\n\n[Round N]" after it is encoded on its own, without the
**     dummy-prefix "▁", where whole-text encoding would join it to the answer.
**   ChatGLM3: [gMASK, sop] (+ <|system|> encode("\n") encode(system)) +
**     <|user|> encode("\n") encode(q) <|assistant|>; a later round on the
**     cache appends [gMASK, sop] <|user|> ... <|assistant|> as the official
**     stream_chat does (its build_chat_input adds the prefix every round).
**     The answer stops at eos, <|user|> or <|observation|>.
** Context: a round starts when its ids plus room for the answer (a quarter
** of the cache or max_new, the smaller) fit; otherwise the oldest rounds are
** dropped and the kept history is re-encoded as text and prefilled anew. */
#ifndef M40_EXAMPLES_CHATGLM2_CHAT_H
#define M40_EXAMPLES_CHATGLM2_CHAT_H

#include "chatglm2.h"
#include "stream.h"

#include <m40/tokenizer.h>
#include <m40/transformer.h>

#include <signal.h>

#define CHATGLM3_SYSTEM 64794
#define CHATGLM3_USER 64795
#define CHATGLM3_ASSISTANT 64796
#define CHATGLM3_OBSERVATION 64797

typedef enum chat_stop {
    CHAT_STOP_EOS,       /* the model ended its answer */
    CHAT_STOP_LENGTH,    /* max_new tokens */
    CHAT_STOP_INTERRUPT, /* *interrupt was set (Ctrl-C) */
    CHAT_STOP_CONTEXT    /* the cache is full */
} chat_stop;

typedef struct chat_stats {
    int prompt_tokens;   /* ids prefilled for the last round */
    int answer_tokens;   /* ids generated */
    double prefill_s, decode_s;
    int dropped_rounds;  /* rounds dropped to make room, last round */
    chat_stop stop;
} chat_stats;

typedef struct chat_opts {
    int glm3;
    const char *system;  /* ChatGLM3's system prompt, or NULL */
    m40_sampler_desc sampler;
    long max_new;        /* 0: until the context is full */
    volatile sig_atomic_t *interrupt; /* set: stop the answer (may be NULL) */
    void (*emit)(void *user, const char *text, size_t len);
    void (*note)(void *user, const char *msg);
    void *user;
} chat_opts;

typedef struct chat chat;

/* 0, or -1 with the reason in err. The model and tokenizer outlive it. */
int chat_create(glm_model *m, m40_tokenizer *tok, const chat_opts *o, chat **out, char *err,
                size_t errlen);
void chat_destroy(chat *c);
/* One round: prefills the new ids, streams the answer through emit.
** 0, or -1 with chat_errmsg: a refused prompt (too long) or Ctrl-C while
** the prompt was prefilled leave the cache as it was (or, after a rebuild,
** empty with the kept rounds' text, prefilled again next round); a model
** error resets the conversation. */
int chat_ask(chat *c, const char *query, size_t len);
void chat_reset(chat *c);
const char *chat_errmsg(const chat *c);
const chat_stats *chat_last_stats(const chat *c);
int chat_rounds(const chat *c);
/* The ids in the cache (n = glm_pos), the last round's first new id's index
** in them, and its answer's ids. */
const int32_t *chat_ids(const chat *c, int *n);
int chat_round_start(const chat *c);
const int32_t *chat_answer_ids(const chat *c, int *n);
/* The processed text of the last answer. */
const char *chat_answer(const chat *c, size_t *len);

#endif
