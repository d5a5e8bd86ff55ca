/* Where a ChatGLM2/3 model's pieces are (files.h): shared by m40-chat and
** m40-server. */
#define _POSIX_C_SOURCE 200809L
#include "files.h"

#include <m40/safetensors.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int glm_is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory a model path names or lives in. */
void glm_model_dir(const char *path, char *out, size_t cap) {
    if (glm_is_dir(path)) {
        snprintf(out, cap, "%s", path);
        return;
    }
    const char *sl = strrchr(path, '/');
    if (!sl) snprintf(out, cap, ".");
    else snprintf(out, cap, "%.*s", (int)(sl - path) ? (int)(sl - path) : 1, path);
}

/* The tokenizer model's bytes (see the header comment for where they are
** looked for); *where says what was tried when none is found. */
void *glm_tokenizer_bytes(const char *model, const char *explicit, size_t *len, char *where,
                          size_t cap) {
    char p[4200];
    const char *tried[2];
    int nt = 0;
    if (explicit) snprintf(p, sizeof p, "%s", explicit);
    else if (glm_is_dir(model)) snprintf(p, sizeof p, "%s/tokenizer.model", model);
    else {
        m40_st_file *f = NULL;
        void *b = NULL;
        if (m40_st_open(model, &f) == M40_OK) {
            const m40_st_tensor *t = m40_st_find(f, "extra.tokenizer.model");
            if (t && t->nbytes > 0 && (b = malloc(t->nbytes))) {
                memcpy(b, m40_st_get_data(f, t), t->nbytes);
                *len = t->nbytes;
            }
        }
        m40_st_destroy(f);
        if (b) return b;
        tried[nt++] = "the \"extra.tokenizer.model\" tensor of the model file";
        char d[4096];
        glm_model_dir(model, d, sizeof d);
        snprintf(p, sizeof p, "%s/tokenizer.model", d);
    }
    /* the file, or why not: "PATH (reason)" */
    char why[4400];
    FILE *f = fopen(p, "rb");
    void *b = NULL;
    long n = -1;
    if (!f) snprintf(why, sizeof why, "%s (%s)", p, strerror(errno));
    else if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        snprintf(why, sizeof why, "%s (cannot seek: %s)", p, strerror(errno));
    else if (n == 0) snprintf(why, sizeof why, "%s (empty)", p);
    else if (n > GLM_TOKENIZER_MAX)
        snprintf(why, sizeof why, "%s (%ld bytes: more than the %ld a tokenizer model may have)", p,
                 n, (long)GLM_TOKENIZER_MAX);
    else if (!(b = malloc((size_t)n))) snprintf(why, sizeof why, "%s (out of memory)", p);
    else if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        snprintf(why, sizeof why, "%s (read error%s%s)", p, ferror(f) ? ": " : "",
                 ferror(f) ? strerror(errno) : ", cut short");
        free(b);
        b = NULL;
    }
    if (f) fclose(f);
    if (b) {
        *len = (size_t)n;
        return b;
    }
    tried[nt++] = why;
    snprintf(where, cap, "%s%s%s", tried[0], nt > 1 ? ", " : "", nt > 1 ? tried[1] : "");
    return NULL;
}

/* ChatGLM3 when a model file's metadata says chat_format chatglm3 (--save
** writes it), or else when config.json names it ("_name_or_path":
** "THUDM/chatglm3-6b"). */
int glm_is_chatglm3(const char *model) {
    if (!glm_is_dir(model)) {
        m40_st_file *f = NULL;
        const char *v = NULL;
        int glm3 = -1;
        if (m40_st_open(model, &f) == M40_OK && (v = m40_st_get_metadata(f, "chat_format")))
            glm3 = !strcmp(v, "chatglm3");
        m40_st_destroy(f);
        if (glm3 >= 0) return glm3;
    }
    char d[4096], p[4200];
    glm_model_dir(model, d, sizeof d);
    snprintf(p, sizeof p, "%s/config.json", d);
    json_t *root = json_load_file(p, 0, NULL);
    const char *name = json_string_value(json_object_get(root, "_name_or_path"));
    int glm3 = name && strstr(name, "chatglm3");
    json_decref(root);
    return glm3;
}

int glm_parse_devices(const char *list, const char *split, int *devs, glm_open_opts *o,
                      const char **why) {
    int n = 0;
    for (const char *p = list; p && *p;) {
        char *end;
        errno = 0;
        long d = strtol(p, &end, 10);
        if (end == p || errno || d < 0 || d > 1023 || (*end && *end != ',')) {
            *why = "--devices: comma-separated device ordinals, e.g. 0,1";
            return -1;
        }
        if (n == GLM_MAX_RANKS) {
            *why = "--devices: at most 8";
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (devs[i] == d) {
                *why = "--devices: a device twice";
                return -1;
            }
        devs[n++] = (int)d;
        p = *end ? end + 1 : end;
    }
    if (list && !n) {
        *why = "--devices: comma-separated device ordinals, e.g. 0,1";
        return -1;
    }
    if (split && strcmp(split, "tensor") && strcmp(split, "layer")) {
        *why = "--split: tensor or layer";
        return -1;
    }
    if (n > 1 && !split) {
        *why = "--devices with several devices needs --split layer or --split tensor";
        return -1;
    }
    if (n == 1) o->device = devs[0];
    if (n > 1) {
        o->ndevices = n;
        o->layer_split = !strcmp(split, "layer");
        o->devices = devs;
    }
    return 0;
}

int glm_parse_dtype(const char *s, m40_wformat *out) {
    static const char *const names[] = {"auto", "fp32", "fp16", "int8", "int4", "int4g128"};
    static const m40_wformat fmts[] = {GLM_DTYPE_AUTO, M40_WFMT_FP32, M40_WFMT_FP16, M40_WFMT_INT8,
                                       M40_WFMT_INT4, M40_WFMT_INT4G128};
    for (int i = 0; s && i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(s, names[i])) {
            *out = fmts[i];
            return 0;
        }
    return -1;
}

int glm_parse_long(const char *s, long lo, long hi, long *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}
