/*
** libm40 tokenizer — SentencePiece models in plain C, plus the ChatGLM2 chat format.
**
** This header is the specification. Encoding and decoding match the reference
** `sentencepiece` library (0.2.x) exactly: same ids for every byte string, valid
** UTF-8 or not, and the same decoded text for every id sequence.
**
** Supported models: BPE and unigram `.model` files (protobuf ModelProto) with
** any piece types (normal, unknown, control, user-defined, unused, byte), byte
** fallback, and the normalizers SentencePiece writes: "identity" (no rules)
** and precompiled character maps (nmt_nfkc and friends). WORD and CHAR models
** and models with a denormalizer map get M40_ERR_UNSUPPORTED.
**
** Errors. Every fallible call returns an m40_status. A handle keeps the message
** of its last error, read with m40_tokenizer_errmsg(). A failed load still hands
** back a handle holding the message when it could allocate one (the caller frees
** it); *out is NULL only when even that allocation failed.
**
** Threads. A handle is read-only after loading except for its error message and
** scratch buffers, so use one handle per thread (loading is cheap) or serialise
** calls. A stream decoder belongs to one thread.
**
** Output buffers follow snprintf: a call writes at most `cap` items, always
** reports the full count through the out-param and returns M40_OK; call again
** with a larger buffer when the count exceeds `cap`. Passing NULL with cap 0
** just measures.
*/
#ifndef M40_TOKENIZER_H
#define M40_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40_tokenizer m40_tokenizer;
typedef struct m40_tokenizer_stream m40_tokenizer_stream;

typedef enum m40_tokenizer_model {
    M40_TOKENIZER_UNIGRAM = 1,
    M40_TOKENIZER_BPE = 2
} m40_tokenizer_model;

/* Piece types, numbered as in sentencepiece_model.proto. */
typedef enum m40_piece_type {
    M40_PIECE_NORMAL = 1,
    M40_PIECE_UNKNOWN = 2,
    M40_PIECE_CONTROL = 3,
    M40_PIECE_USER_DEFINED = 4,
    M40_PIECE_UNUSED = 5,
    M40_PIECE_BYTE = 6
} m40_piece_type;

/* Loads a model from a file.
** M40_OK; M40_ERR_INVALID_ARG (path or out NULL); M40_ERR_IO (cannot open or
** read); M40_ERR_FORMAT (not a valid ModelProto, or a model the reference
** rejects: duplicate or empty pieces, missing <unk> without byte fallback,
** byte fallback without all 256 byte pieces, broken character map, ...);
** M40_ERR_UNSUPPORTED (WORD/CHAR model, denormalizer map); M40_ERR_OOM_HOST.
** On any error other than INVALID_ARG, *out may hold a handle whose errmsg says
** what failed; free it with m40_tokenizer_destroy(). Models over 64 MiB (real
** ones are a few MB) are M40_ERR_FORMAT; a device or FIFO (/dev/zero) is read
** only up to that limit. */
M40_API m40_status m40_tokenizer_load_file(const char *path, m40_tokenizer **out);

/* Loads a model from the serialized bytes of a `.model` file; the bytes are
** copied, so `data` may be freed afterwards. Same statuses as load_file,
** except M40_ERR_IO. `data` may be NULL only when size is 0. */
M40_API m40_status m40_tokenizer_load_memory(const void *data, size_t size,
                                             m40_tokenizer **out);

/* Frees a handle; NULL is a no-op. */
M40_API void m40_tokenizer_destroy(m40_tokenizer *tok);

/* Message of the handle's last error ("" if none); never NULL, even for a NULL
** handle. Valid until the next call on the handle. */
M40_API const char *m40_tokenizer_errmsg(const m40_tokenizer *tok);

/* Model facts. Each returns 0 / -1 for a NULL handle. */
M40_API m40_tokenizer_model m40_tokenizer_get_model_type(const m40_tokenizer *tok);
M40_API int32_t m40_tokenizer_get_vocab_size(const m40_tokenizer *tok);
/* Ids of <unk>, <s>, </s>, <pad> as the reference computes them: the piece named
** in the trainer spec, if it has the right type (unknown / control); else -1. */
M40_API int32_t m40_tokenizer_get_unk_id(const m40_tokenizer *tok);
M40_API int32_t m40_tokenizer_get_bos_id(const m40_tokenizer *tok);
M40_API int32_t m40_tokenizer_get_eos_id(const m40_tokenizer *tok);
M40_API int32_t m40_tokenizer_get_pad_id(const m40_tokenizer *tok);

/* Text, score and type of piece `id`. The text is not NUL-terminated and lives
** as long as the handle. Any out-param may be NULL.
** M40_OK; M40_ERR_INVALID_ARG (NULL handle, id out of range). */
M40_API m40_status m40_tokenizer_get_piece(const m40_tokenizer *tok, int32_t id,
                                       const char **text, size_t *len,
                                       float *score, m40_piece_type *type);

/* Encodes `len` bytes of text (any bytes; invalid UTF-8 is handled as the
** reference does) to ids, without BOS/EOS. Writes min(count, cap) ids to `ids`
** and the full count to *n_ids.
** M40_OK; M40_ERR_INVALID_ARG (tok or n_ids NULL, text NULL with len > 0, ids
** NULL with cap > 0); M40_ERR_OOM_HOST. */
M40_API m40_status m40_tokenizer_encode(m40_tokenizer *tok, const char *text, size_t len,
                                        int32_t *ids, size_t cap, size_t *n_ids);

