/* .safetensors reader: validate the header, map the data. See safetensors.h. */
#define _POSIX_C_SOURCE 200809L
#include "m40/safetensors.h"
#include "json.h"
#include "../internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Headers over this are treated as corrupt (the reference library uses 100 MB). */
#define ST_MAX_HEADER (100u << 20)
/* More tensors, or metadata entries, than any model has (a 70B LLM has ~1000
** tensors). With the header cap it bounds the tables; all checks below are
** O(n log n), so even a header at both limits opens in about a second. */
#define ST_MAX_TENSORS (1u << 20)
#define ST_MAX_META (1u << 16)

struct m40_st_file {
    char errmsg[512];
    unsigned char *map;   /* whole file */
    size_t map_len;
    size_t ntensors, cap;
    m40_st_tensor *tensors;   /* [ntensors], by offset */
    const m40_st_tensor **by_name; /* [ntensors], sorted by name, for find */
    size_t nmeta, cap_meta;
    char **meta;          /* key, value, key, value, ... */
};

static m40_status st_err(m40_st_file *f, m40_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->errmsg, sizeof f->errmsg, fmt, ap);
    va_end(ap);
    return s;
}

static const struct { const char *name; int size; m40_dtype dt; } DTYPES[] = {
    {"F64", 8, M40_DTYPE_COUNT}, {"F32", 4, M40_DTYPE_F32}, {"F16", 2, M40_DTYPE_F16},
    {"BF16", 2, M40_DTYPE_COUNT}, {"I64", 8, M40_DTYPE_COUNT}, {"U64", 8, M40_DTYPE_COUNT},
    {"I32", 4, M40_DTYPE_I32}, {"U32", 4, M40_DTYPE_COUNT}, {"I16", 2, M40_DTYPE_COUNT},
    {"U16", 2, M40_DTYPE_COUNT}, {"I8", 1, M40_DTYPE_I8}, {"U8", 1, M40_DTYPE_COUNT},
    {"BOOL", 1, M40_DTYPE_COUNT}, {"F8_E4M3", 1, M40_DTYPE_COUNT}, {"F8_E5M2", 1, M40_DTYPE_COUNT},
};

static int dtype_index(const char *s) {
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (strcmp(DTYPES[i].name, s) == 0) return (int)i;
    return -1;
}

static m40_status json_err(m40_st_file *f, m40_json *c, const char *where) {
    return st_err(f, M40_ERR_FORMAT, "safetensors header: %s at byte %zu of the JSON (%s)",
                  c->err ? c->err : "malformed", c->err_pos, where);
}

