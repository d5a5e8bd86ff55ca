/* ChatGLM2 / ChatGLM3 on libm40: a small C API other programs can link
** (m40-chat and m40-server use it), on libm40's public API only.
**
**   glm_model_open   a checkpoint: a .safetensors file (ours, or one with
**                    the config in its metadata) or a Hugging Face
**                    directory (config.json + model.safetensors or the
**                    model.safetensors.index.json shards); weights as fp32,
**                    fp16, int8 or int4 (quantized at load unless the file
**                    is an official quantized checkpoint); plans against
**                    the card, then allocates: two graphs (a prefill chunk,
**                    a decode step) sharing one set of weights and one KV
**                    cache
**   glm_prefill      appends ids to the session (chunks of `chunk` tokens,
**                    each one graph run), logits of the last (or of every)
**                    position
**   glm_step         one decode step (the decode graph, captured once on a
**                    GPU and replayed)
**   glm_sample       an id from the last logits (m40_sample on the device)
**   glm_rewind       back to an earlier position (the cache is kept: a new
**                    round overwrites what follows); glm_reset = rewind(0)
**   glm_step_batch   one decode step of several conversations at once
**                    (open with parallel > 1: m40-server's continuous
**                    batching); the glm_seq_* calls name the conversation,
**                    the plain calls are conversation 0
** Every call returns 0 or -1 with a message in glm_errmsg; nothing prints
** or exits. */
#ifndef M40_EXAMPLES_CHATGLM2_H
#define M40_EXAMPLES_CHATGLM2_H

#include <m40/models.h>

#include <stdint.h>

typedef struct glm_model glm_model;

#define GLM_DTYPE_AUTO M40_WFMT_COUNT

#define GLM_MAX_PARALLEL 256
#define GLM_MAX_RANKS 8

typedef struct glm_open_opts {
    const char *path;        /* file or directory */
    /* the linears' format: GLM_DTYPE_AUTO (the default) = the checkpoint's
    ** own (a quantized checkpoint or saved file: its format; fp16, bf16 or
    ** fp32 weights: fp16); int8/int4/int4g128 on a float checkpoint
    ** quantize at load */
    m40_wformat dtype;
    int64_t ctx;             /* tokens the cache holds (0: config's seq_length, at most 8192) */
    int chunk;               /* prefill tokens per graph run (0: 256) */
    /* short prefill graphs of prefill_min, 2·prefill_min, ... < chunk
    ** tokens (0: 16; < 0 or ≥ chunk: none): a prompt's last (or only)
    ** chunk runs in the smallest that holds it instead of a padded full
    ** chunk. Best effort: those that do not fit are left out. */
    int prefill_min;
    int cpu;                 /* 1: the CPU reference instead of a GPU */
    int device;              /* CUDA ordinal */
    int all_logits;          /* 1: glm_prefill can return every position's logits */
    const char *budget;      /* NULL: the device's free memory; "m40-12g", "m40-24g" */
    /* instead of a checkpoint: seeded random weights of shape "6b"
    ** (ChatGLM2-6B) or "tiny" (2 layers, 65024 ids), for load tests
    ** without a 12.5 GB file; path is then unused */
    const char *random_shape;
    /* the model over ndevices devices (0, 1: one; at most GLM_MAX_RANKS):
    ** devices[0..ndevices) (NULL: 0..ndevices-1; with cpu, that many CPU
    ** contexts). Tensor parallelism (layer_split 0): each holds its share
    ** of every block (m40/comm.h, the builder's tp_size), all run at once,
    ** one thread per extra rank. Layer split (1): each holds consecutive
    ** blocks (the builder's layer_begin/end; as even as the layer count
    ** allows), run one after the other, the hidden state handed on through
    ** the host. */
    int ndevices;
    const int *devices;
    int layer_split;
    int parallel;            /* conversations held at once, each its own ctx-token
                             ** cache row (0, 1: one; at most GLM_MAX_PARALLEL) */
    /* loading progress (m40_chatglm2_desc.progress), or NULL */
    void (*progress)(void *user, const char *stage, uint64_t done, uint64_t total);
    void *progress_user;
} glm_open_opts;

void glm_open_opts_init(glm_open_opts *o);

/* Returns 0, or -1 with the reason in err (NUL-terminated, errlen bytes). */
int glm_model_open(const glm_open_opts *o, glm_model **out, char *err, size_t errlen);
void glm_model_close(glm_model *m);
const char *glm_errmsg(const glm_model *m);

