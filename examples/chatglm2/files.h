/* Where a ChatGLM2/3 model's pieces are, for the programs on the model API
** (m40-chat, m40-server): the tokenizer, the chat format, option numbers.
** PATH is a model file (.safetensors) or a Hugging Face-style directory. */
#ifndef M40_EXAMPLES_CHATGLM2_FILES_H
#define M40_EXAMPLES_CHATGLM2_FILES_H

#include "chatglm2.h"

#include <stddef.h>

/* 1 if p names a directory. */
int glm_is_dir(const char *p);

/* The directory PATH names or lives in ("." for a bare file name). */
void glm_model_dir(const char *path, char *out, size_t cap);

/* The tokenizer model's bytes (malloc'd, *len set): `explicit` if given,
** else the directory's tokenizer.model, else the file's
** "extra.tokenizer.model" tensor (glm_model_save writes it), else
** tokenizer.model beside the file. NULL when none is found or readable
** (at most GLM_TOKENIZER_MAX bytes); *where then lists what was tried,
** each file with the reason it was not used: "DIR/tokenizer.model (No
** such file or directory)". */
#define GLM_TOKENIZER_MAX (64L << 20)
void *glm_tokenizer_bytes(const char *model, const char *explicit, size_t *len, char *where,
                          size_t cap);

/* 1 for ChatGLM3: a model file's metadata says chat_format chatglm3
** (glm_model_save_as writes it), else config.json names it
** ("_name_or_path": "THUDM/chatglm3-6b"). */
int glm_is_chatglm3(const char *model);

/* s as a whole decimal number in [lo, hi]: 0 and *v set, else -1. */
int glm_parse_long(const char *s, long lo, long hi, long *v);

/* --dtype's value: auto (GLM_DTYPE_AUTO), fp32, fp16, int8, int4, int4g128;
** 0, or -1 for anything else. */
#define GLM_DTYPE_CHOICES "auto, fp16, fp32, int8, int4 or int4g128"
int glm_parse_dtype(const char *s, m40_wformat *out);

/* --devices LIST --split MODE of m40-chat and m40-server into o (tp,
** devices): "0,1" (distinct ordinals 0..1023, at most GLM_MAX_RANKS) and
** "tensor" (one device: any split; "layer": not in the examples yet).
** devs: the caller's array of GLM_MAX_RANKS. 0, or -1 with *why. */
int glm_parse_devices(const char *list, const char *split, int *devs, glm_open_opts *o,
                      const char **why);

#endif