/* Parses one tensor's object: {"dtype":..,"shape":[..],"data_offsets":[b,e]}. */
static m40_status parse_tensor(m40_st_file *f, m40_json *c, m40_st_tensor *t,
                               uint64_t data_start) {
    bool done = false, have_dt = false, have_shape = false, have_off = false;
    int64_t begin = 0, end = 0;
    int di = -1;
    if (!m40__json_expect(c, '{')) return json_err(f, c, t->name);
    if (m40__json_peek(c, '}')) { m40__json_expect(c, '}'); done = true; }
    while (!done) {
        char *key;
        if (!m40__json_string(c, &key) || !m40__json_expect(c, ':')) {
            free(key);
            return json_err(f, c, t->name);
        }
        if (strcmp(key, "dtype") == 0) {
            char *v;
            if (!m40__json_string(c, &v)) { free(key); return json_err(f, c, t->name); }
            di = dtype_index(v);
            if (di < 0) {
                m40_status s = st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' has unknown dtype '%.16s'", t->name, v);
                free(v); free(key);
                return s;
            }
            snprintf(t->dtype_name, sizeof t->dtype_name, "%s", DTYPES[di].name);
            t->dtype = DTYPES[di].dt;
            free(v);
            have_dt = true;
        } else if (strcmp(key, "shape") == 0) {
            bool sd = false;
            t->ndim = 0;
            if (!m40__json_expect(c, '[')) { free(key); return json_err(f, c, t->name); }
            if (m40__json_peek(c, ']')) { m40__json_expect(c, ']'); sd = true; }
            while (!sd) {
                int64_t v;
                if (!m40__json_int(c, &v)) { free(key); return json_err(f, c, t->name); }
                if (v < 0) { free(key); return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' has a negative dim", t->name); }
                if (t->ndim == M40_ST_MAX_DIMS) { free(key); return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' has more than %d dims", t->name, M40_ST_MAX_DIMS); }
                t->shape[t->ndim++] = v;
                if (!m40__json_next(c, ']', &sd)) { free(key); return json_err(f, c, t->name); }
            }
            have_shape = true;
        } else if (strcmp(key, "data_offsets") == 0) {
            bool od = false;
            if (!m40__json_expect(c, '[') || !m40__json_int(c, &begin) || !m40__json_next(c, ']', &od) || od ||
                !m40__json_int(c, &end) || !m40__json_next(c, ']', &od) || !od) {
                free(key);
                if (!c->err) return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s': data_offsets must be [begin, end]", t->name);
                return json_err(f, c, t->name);
            }
            have_off = true;
        } else if (!m40__json_skip(c)) {
            free(key);
            return json_err(f, c, t->name);
        }
        free(key);
        if (!m40__json_next(c, '}', &done)) return json_err(f, c, t->name);
    }
    if (!have_dt || !have_shape || !have_off)
        return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' lacks %s", t->name,
                      !have_dt ? "\"dtype\"" : !have_shape ? "\"shape\"" : "\"data_offsets\"");
    /* bytes = numel * size, computed without overflow */
    uint64_t n = (uint64_t)DTYPES[di].size;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        if (d && n > UINT64_MAX / d)
            return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' is impossibly large", t->name);
        n *= d;
    }
    if (begin < 0 || end < begin || (uint64_t)(end - begin) != n)
        return st_err(f, M40_ERR_FORMAT,
                      "safetensors: tensor '%s' (%s, %d dims) needs %llu bytes but data_offsets "
                      "are [%lld, %lld]", t->name, t->dtype_name, t->ndim,
                      (unsigned long long)n, (long long)begin, (long long)end);
    if ((uint64_t)end > f->map_len - data_start)
        return st_err(f, M40_ERR_FORMAT,
                      "safetensors: tensor '%s' ends at byte %llu of the data but the file has "
                      "only %llu data bytes (truncated?)", t->name, (unsigned long long)end,
                      (unsigned long long)(f->map_len - data_start));
    t->offset = data_start + (uint64_t)begin;
    t->nbytes = n;
    return M40_OK;
}

static m40_status parse_metadata(m40_st_file *f, m40_json *c) {
    bool done = false;
    if (!m40__json_expect(c, '{')) return json_err(f, c, "__metadata__");
    if (m40__json_peek(c, '}')) { m40__json_expect(c, '}'); return M40_OK; }
    while (!done) {
        char *k = NULL, *v = NULL;
        if (!m40__json_string(c, &k) || !m40__json_expect(c, ':') || !m40__json_string(c, &v)) {
            free(k); free(v);
            if (!c->err) return json_err(f, c, "__metadata__");
            return st_err(f, M40_ERR_FORMAT, "safetensors: __metadata__ must map strings to strings (%s)", c->err);
        }
        if (f->nmeta == f->cap_meta) {
            if (f->nmeta / 2 >= ST_MAX_META) {
                free(k); free(v);
                return st_err(f, M40_ERR_FORMAT, "safetensors: __metadata__ has more than %u entries", ST_MAX_META);
            }
            size_t nc = f->cap_meta ? f->cap_meta * 2 : 16;
            char **m = realloc(f->meta, nc * sizeof *m);
            if (!m) { free(k); free(v); return st_err(f, M40_ERR_OOM_HOST, "out of memory"); }
            f->meta = m;
            f->cap_meta = nc;
        }
        f->meta[f->nmeta++] = k;
        f->meta[f->nmeta++] = v;
        if (!m40__json_next(c, '}', &done)) return json_err(f, c, "__metadata__");
    }
    return M40_OK;
}

