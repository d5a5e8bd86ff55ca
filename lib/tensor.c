/* Tensor descriptors, storage, views and host<->device transfers. */
#include "internal.h"
#include "checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

size_t m40_dtype_size(m40_dtype dt) {
    switch (dt) {
    case M40_DTYPE_F32: return 4;
    case M40_DTYPE_F16: return 2;
    case M40_DTYPE_I8: return 1;
    case M40_DTYPE_I32: return 4;
    default: return 0;
    }
}

const char *m40_dtype_name(m40_dtype dt) {
    switch (dt) {
    case M40_DTYPE_F32: return "f32";
    case M40_DTYPE_F16: return "f16";
    case M40_DTYPE_I8: return "i8";
    case M40_DTYPE_I32: return "i32";
    default: return "?";
    }
}

/* The size rules every tensor obeys (m40.h, M40_MAX_TENSOR_BYTES): the
** product of the non-zero extents times the element size, and the bytes from
** the first element to one past the last, are at most 2^62. Then no offset
** or byte count computed from a checked desc can wrap, in int64 or size_t. */
_Static_assert(M40_MAX_TENSOR_BYTES == M40_MAX_BYTES, "one size cap");

/* Elements of the shape, counting zero extents as 1 (so a shape with a zero
** dim cannot hide a wrapping product in its other dims); false on overflow. */
static bool nonzero_numel(int ndim, const int64_t *shape, int64_t *n) {
    int64_t p = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] > 0 && m40__mul_i64(p, shape[i], &p)) return false;
    *n = p;
    return true;
}

/* Bytes spanned from the first element to one past the last one, for a desc
** with non-negative extents and strides; false when over M40_MAX_BYTES. */
static bool span_checked(const m40_tensor_desc *d, uint64_t *bytes) {
    int64_t last = 0, t;
    *bytes = 0;
    for (int i = 0; i < d->ndim; i++) /* no elements: strides do not matter */
        if (d->shape[i] == 0) return true;
    for (int i = 0; i < d->ndim; i++) {
        if (m40__mul_i64(d->shape[i] - 1, d->stride[i], &t) || m40__add_i64(last, t, &last))
            return false;
    }
    uint64_t b;
    if (m40__mul_u64((uint64_t)last + 1, m40_dtype_size(d->dtype), &b) || b > M40_MAX_BYTES)
        return false;
    *bytes = b;
    return true;
}

m40_status m40_tensor_desc_make(m40_tensor_desc *d, m40_dtype dtype, int ndim,
                                const int64_t *shape) {
    if (!d) return M40_ERR_INVALID_ARG;
    memset(d, 0, sizeof *d);
    if (ndim < 0 || ndim > M40_MAX_DIMS || (ndim > 0 && !shape))
        return M40_ERR_INVALID_ARG;
    /* keep dtype and shape even when they are refused, so a caller can name them */
    d->dtype = dtype;
    d->ndim = ndim;
    for (int i = 0; i < ndim; i++) d->shape[i] = shape[i];
    if (m40_dtype_size(dtype) == 0) return M40_ERR_DTYPE;
    int64_t nz;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return M40_ERR_INVALID_ARG;
    if (!nonzero_numel(ndim, shape, &nz) ||
        (uint64_t)nz > M40_MAX_BYTES / m40_dtype_size(dtype))
        return M40_ERR_INVALID_ARG;
    int64_t s = 1; /* <= nz: cannot wrap */
    for (int i = ndim - 1; i >= 0; i--) {
        d->stride[i] = s;
        s *= shape[i];
    }
    return M40_OK;
}

int64_t m40_tensor_desc_numel(const m40_tensor_desc *d) {
    if (!d || d->ndim < 0 || d->ndim > M40_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] < 0 || m40__mul_i64(n, d->shape[i], &n)) return -1;
    return n;
}