const m40_chatglm2_config *glm_config(const glm_model *m);
int64_t glm_ctx_len(const glm_model *m);  /* the cache's length in tokens */
int glm_pos(const glm_model *m);          /* tokens in the session */
int glm_chunk(const glm_model *m);        /* prefill tokens per graph run */
m40_ctx *glm_ctx(glm_model *m);
/* The plan of the prefill graph and of the decode graph. */
void glm_plans(const glm_model *m, m40_plan_info *prefill, m40_plan_info *decode);
/* Device bytes of the graphs that share the prefill graph's weights and
** cache: every decode graph and short prefill graph (their activations). */
uint64_t glm_graphs_bytes(const glm_model *m);
/* The prefill graphs' chunk sizes, ascending (the last is glm_chunk);
** returns how many were written (at most max). */
int glm_prefill_sizes(const glm_model *m, int *sizes, int max);

/* Appends n ids (0..V-1) at the session's positions. last: V floats, the
** last position's logits (may be NULL); all: n·V floats, every position's
** (needs all_logits at open; may be NULL). The ids run in chunks of
** glm_chunk; on a failure (-1, glm_errmsg says why) the chunks already in
** stay in the cache and the position counts them, and there are no logits
** to sample until the next prefill or step (rewind to retry). */
int glm_prefill(glm_model *m, const int32_t *ids, int n, float *last, float *all);
/* One token: appends id, logits (V floats, may be NULL) of its position. */
int glm_step(glm_model *m, int32_t id, float *logits);
/* Draws the next id from the last logits (of glm_prefill or glm_step):
** history = the session's last ids (for the repetition penalty), the
** random stream's counter = the session position. *p: its probability. */
int glm_sample(glm_model *m, const m40_sampler_desc *s, int32_t *id, float *p);
int glm_rewind(glm_model *m, int pos);
void glm_reset(glm_model *m);

/* Several conversations (glm_open_opts.parallel): seq in 0..parallel-1,
** each with its own cache row, position, penalty history and last logits.
** The calls above are conversation 0's. Logits live in the graph that
** made them until it runs again: glm_seq_prefill makes every other
** conversation's prefill logits stale, and a step of n conversations (run
** by the decode graph of the smallest batch 1, 2, 4, ..., parallel that
** holds n) those of the others last stepped in that graph. Sampling stale
** logits fails: sample right after the prefill or step. */
int glm_parallel(const glm_model *m);
int glm_seq_pos(const glm_model *m, int seq); /* -1: no such conversation */
int glm_seq_prefill(glm_model *m, int seq, const int32_t *ids, int n, float *last, float *all);
/* One decode step of n distinct conversations seqs[0..n) (1 <= n <=
** parallel), ids[i] appended to seqs[i] at its own position: one graph
** run (the others' rows idle). Then glm_seq_sample each. */
int glm_step_batch(glm_model *m, int n, const int *seqs, const int32_t *ids);
int glm_seq_sample(glm_model *m, int seq, const m40_sampler_desc *s, int32_t *id, float *p);
/* The V logits conversation seq samples from next. */
int glm_seq_logits(glm_model *m, int seq, float *logits);
int glm_seq_rewind(glm_model *m, int seq, int pos);
/* The repetition penalty's history of seq: the last of ids[0..n) (after a
** rewind to n, the ids its cache holds: as if they were prefilled now).
** Every id must be in the vocabulary, the ones too old to be kept too. */
int glm_seq_set_history(glm_model *m, int seq, const int32_t *ids, int n);

/* Writes the loaded model as one safetensors file: every weight as it is
** held (converted, or quantized at load: the next load of that file is a
** single mmap with no quantization, at the same --dtype), the config as
** metadata, and `extra` (e.g. the tokenizer model, may be NULL) as the
** tensor "extra.tokenizer.model". It is written to PATH.tmpPID beside path and
** renamed onto path when complete: on any failure the temporary is removed
** and whatever was at path is left as it was. */
int glm_model_save(glm_model *m, const char *path, const void *extra, size_t extra_len);
/* The same, with the chat format ("chatglm2", "chatglm3"; NULL: none) as the
** metadata key "chat_format", which m40-chat reads back. */
int glm_model_save_as(glm_model *m, const char *path, const void *extra, size_t extra_len,
                      const char *chat_format);

#endif