static int by_offset(const void *a, const void *b) {
    const m40_st_tensor *x = a, *y = b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

static int by_name(const void *a, const void *b) {
    const m40_st_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static m40_status parse_header(m40_st_file *f) {
    if (f->map_len < 8)
        return st_err(f, M40_ERR_FORMAT, "safetensors: file is %zu bytes, too short for the header length", f->map_len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->map[i];
    if (hlen > ST_MAX_HEADER || hlen > f->map_len - 8)
        return st_err(f, M40_ERR_FORMAT,
                      "safetensors: header length %llu is beyond the file (%zu bytes) or the "
                      "100 MB limit: not a safetensors file, or truncated",
                      (unsigned long long)hlen, f->map_len);
    uint64_t data_start = 8 + hlen;
    m40_json c;
    m40__json_init(&c, (const char *)f->map + 8, (size_t)hlen);
    bool done = false;
    if (!m40__json_expect(&c, '{')) return json_err(f, &c, "top level");
    if (m40__json_peek(&c, '}')) { m40__json_expect(&c, '}'); done = true; }
    while (!done) {
        char *name;
        if (!m40__json_string(&c, &name)) return json_err(f, &c, "tensor name");
        if (!m40__json_expect(&c, ':')) { free(name); return json_err(f, &c, "tensor name"); }
        m40_status s;
        if (strcmp(name, "__metadata__") == 0) {
            free(name);
            s = parse_metadata(f, &c);
        } else {
            if (f->ntensors == f->cap) {
                if (f->ntensors >= ST_MAX_TENSORS) {
                    free(name);
                    return st_err(f, M40_ERR_FORMAT, "safetensors: more than %u tensors", ST_MAX_TENSORS);
                }
                size_t nc = f->cap ? f->cap * 2 : 64;
                m40_st_tensor *nt = realloc(f->tensors, nc * sizeof *nt);
                if (!nt) { free(name); return st_err(f, M40_ERR_OOM_HOST, "out of memory"); }
                f->tensors = nt;
                f->cap = nc;
            }
            m40_st_tensor *t = &f->tensors[f->ntensors++];
            memset(t, 0, sizeof *t);
            t->name = name;
            s = parse_tensor(f, &c, t, data_start);
        }
        if (s != M40_OK) return s;
        if (!m40__json_next(&c, '}', &done)) return json_err(f, &c, "top level");
    }
    if (!m40__json_at_end(&c))
        return st_err(f, M40_ERR_FORMAT, "safetensors: trailing bytes after the header's JSON object");
    /* Sort twice, O(n log n): by offset (the table's order, for the overlap
    ** scan) and an index by name (duplicates side by side, and find). A name
    ** listed twice is checked first: its two entries may also overlap. */
    if (f->ntensors > 1) /* qsort's pointer must not be NULL, even for 0 items */
        qsort(f->tensors, f->ntensors, sizeof *f->tensors, by_offset);
    f->by_name = malloc((f->ntensors ? f->ntensors : 1) * sizeof *f->by_name);
    if (!f->by_name) return st_err(f, M40_ERR_OOM_HOST, "out of memory");
    for (size_t i = 0; i < f->ntensors; i++) f->by_name[i] = &f->tensors[i];
    if (f->ntensors > 1) qsort(f->by_name, f->ntensors, sizeof *f->by_name, by_name);
    for (size_t i = 1; i < f->ntensors; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0)
            return st_err(f, M40_ERR_FORMAT, "safetensors: tensor '%s' is listed twice in the header",
                          f->by_name[i]->name);
    const m40_st_tensor *last = NULL; /* the non-empty tensor reaching furthest */
    for (size_t i = 0; i < f->ntensors; i++) {
        const m40_st_tensor *t = &f->tensors[i];
        if (t->nbytes == 0) continue;
        if (last && last->offset + last->nbytes > t->offset)
            return st_err(f, M40_ERR_FORMAT, "safetensors: tensors '%s' and '%s' overlap", last->name, t->name);
        if (!last || t->offset + t->nbytes > last->offset + last->nbytes) last = t;
    }
    return M40_OK;
}

m40_status m40_st_open(const char *path, m40_st_file **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (!path) return M40_ERR_INVALID_ARG;
    m40_st_file *f = calloc(1, sizeof *f);
    if (!f) return M40_ERR_OOM_HOST;
    *out = f;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return st_err(f, M40_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return st_err(f, M40_ERR_IO, "'%s' is not a regular file", path);
    }
    f->map_len = (size_t)sb.st_size;
    if (f->map_len > 0) {
        void *m = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            f->map_len = 0;
            return st_err(f, M40_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
        }
        f->map = m;
    }
    close(fd);
    m40_status s = parse_header(f);
    if (s != M40_OK) {
        /* keep the message, drop the half-built table */
        char msg[sizeof f->errmsg];
        memcpy(msg, f->errmsg, sizeof msg);
        snprintf(f->errmsg, sizeof f->errmsg, "%.200s: %.300s", path, msg);
        for (size_t i = 0; i < f->ntensors; i++) free((char *)f->tensors[i].name);
        f->ntensors = 0;
        free(f->by_name);
        f->by_name = NULL;
    }
    return s;
}

void m40_st_destroy(m40_st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->map_len);
    for (size_t i = 0; i < f->ntensors; i++) free((char *)f->tensors[i].name);
    for (size_t i = 0; i < f->nmeta; i++) free(f->meta[i]);
    free(f->meta);
    free(f->by_name);
    free(f->tensors);
    free(f);
}

const char *m40_st_errmsg(const m40_st_file *f) { return f ? f->errmsg : "no file"; }
size_t m40_st_get_count(const m40_st_file *f) { return f ? f->ntensors : 0; }

const m40_st_tensor *m40_st_get(const m40_st_file *f, size_t i) {
    return f && i < f->ntensors ? &f->tensors[i] : NULL;
}

const m40_st_tensor *m40_st_find(const m40_st_file *f, const char *name) {
    if (!f || !name || !f->by_name) return NULL;
    size_t lo = 0, hi = f->ntensors; /* binary search of the name index */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (c == 0) return f->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *m40_st_get_metadata(const m40_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (size_t i = 0; i + 1 < f->nmeta; i += 2)
        if (strcmp(f->meta[i], key) == 0) return f->meta[i + 1];
    return NULL;
}

const void *m40_st_get_data(const m40_st_file *f, const m40_st_tensor *t) {
    return f && t ? f->map + t->offset : NULL;
}

m40_status m40_st_expect(m40_st_file *f, const char *name, m40_dtype dtype, int ndim,
                         const int64_t *shape, const m40_st_tensor **out) {
    if (out) *out = NULL;
    if (!f || !name || (ndim > 0 && !shape) || ndim < 0) return M40_ERR_INVALID_ARG;
    const m40_st_tensor *t = m40_st_find(f, name);
    if (!t) return st_err(f, M40_ERR_FORMAT, "weights: tensor '%s' is missing", name);
    if (t->dtype != dtype)
        return st_err(f, M40_ERR_DTYPE, "weights: tensor '%s' is %s, expected %s", name,
                      t->dtype_name, m40_dtype_name(dtype));
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char a[128], b[128];
        return st_err(f, M40_ERR_SHAPE, "weights: tensor '%s' has shape %s, expected %s", name,
                      m40__dims_str(t->ndim, t->shape, a, sizeof a), m40__dims_str(ndim, shape, b, sizeof b));
    }
    if (out) *out = t;
    return M40_OK;
}