int m40_tensor_desc_is_contiguous(const m40_tensor_desc *d) {
    if (!d || d->ndim < 0 || d->ndim > M40_MAX_DIMS) return 0;
    int64_t s = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
        if (d->shape[i] != 1 && d->stride[i] != s) return 0;
        if (m40__mul_i64(s, d->shape[i], &s)) return 0;
    }
    return 1;
}

const char *m40__dims_str(int ndim, const int64_t *shape, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld",
                              (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

const char *m40__shape_str(const m40_tensor_desc *d, char *buf, size_t n) {
    return m40__dims_str(d->ndim, d->shape, buf, n);
}

bool m40__same_shape(const m40_tensor_desc *a, const m40_tensor_desc *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

int64_t m40__elem_offset(const m40_tensor_desc *d, int64_t i) {
    int64_t off = 0;
    for (int k = d->ndim - 1; k >= 0; k--) {
        int64_t ext = d->shape[k];
        off += (i % ext) * d->stride[k];
        i /= ext;
    }
    return off;
}

/* ndim, dtype, extents and the size rule; strides are not looked at. */
static m40_status check_shape(m40_ctx *ctx, const m40_tensor_desc *d) {
    if (!d) return m40__err(ctx, M40_ERR_INVALID_ARG, "tensor descriptor is NULL");
    if (d->ndim < 0 || d->ndim > M40_MAX_DIMS)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "tensor has %d dims; libm40 supports 0..%d", d->ndim,
                        M40_MAX_DIMS);
    if (m40_dtype_size(d->dtype) == 0)
        return m40__err(ctx, M40_ERR_DTYPE, "invalid dtype %d", (int)d->dtype);
    for (int i = 0; i < d->ndim; i++) {
        if (d->shape[i] < 0)
            return m40__err(ctx, M40_ERR_INVALID_ARG,
                            "dim %d has negative extent %lld", i,
                            (long long)d->shape[i]);
    }
    char b[96];
    int64_t nz;
    if (!nonzero_numel(d->ndim, d->shape, &nz) ||
        (uint64_t)nz > M40_MAX_BYTES / m40_dtype_size(d->dtype))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s tensor %s is larger than 2^62 bytes (M40_MAX_TENSOR_BYTES)",
                        m40_dtype_name(d->dtype), m40__shape_str(d, b, sizeof b));
    return M40_OK;
}

m40_status m40__check_desc(m40_ctx *ctx, const m40_tensor_desc *d) {
    m40_status st = check_shape(ctx, d);
    if (st != M40_OK) return st;
    for (int i = 0; i < d->ndim; i++)
        if (d->stride[i] < 0)
            return m40__err(ctx, M40_ERR_INVALID_ARG,
                            "dim %d has negative stride %lld", i,
                            (long long)d->stride[i]);
    char b[96];
    uint64_t span;
    if (!span_checked(d, &span))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s tensor %s: its strides span more than 2^62 bytes "
                        "(M40_MAX_TENSOR_BYTES)",
                        m40_dtype_name(d->dtype), m40__shape_str(d, b, sizeof b));
    return M40_OK;
}

m40_status m40__check_tensor(m40_ctx *ctx, const m40_tensor *t, const char *what) {
    if (!t) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s is NULL", what);
    if (t->ctx != ctx) /* the Devices rule in m40.h */
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s belongs to another context", what);
    m40_location want = ctx->is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST;
    if (t->loc != want)
        return m40__err(ctx, M40_ERR_LOCATION,
                        "%s is in %s memory but this is a %s context", what,
                        t->loc == M40_LOC_DEVICE ? "device" : "host",
                        ctx->is_gpu ? "GPU" : "CPU");
    return M40_OK;
}

/* Bytes spanned by a desc that m40__check_desc accepted. */
static size_t span_bytes(const m40_tensor_desc *d) {
    uint64_t b = 0;
    span_checked(d, &b);
    return (size_t)b;
}

