/*
** libm40 — reading .safetensors weight files.
**
** The format (huggingface/safetensors): an 8-byte little-endian header
** length N, N bytes of JSON mapping each tensor name to
** {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} (offsets
** relative to the byte after the header; an optional "__metadata__" object
** of strings), then the tensor bytes, row-major, little-endian.
**
** m40_st_open() validates the whole header before returning: JSON syntax,
** every field's type, byte sizes that match dtype × shape, offsets inside
** the file, and no two tensors overlapping. The data are memory-mapped, not
** read, so opening a multi-gigabyte file is cheap. Limits for hostile files:
** a header of at most 100 MB, 1,048,576 tensors and 65,536 metadata entries;
** the checks take O(n log n) time in the tensor count.
*/
#ifndef M40_SAFETENSORS_H
#define M40_SAFETENSORS_H

#include "m40/m40.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct m40_st_file m40_st_file;

#define M40_ST_MAX_DIMS 8

typedef struct m40_st_tensor {
    const char *name;          /* owned by the file; valid until m40_st_destroy */
    char dtype_name[8];        /* as in the file: "F32", "F16", "BF16", "I64", ... */
    m40_dtype dtype;           /* M40_DTYPE_COUNT if libm40 has no such dtype */
    int ndim;                  /* 0..M40_ST_MAX_DIMS */
    int64_t shape[M40_ST_MAX_DIMS];
    uint64_t offset;           /* from the start of the file */
    uint64_t nbytes;
} m40_st_tensor;

/* Opens and validates `path`.
** On failure other than M40_ERR_INVALID_ARG (path or out NULL) and
** M40_ERR_OOM_HOST, *out is still a handle that holds the message: read it
** with m40_st_errmsg(), then m40_st_destroy() it.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   NULL path or out
**   M40_ERR_IO            the file cannot be opened, read or mapped
**   M40_ERR_FORMAT        truncated file, bad header length, malformed JSON,
**                         missing or mistyped fields, unknown dtype string,
**                         size/shape mismatch, offsets out of range or
**                         overlapping, a name listed twice, rank over 8,
**                         over the limits above
**   M40_ERR_OOM_HOST */
M40_API m40_status m40_st_open(const char *path, m40_st_file **out);

/* Unmaps and frees. NULL is a no-op. */
M40_API void m40_st_destroy(m40_st_file *f);

/* The last error message ("" if none; "no file" for NULL). */
M40_API const char *m40_st_errmsg(const m40_st_file *f);

/* Number of tensors (0 for NULL or a failed open). */
M40_API size_t m40_st_get_count(const m40_st_file *f);

/* The i-th tensor in file order (sorted by offset), or NULL if i is out of
** range. */
M40_API const m40_st_tensor *m40_st_get(const m40_st_file *f, size_t i);

/* The tensor called `name`, or NULL. */
M40_API const m40_st_tensor *m40_st_find(const m40_st_file *f, const char *name);

/* The value of a "__metadata__" key, or NULL. */
M40_API const char *m40_st_get_metadata(const m40_st_file *f, const char *key);

/* Pointer to the tensor's bytes in the mapping (little-endian, row-major;
** not necessarily aligned to the element size). NULL for NULL arguments. */
M40_API const void *m40_st_get_data(const m40_st_file *f, const m40_st_tensor *t);

/* Checks that tensor `name` exists with dtype `dtype` and exactly the
** given shape, and returns it. On mismatch the message names the tensor,
** what the file has and what was expected.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_FORMAT (missing tensor: the
** message says "missing"), M40_ERR_DTYPE, M40_ERR_SHAPE. */
M40_API m40_status m40_st_expect(m40_st_file *f, const char *name, m40_dtype dtype,
                                 int ndim, const int64_t *shape,
                                 const m40_st_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* M40_SAFETENSORS_H */