/* Decodes ids to UTF-8 as the reference does: control pieces vanish, runs of
** byte pieces are reassembled and each byte that is not part of a valid UTF-8
** character becomes U+FFFD, <unk> becomes the model's unk surface (" ⁇ "), the
** leading dummy-prefix space is dropped. Writes min(size, cap) bytes to `text`,
** NUL-terminates when size < cap, and stores the size (no NUL) in *text_len.
** M40_OK; M40_ERR_INVALID_ARG (NULL tok/text_len, ids NULL with n > 0, text
** NULL with cap > 0, an id out of range — nothing is decoded then);
** M40_ERR_OOM_HOST. */
M40_API m40_status m40_tokenizer_decode(m40_tokenizer *tok, const int32_t *ids, size_t n,
                                        char *text, size_t cap, size_t *text_len);

/* Streaming decoder for generation: feed ids one at a time; each call returns
** the text that became final. The concatenation of all returned pieces plus the
** finish() text equals m40_tokenizer_decode() of the whole sequence, and each
** piece is valid UTF-8: bytes of an incomplete character are held back.
** The tokenizer must outlive the stream.
** create: M40_OK; M40_ERR_INVALID_ARG (NULL args); M40_ERR_OOM_HOST. */
M40_API m40_status m40_tokenizer_stream_create(const m40_tokenizer *tok,
                                               m40_tokenizer_stream **out);
/* Pushes one id. *text and *len receive the newly final text (possibly empty); the
** pointer is valid until the next call on this stream.
** M40_OK; M40_ERR_INVALID_ARG (NULL args, id out of range — the stream is
** unchanged); M40_ERR_OOM_HOST. */
M40_API m40_status m40_tokenizer_stream_push(m40_tokenizer_stream *s, int32_t id,
                                             const char **text, size_t *len);
/* Ends the sequence: returns held-back bytes (as U+FFFD per invalid byte, as the
** reference does at the end of input) and resets the stream for a new sequence.
** M40_OK; M40_ERR_INVALID_ARG (NULL args); M40_ERR_OOM_HOST. */
M40_API m40_status m40_tokenizer_stream_finish(m40_tokenizer_stream *s,
                                               const char **text, size_t *len);
/* Forgets everything pushed so far. NULL is a no-op. */
M40_API void m40_tokenizer_stream_reset(m40_tokenizer_stream *s);
/* Frees a stream; NULL is a no-op. */
M40_API void m40_tokenizer_stream_destroy(m40_tokenizer_stream *s);

/* ------------------------------------------------------------------ */
/* ChatGLM2                                                            */

#define M40_CHATGLM2_MASK 64789
#define M40_CHATGLM2_GMASK 64790
#define M40_CHATGLM2_SMASK 64791
#define M40_CHATGLM2_SOP 64792
#define M40_CHATGLM2_EOP 64793
#define M40_CHATGLM2_EOS 2

/* One past exchange of a chat; both strings NUL-terminated UTF-8. */
typedef struct m40_chat_turn {
    const char *query;
    const char *response;
} m40_chat_turn;

/* Builds the ChatGLM2 prompt:
**   "[Round {i}]\n\n问：{q_i}\n\n答：{r_i}\n\n" for i = 1..n_history, then
**   "[Round {n_history+1}]\n\n问：{query}\n\n答："
** Writes min(size, cap) bytes, NUL-terminates when size < cap, stores the size
** in *len. M40_OK; M40_ERR_INVALID_ARG (query/len NULL, history NULL with
** n_history > 0, a NULL string in history, out NULL with cap > 0);
** M40_ERR_OOM_HOST. */
M40_API m40_status m40_chatglm_build_prompt(const m40_chat_turn *history, size_t n_history,
                                            const char *query, char *out, size_t cap,
                                            size_t *len);

/* Model input for a chat: [gMASK, sop] + encode(build_prompt(...)), no BOS/EOS.
** Ids follow m40_tokenizer_encode()'s buffer rules.
** Statuses of build_prompt and encode; errors are recorded on `tok`. */
M40_API m40_status m40_chatglm_encode_chat(m40_tokenizer *tok, const m40_chat_turn *history,
                                           size_t n_history, const char *query,
                                           int32_t *ids, size_t cap, size_t *n_ids);

/* Decodes generated ids, skipping the ChatGLM2 special ids (64789..64793), and
** then post-processes as the official chat() does: strip surrounding Unicode
** whitespace, replace "[[训练时间]]" with "2023年", and turn ASCII , ! : ; ?
** into full-width forms when a CJK ideograph (U+4E00..U+9FFF) is next to them.
** Buffer rules and statuses of m40_tokenizer_decode(). */
M40_API m40_status m40_chatglm_decode_response(m40_tokenizer *tok, const int32_t *ids,
                                               size_t n, char *text, size_t cap,
                                               size_t *text_len);

/* The post-processing step alone, on `len` bytes of UTF-8.
** M40_OK; M40_ERR_INVALID_ARG (NULL in with len > 0, NULL out_len, out NULL
** with cap > 0). */
M40_API m40_status m40_chatglm_process_response(const char *in, size_t len, char *out,
                                                size_t cap, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* M40_TOKENIZER_H */