static m40_status tensor_alloc_struct(m40_ctx *ctx, const m40_tensor_desc *desc,
                                      m40_location loc, m40_tensor **out) {
    m40_tensor *t = calloc(1, sizeof *t);
    if (!t) return m40__err(ctx, M40_ERR_OOM_HOST, "out of host memory for a tensor");
    t->desc = *desc;
    t->loc = loc;
    t->ctx = ctx;
    m40__ctx_hold(ctx, M40__CHILD_TENSOR); /* lifetime: released by m40_tensor_destroy */
    *out = t;
    return M40_OK;
}

m40_status m40_tensor_create(m40_ctx *ctx, const m40_tensor_desc *desc,
                             m40_location loc, m40_tensor **out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_create: out is NULL");
    *out = NULL;
    if ((st = check_shape(ctx, desc)) != M40_OK) return st; /* strides are ignored */
    if (loc != M40_LOC_HOST && loc != M40_LOC_DEVICE)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "invalid location %d", (int)loc);
    if (loc == M40_LOC_DEVICE && !ctx->is_gpu)
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "device tensor requested on a CPU context");
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, desc->dtype, desc->ndim, desc->shape); /* checked above */
    uint64_t bytes64 = (uint64_t)m40_tensor_desc_numel(&d) * m40_dtype_size(d.dtype);
    if (bytes64 > SIZE_MAX)
        return m40__err(ctx, loc == M40_LOC_HOST ? M40_ERR_OOM_HOST : M40_ERR_OOM_DEVICE,
                        "a tensor of %llu bytes does not fit this address space",
                        (unsigned long long)bytes64);
    size_t bytes = (size_t)bytes64;
    m40_tensor *t = NULL;
    if ((st = tensor_alloc_struct(ctx, &d, loc, &t)) != M40_OK) return st;
    size_t alloc = bytes ? bytes : 1;
    if (loc == M40_LOC_HOST) {
        t->base = malloc(alloc);
        if (!t->base) {
            m40_tensor_destroy(t);
            return m40__err(ctx, M40_ERR_OOM_HOST,
                            "out of host memory allocating %zu bytes", bytes);
        }
    } else {
#ifdef M40_HAVE_CUDA
        if ((st = m40__cuda_malloc(ctx, alloc, &t->base)) != M40_OK) {
            m40_tensor_destroy(t);
            return st;
        }
#endif
    }
    t->data = t->base;
    t->storage_bytes = bytes;
    t->owns = true;
    *out = t;
    return M40_OK;
}

m40_status m40_tensor_new(m40_ctx *ctx, m40_dtype dtype, int ndim,
                          const int64_t *shape, m40_tensor **out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    m40_tensor_desc d;
    st = m40_tensor_desc_make(&d, dtype, ndim, shape);
    if (st != M40_OK) {
        if (out) *out = NULL;
        if (st == M40_ERR_DTYPE)
            return m40__err(ctx, st, "m40_tensor_new: invalid dtype %d", (int)dtype);
        if (ndim < 0 || ndim > M40_MAX_DIMS || (ndim > 0 && !shape))
            return m40__err(ctx, st, "m40_tensor_new: ndim %d (0..%d) or shape NULL", ndim,
                            M40_MAX_DIMS);
        char b[96];
        bool neg = false;
        for (int i = 0; i < ndim; i++) neg = neg || shape[i] < 0;
        return m40__err(ctx, st, "m40_tensor_new: %s shape %s %s", m40_dtype_name(dtype),
                        m40__shape_str(&d, b, sizeof b),
                        neg ? "has a negative extent"
                            : "is larger than 2^62 bytes (M40_MAX_TENSOR_BYTES)");
    }
    return m40_tensor_create(ctx, &d, ctx->is_gpu ? M40_LOC_DEVICE : M40_LOC_HOST, out);
}

