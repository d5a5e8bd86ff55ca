/* Streaming an answer as text: generated ids in, printable UTF-8 out.
**
** Ids with no tokenizer piece (the ChatGLM specials, the padded vocabulary's
** ids, anything past the tokenizer's size) are skipped. Bytes of a character
** that is not complete yet are held back (m40_tokenizer_stream), and so is
** every tail the official post-processing could still change: trailing
** whitespace (the answer is stripped), trailing ASCII , ! : ; ? (full-width
** next to a CJK ideograph, which may come next) and a trailing prefix of
** "[[训练时间]]". So the concatenation of the chunks is exactly the processed
** answer, and no chunk splits a character.
**
** ChatGLM2: m40_chatglm_process_response. ChatGLM3 (the official
** process_response): the first line is the answer's metadata; when it is
** blank the rest is the content, stripped, "[[训练时间]]" → "2023年"; no
** full-width punctuation. */
#ifndef M40_EXAMPLES_CHATGLM2_STREAM_H
#define M40_EXAMPLES_CHATGLM2_STREAM_H

#include <m40/tokenizer.h>

#include <stddef.h>
#include <stdint.h>

typedef struct chat_stream chat_stream;

/* 0, or -1 (out of memory). glm3: the ChatGLM3 post-processing. */
int chat_stream_create(m40_tokenizer *tok, int glm3, chat_stream **out);
void chat_stream_destroy(chat_stream *s);
/* A new answer. */
void chat_stream_begin(chat_stream *s);
/* One generated id: *text, *len the newly final text (maybe empty), valid
** until the next call. 0, or -1 (out of memory). */
int chat_stream_push(chat_stream *s, int32_t id, const char **text, size_t *len);
/* The end of the answer: what was held back, processed. */
int chat_stream_finish(chat_stream *s, const char **text, size_t *len);
/* The processed answer so far (all the chunks), NUL-terminated. */
const char *chat_stream_text(const chat_stream *s, size_t *len);
/* Ids of this answer that had no piece (skipped). */
int chat_stream_skipped(const chat_stream *s);

/* 1 if the n bytes are valid UTF-8 (no overlongs, surrogates, > U+10FFFF). */
int utf8_valid(const char *s, size_t n);

#endif