void m40_tensor_destroy(m40_tensor *t) {
    if (!t) return;
    m40_ctx *ctx = t->ctx;
    if (t->owns) {
        if (t->loc == M40_LOC_HOST) free(t->base);
#ifdef M40_HAVE_CUDA
        else m40__cuda_free(ctx, t->base);
#endif
    }
    free(t);
    m40__ctx_release(ctx, M40__CHILD_TENSOR); /* may free a destroyed context */
}

m40_status m40_tensor_wrap(m40_ctx *ctx, const m40_tensor_desc *desc,
                           m40_location loc, void *data, m40_tensor **out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_wrap: out is NULL");
    *out = NULL;
    if ((st = m40__check_desc(ctx, desc)) != M40_OK) return st;
    if (!data && m40_tensor_desc_numel(desc) > 0)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_wrap: data is NULL");
    if (loc != M40_LOC_HOST && loc != M40_LOC_DEVICE)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "invalid location %d", (int)loc);
    if (loc == M40_LOC_DEVICE && !ctx->is_gpu)
        return m40__err(ctx, M40_ERR_NO_DEVICE, "device tensor on a CPU context");
    /* ops load whole elements (and the CPU reference dereferences float*):
    ** refuse rather than copy, so wrap stays zero-copy and says why */
    size_t es = m40_dtype_size(desc->dtype);
    if ((uintptr_t)data % es != 0)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_tensor_wrap: data %p is not aligned to %zu bytes, the size of "
                        "a %s element; copy it to aligned memory (m40_tensor_create + "
                        "m40_tensor_upload)", data, es, m40_dtype_name(desc->dtype));
    m40_tensor *t = NULL;
    if ((st = tensor_alloc_struct(ctx, desc, loc, &t)) != M40_OK) return st;
    t->base = t->data = data;
    t->storage_bytes = span_bytes(desc);
    t->owns = false;
    *out = t;
    return M40_OK;
}

m40_status m40_tensor_view(m40_ctx *ctx, const m40_tensor *base,
                           const m40_tensor_desc *desc, int64_t offset,
                           m40_tensor **out) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!out) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_view: out is NULL");
    *out = NULL;
    if (!base) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_view: base is NULL");
    if (base->ctx != ctx)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_view: base belongs to another context");
    if ((st = m40__check_desc(ctx, desc)) != M40_OK) return st;
    size_t es = m40_dtype_size(desc->dtype);
    if (es != m40_dtype_size(base->desc.dtype))
        return m40__err(ctx, M40_ERR_DTYPE,
                        "view dtype %s has a different element size than base %s",
                        m40_dtype_name(desc->dtype), m40_dtype_name(base->desc.dtype));
    if (offset < 0)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "view offset %lld < 0",
                        (long long)offset);
    /* base was checked when made: its data lies inside its storage and
    ** storage_bytes <= 2^62, as is span; so start + span cannot wrap once
    ** offset * es is known to be below 2^62 too */
    size_t skip = (size_t)((char *)base->data - (char *)base->base);
    size_t span = span_bytes(desc), start = 0;
    uint64_t off_bytes;
    char b[96];
    if (m40__mul_u64((uint64_t)offset, es, &off_bytes) || off_bytes > M40_MAX_BYTES ||
        (start = skip + (size_t)off_bytes) > base->storage_bytes ||
        span > base->storage_bytes - start)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "view %s at offset %lld (element size %zu) does not lie inside "
                        "the base storage of %zu bytes (%zu bytes from its start)",
                        m40__shape_str(desc, b, sizeof b), (long long)offset, es,
                        base->storage_bytes, skip);
    m40_tensor *t = NULL;
    if ((st = tensor_alloc_struct(ctx, desc, base->loc, &t)) != M40_OK) return st;
    t->base = base->base;
    t->data = (char *)base->base + start;
    t->storage_bytes = base->storage_bytes;
    t->owns = false;
    *out = t;
    return M40_OK;
}

const m40_tensor_desc *m40_tensor_get_desc(const m40_tensor *t) {
    return t ? &t->desc : NULL;
}
m40_location m40_tensor_get_location(const m40_tensor *t) {
    return t ? t->loc : M40_LOC_HOST;
}
void *m40_tensor_get_data(const m40_tensor *t) { return t ? t->data : NULL; }
size_t m40_tensor_get_nbytes(const m40_tensor *t) {
    if (!t) return 0;
    return (size_t)m40_tensor_desc_numel(&t->desc) * m40_dtype_size(t->desc.dtype);
}

static m40_status transfer_check(m40_ctx *ctx, const m40_tensor *t,
                                 const void *host, size_t nbytes, const char *fn) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!t) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: tensor is NULL", fn);
    if (t->ctx != ctx)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: tensor belongs to another context", fn);
    if (!host && nbytes) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: host pointer is NULL", fn);
    if (nbytes != m40_tensor_get_nbytes(t))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "%s: %zu bytes given, tensor holds %zu", fn, nbytes,
                        m40_tensor_get_nbytes(t));
    if (!m40_tensor_desc_is_contiguous(&t->desc))
        return m40__err(ctx, M40_ERR_UNSUPPORTED,
                        "%s: tensor is not contiguous; m40_tensor_copy it into a "
                        "contiguous tensor first", fn);
    if (t->loc == M40_LOC_DEVICE && !ctx->is_gpu)
        return m40__err(ctx, M40_ERR_NO_DEVICE, "%s: device tensor on a CPU context", fn);
    return M40_OK;
}

m40_status m40_tensor_upload(m40_ctx *ctx, m40_tensor *t, const void *src,
                             size_t nbytes) {
    m40_status st = transfer_check(ctx, t, src, nbytes, "m40_tensor_upload");
    if (st != M40_OK || nbytes == 0) return st;
    if (t->loc == M40_LOC_HOST) {
        memcpy(t->data, src, nbytes);
        return M40_OK;
    }
#ifdef M40_HAVE_CUDA
    return m40__cuda_memcpy(ctx, t->data, src, nbytes, 0);
#else
    return M40_ERR_NO_DEVICE;
#endif
}

m40_status m40_tensor_download(m40_ctx *ctx, const m40_tensor *t, void *dst,
                               size_t nbytes) {
    m40_status st = transfer_check(ctx, t, dst, nbytes, "m40_tensor_download");
    if (st != M40_OK || nbytes == 0) return st;
    if (t->loc == M40_LOC_HOST) {
        memcpy(dst, t->data, nbytes);
        return M40_OK;
    }
#ifdef M40_HAVE_CUDA
    st = m40__cuda_memcpy(ctx, dst, t->data, nbytes, 1);
    return st != M40_OK ? st : m40__cuda_guard_check(ctx, "m40_tensor_download");
#else
    return M40_ERR_NO_DEVICE;
#endif
}

/* Strided host-to-host copy, element by element. */
static void host_strided_copy(m40_tensor *dst, const m40_tensor *src) {
    int64_t n = m40_tensor_desc_numel(&src->desc);
    size_t es = m40_dtype_size(src->desc.dtype);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)dst->data + m40__elem_offset(&dst->desc, i) * (int64_t)es,
               (const char *)src->data + m40__elem_offset(&src->desc, i) * (int64_t)es,
               es);
}

m40_status m40_tensor_copy(m40_ctx *ctx, m40_tensor *dst, const m40_tensor *src) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!dst || !src)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_copy: %s is NULL",
                        dst ? "src" : "dst");
    /* the bridge between contexts: host memory belongs to no device, so a
    ** host tensor of another context may be either side */
    bool dst_foreign = dst->ctx != ctx && dst->loc == M40_LOC_DEVICE;
    if (dst_foreign || (src->ctx != ctx && src->loc == M40_LOC_DEVICE))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_tensor_copy: %s is a device tensor that belongs to another context",
                        dst_foreign ? "dst" : "src");
    if (dst->desc.dtype != src->desc.dtype)
        return m40__err(ctx, M40_ERR_DTYPE, "m40_tensor_copy: dtypes %s and %s differ",
                        m40_dtype_name(dst->desc.dtype), m40_dtype_name(src->desc.dtype));
    if (!m40__same_shape(&dst->desc, &src->desc)) {
        char a[96], b[96];
        return m40__err(ctx, M40_ERR_SHAPE, "m40_tensor_copy: shapes %s and %s differ",
                        m40__shape_str(&dst->desc, a, sizeof a),
                        m40__shape_str(&src->desc, b, sizeof b));
    }
    size_t nbytes = m40_tensor_get_nbytes(src);
    if (nbytes == 0) return M40_OK;
    bool contig = m40_tensor_desc_is_contiguous(&dst->desc) &&
                  m40_tensor_desc_is_contiguous(&src->desc);
    if (dst->loc == M40_LOC_HOST && src->loc == M40_LOC_HOST) {
        if (contig) memmove(dst->data, src->data, nbytes);
        else host_strided_copy(dst, src);
        return M40_OK;
    }
#ifdef M40_HAVE_CUDA
    if (contig) {
        int kind = src->loc == M40_LOC_HOST ? 0 : dst->loc == M40_LOC_HOST ? 1 : 2;
        return m40__cuda_memcpy(ctx, dst->data, src->data, nbytes, kind);
    }
    if (dst->loc == M40_LOC_DEVICE && src->loc == M40_LOC_DEVICE)
        return m40__cuda_copy_strided(ctx, dst, src);
    /* Strided and crossing sides: pack each strided side through a
    ** contiguous staging tensor on its own side, then copy across. */
    m40_tensor *s_tmp = NULL, *d_tmp = NULL;
    const m40_tensor *s = src;
    m40_tensor *d = dst;
    if (!m40_tensor_desc_is_contiguous(&src->desc)) {
        st = m40_tensor_create(ctx, &src->desc, src->loc, &s_tmp);
        if (st == M40_OK) st = m40_tensor_copy(ctx, s_tmp, src);
        s = s_tmp;
    }
    if (st == M40_OK && !m40_tensor_desc_is_contiguous(&dst->desc)) {
        st = m40_tensor_create(ctx, &dst->desc, dst->loc, &d_tmp);
        d = d_tmp;
    }
    if (st == M40_OK)
        st = m40__cuda_memcpy(ctx, d->data, s->data, nbytes,
                              s->loc == M40_LOC_HOST ? 0 : 1);
    if (st == M40_OK && d_tmp) st = m40_tensor_copy(ctx, dst, d_tmp);
    if (d_tmp && st == M40_OK) st = m40_ctx_sync(ctx); /* before freeing d_tmp */
    m40_tensor_destroy(s_tmp);
    m40_tensor_destroy(d_tmp);
    return st;
#else
    return m40__err(ctx, M40_ERR_NO_DEVICE, "m40_tensor_copy: device tensor without CUDA");
#endif
}

m40_status m40_tensor_crc32(m40_ctx *ctx, const m40_tensor *t, uint32_t *crc) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!t || !crc) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_tensor_crc32: NULL argument");
    size_t n = m40_tensor_get_nbytes(t);
    void *buf = malloc(n ? n : 1);
    if (!buf) return m40__err(ctx, M40_ERR_OOM_HOST, "out of host memory (%zu bytes)", n);
    st = m40_tensor_download(ctx, t, buf, n);
    if (st == M40_OK) {
        uLong c = crc32(0L, Z_NULL, 0);
        const unsigned char *p = buf;
        size_t left = n;
        while (left) { /* zlib takes uInt lengths */
            uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
            c = crc32(c, p, chunk);
            p += chunk;
            left -= chunk;
        }
        *crc = (uint32_t)c;
    }
    free(buf);
    return st;
}
