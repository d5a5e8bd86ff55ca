/*
** libm40 — an embeddable inference library for NVIDIA Maxwell (sm_52) GPUs.
**
** This header is the specification of the core API. It is plain C11 and
** includes no CUDA header, so any C or C++ program can include it.
**
** Conventions
**   - Every fallible call returns an m40_status and writes results through
**     out-params. M40_OK is 0.
**   - A context (m40_ctx) keeps the message of its last error: m40_errmsg().
**   - The library never prints, aborts or exits. Log lines go to the
**     callback given in m40_ctx_desc, if any.
**   - Shapes are outermost first, as in PyTorch ([N,C,H,W], [B,T,C]).
**     Strides are in elements. At most M40_MAX_DIMS dimensions.
**   - F16 on sm_52 means "stored as F16, computed in F32".
**   - Names (the whole public surface: m40.h, graph.h, models.h, quant.h,
**     safetensors.h, tokenizer.h, doctor.h):
**       m40_<object>_create / _open / _load_* make a handle; every handle is
**       released with m40_<object>_destroy (NULL is a no-op);
**       m40_<object>_get_<field> reads a property of a handle;
**       m40_<object>_desc_init fills a descriptor with defaults; descriptors
**       that will grow start with size_t struct_size.
**   - Argument order of ops: the context, then the op's parameters (a
**     descriptor, an enum, scalars), then the input tensors, then the
**     output tensor: m40_scale(ctx, alpha, x, out), m40_pool2d(ctx, &desc,
**     x, y). Transfers keep memcpy's order (destination first):
**     m40_tensor_upload(ctx, t, src, n), m40_tensor_copy(ctx, dst, src).
**   - Buffers the caller provides (text, JSON, ids) follow one rule, as
**     snprintf: the call writes min(size, cap) items, adds a NUL to text
**     when size < cap, stores the full size (without the NUL) in its *len
**     out-param and returns M40_OK; call with cap 0 to learn the size. A
**     too-small buffer is not an error; compare *len with cap.
**
** Rules (each one enforced by the library or stated as the caller's duty)
**   Threads. A context and everything made from it (tensors, graphs) is
**     used by one thread at a time: the caller serializes calls on one
**     context, and a tensor or graph counts as part of its context. Any
**     thread may make the calls, one after another. Different contexts may
**     be used at the same time from different threads, also contexts on the
**     same device. The library has no global mutable state of its own: no
**     lazy process-wide initialisation (the cuBLAS and cuDNN handles are per
**     context, created on first use inside a call on that context; NVML is
**     opened per m40_doctor_run), and it reads the environment (M40_MATMUL)
**     only in m40_ctx_create. CUDA graph capture uses the relaxed mode, so
**     it does not disturb other threads' CUDA calls. The calls without a context (m40_status_str,
**     m40_version, m40_build_info, m40_dtype_*, m40_tensor_desc_*,
**     m40_cudnn_version, the *_desc_init functions) may be called from any
**     thread at any time. The CUDA runtime's current device is per thread;
**     see Devices.
**   Devices. Every call on a GPU context makes the context's device current
**     in the calling thread first (cudaSetDevice, only when another device
**     is current), so contexts on different GPUs may be used in turn from
**     one thread. The library leaves that device current on return. Every op
**     checks that its tensors were made on the context it is given
**     (M40_ERR_INVALID_ARG "... belongs to another context" otherwise).
**   Errors. A call that takes a context (or a tensor or graph made from
**     one) and returns M40_OK leaves no error behind: m40_errcode() is
**     M40_OK and m40_errmsg() is "" after it. A failed call leaves its
**     status and message until the next call on that context. Getters that
**     return no status (m40_ctx_get_stream, m40_tensor_get_data ...) change neither.
**     A fallback that still gives the right result (an op that runs without
**     the scratch memory it wanted because the workspace could not grow) is
**     not an error: it is logged at M40_LOG_WARN and counted in
**     m40_ctx_stats.
**   Configuration comes from descriptors (m40_ctx_desc); the environment is
**     read only where a field says so, as an override for benchmarks.
**   Lifetime. destroy functions accept NULL and do nothing. Destroying an
**     object twice is undefined, as free() twice is. A context
**     may be destroyed before its tensors and graphs: m40_ctx_destroy then
**     waits for queued work and the context becomes "closing" (no call may
**     use it any more), but its memory, stream and handles stay until its
**     last tensor or graph is destroyed, which frees them (sqlite3_close_v2's
**     "zombie" rule). Until then the only valid calls on those children are
**     m40_tensor_destroy and m40_graph_destroy. A view does not keep its base's
**     storage alive: destroy views before their base (or never touch them after).
*/
#ifndef M40_M40_H
#define M40_M40_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(M40_SHARED_BUILD)
#define M40_API __declspec(dllexport)
#elif defined(__GNUC__)
#define M40_API __attribute__((visibility("default")))
#else
#define M40_API
#endif

#define M40_VERSION_MAJOR 0
#define M40_VERSION_MINOR 1
#define M40_VERSION_PATCH 0
#define M40_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* Status codes. One table generates the enum and m40_status_str().    */

#define M40_STATUS_TABLE(X)                                                   \
    X(M40_OK, "ok")                                                           \
    X(M40_ERR_INVALID_ARG, "invalid argument")                               \
    X(M40_ERR_SHAPE, "shape mismatch")                                        \
    X(M40_ERR_DTYPE, "dtype mismatch or unsupported dtype")                   \
    X(M40_ERR_NO_DEVICE, "no usable CUDA device")                             \
    X(M40_ERR_CUDA, "CUDA runtime or library error")                          \
    X(M40_ERR_DEVICE_LOST, "device context unusable after a sticky error")   \
    X(M40_ERR_OOM_HOST, "out of host memory")                                 \
    X(M40_ERR_OOM_DEVICE, "out of device memory")                             \
    X(M40_ERR_UNSUPPORTED, "unsupported operation or configuration")          \
    X(M40_ERR_IO, "I/O error")                                                \
    X(M40_ERR_FORMAT, "malformed or truncated data")                          \
    X(M40_ERR_LOCATION, "tensor is on the wrong side (host vs device)")      \
    X(M40_ERR_STATE, "object is in the wrong state for this call")

typedef enum m40_status {
#define M40__ENUM(name, text) name,
    M40_STATUS_TABLE(M40__ENUM)
#undef M40__ENUM
    M40_STATUS_COUNT
} m40_status;

/* Returns a static, human-readable description of `s`; never NULL.
** Unknown values give "unknown status". */
M40_API const char *m40_status_str(m40_status s);

/* Returns the library version as "MAJOR.MINOR.PATCH"; never NULL. */
M40_API const char *m40_version(void);

/* Returns a static, space-separated description of how this binary was
** built: "cuda=11.8 archs=52 cublas=yes cudnn=no" or "cuda=no". */
M40_API const char *m40_build_info(void);

/* ------------------------------------------------------------------ */
/* Context                                                             */

typedef struct m40_ctx m40_ctx;

typedef enum m40_log_level {
    M40_LOG_DEBUG = 0,
    M40_LOG_INFO = 1,
    M40_LOG_WARN = 2,
    M40_LOG_ERROR = 3
} m40_log_level;

typedef void (*m40_log_fn)(void *user, m40_log_level level, const char *msg);

/* Use this for m40_ctx_desc.device to get a CPU-only context that runs the
** plain C reference implementation of every op. */
#define M40_DEVICE_CPU (-1)

/* The engine of m40_matmul on a GPU context. */
typedef enum m40_matmul_engine {
    M40_MATMUL_OURS = 0,  /* libm40's sm_52 SGEMM (the default) */
    M40_MATMUL_CUBLAS = 1 /* cuBLAS, pedantic FP32: the baseline */
} m40_matmul_engine;

typedef struct m40_ctx_desc {
    size_t struct_size;   /* sizeof(m40_ctx_desc): lets the struct grow */
    int device;           /* CUDA device ordinal, or M40_DEVICE_CPU */
    m40_log_fn log;       /* optional; NULL = silent */
    void *log_user;       /* passed to log */
    m40_log_level log_level; /* lowest level passed to log */
    /* --- added after 0.1.0 (a smaller struct_size gets the defaults below) */
    m40_matmul_engine matmul; /* GPU m40_matmul engine. For benchmarks the
                          ** environment variable M40_MATMUL=cublas or =ours,
                          ** read by m40_ctx_create, overrides this field. */
} m40_ctx_desc;

/* Fills `desc` with defaults: device 0, no log callback, level INFO,
** matmul OURS. */
M40_API void m40_ctx_desc_init(m40_ctx_desc *desc);

/* Creates a context. A GPU context owns one CUDA stream on `device` and,
** created on first use, a cuBLAS handle.
**
** Like sqlite3_open(), on most failures *out still receives a context that
** holds the error message (read it with m40_errmsg(), then destroy it); it
** cannot run ops. *out is NULL only for M40_ERR_INVALID_ARG with out == NULL
** and for M40_ERR_OOM_HOST.
**
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG  out or desc NULL, desc->struct_size smaller than
**                        the first version of the struct or larger than
**                        this one, or a field out of range
**   M40_ERR_NO_DEVICE    built without CUDA, no driver or GPU, or the
**                        ordinal is out of range
**   M40_ERR_CUDA         the runtime failed to set up the device or stream
**   M40_ERR_OOM_HOST */
M40_API m40_status m40_ctx_create(const m40_ctx_desc *desc, m40_ctx **out);

/* Waits for outstanding work, then frees the context. NULL is a no-op.
** With tensors or graphs of the context still alive, the context is only
** closed: no call may use it any more, and its resources are freed when
** the last of them is destroyed (see Lifetime at the top). */
M40_API void m40_ctx_destroy(m40_ctx *ctx);

/* The message of the last error on `ctx`: "" after a call that succeeded;
** "no context" if ctx is NULL. Valid until the next call on ctx. */
M40_API const char *m40_errmsg(const m40_ctx *ctx);

/* The status of the last call on ctx that returned one: M40_OK after a
** call that succeeded (M40_ERR_INVALID_ARG for a NULL ctx). */
M40_API m40_status m40_errcode(const m40_ctx *ctx);

/* Counters of a context since its creation. */
typedef struct m40_ctx_stats {
    size_t struct_size;           /* set by the caller: sizeof(m40_ctx_stats) */
    uint64_t workspace_fallbacks; /* ops that ran without the scratch they
                                  ** asked for (the workspace could not
                                  ** grow; e.g. a matmul without split-K):
                                  ** right results, maybe slower. Each one is
                                  ** also logged at M40_LOG_WARN. */
    int64_t live_tensors;         /* tensors made on ctx and not yet freed */
    int64_t live_graphs;          /* graphs made on ctx and not yet destroyed */
} m40_ctx_stats;

/* Fills *stats (up to stats->struct_size bytes, so an older, smaller
** struct keeps working).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, or struct_size smaller than
** the first version), M40_ERR_STATE (a context whose creation failed). */
M40_API m40_status m40_ctx_get_stats(m40_ctx *ctx, m40_ctx_stats *stats);

typedef struct m40_device_info {
    int is_gpu;              /* 0 for a CPU context */
    int device;              /* ordinal, or M40_DEVICE_CPU */
    char name[256];          /* "Tesla M40 24GB", or "CPU reference" */
    int cc_major, cc_minor;  /* compute capability (0.0 on CPU) */
    int sm_count;
    size_t total_bytes;      /* device memory (0 on CPU) */
    size_t free_bytes;       /* free device memory at the time of the call */
} m40_device_info;

/* Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   ctx or info NULL
**   M40_ERR_DEVICE_LOST   an earlier sticky CUDA error broke the context
**   M40_ERR_CUDA */
M40_API m40_status m40_ctx_get_info(m40_ctx *ctx, m40_device_info *info);

/* Waits until all work queued on the context's stream is done.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_CUDA, M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_ctx_sync(m40_ctx *ctx);

/* The context's cudaStream_t as void* (NULL on a CPU context), so callers
** can order their own CUDA work with the library's. */
M40_API void *m40_ctx_get_stream(m40_ctx *ctx);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */

#define M40_MAX_DIMS 4

typedef enum m40_dtype {
    M40_DTYPE_F32 = 0,
    M40_DTYPE_F16 = 1,
    M40_DTYPE_I8 = 2,
    M40_DTYPE_I32 = 3,
    /* Values below 64 are reserved for plain element types; quantized
    ** weight formats start at 64. */
    M40_DTYPE_COUNT,
    /* Weight-only quantized formats (layouts in m40/quant.h). Not
    ** plain element types: m40_dtype_size() gives 0 for them, and the packed
    ** values live in I8 tensors beside an F16/F32 scale tensor. */
    M40_DTYPE_Q8 = 64, /* int8, symmetric, scale per row or per K-group */
    M40_DTYPE_Q4 = 65  /* int4, two per byte (high nibble = even column) */
} m40_dtype;

/* Bytes per element of a plain dtype; 0 for an invalid one. */
M40_API size_t m40_dtype_size(m40_dtype dt);
/* "f32", "f16", "i8", "i32" or "?" */
M40_API const char *m40_dtype_name(m40_dtype dt);

typedef struct m40_tensor_desc {
    m40_dtype dtype;
    int ndim;                        /* 1..M40_MAX_DIMS (0 = scalar) */
    int64_t shape[M40_MAX_DIMS];     /* outermost first */
    int64_t stride[M40_MAX_DIMS];    /* in elements */
} m40_tensor_desc;

/* Size rule of every tensor: the product of its non-zero extents times the
** element size, and the bytes from its first element to one past its last
** (with strides), are at most M40_MAX_TENSOR_BYTES (2^62). Larger shapes,
** or shapes whose product would wrap int64, get M40_ERR_INVALID_ARG from
** every call that takes a desc or a shape, so no byte count the library
** computes from a checked desc can overflow. */
#define M40_MAX_TENSOR_BYTES ((uint64_t)1 << 62)

/* Fills `d` as a contiguous (row-major) tensor. On an error *d is not
** usable, but keeps dtype, ndim and the given shape (to name in a message).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL d, ndim outside 0..4, negative
** extent, shape NULL with ndim > 0, or over the size rule above),
** M40_ERR_DTYPE. */
M40_API m40_status m40_tensor_desc_make(m40_tensor_desc *d, m40_dtype dtype,
                                        int ndim, const int64_t *shape);

/* Number of elements (product of the shape; 1 for a scalar); -1 for NULL,
** a bad ndim, a negative extent or a product that overflows int64 (only
** possible for a desc no call has checked). */
M40_API int64_t m40_tensor_desc_numel(const m40_tensor_desc *d);
/* 1 if the strides are row-major contiguous for the shape. */
M40_API int m40_tensor_desc_is_contiguous(const m40_tensor_desc *d);

typedef enum m40_location {
    M40_LOC_HOST = 0,    /* malloc'd host memory */
    M40_LOC_DEVICE = 1   /* device memory of the context's GPU */
} m40_location;

typedef struct m40_tensor m40_tensor;

/* Creates a contiguous tensor of `desc`'s dtype and shape (desc's strides
** are ignored) at `loc`. Contents are undefined.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   NULL ctx/desc/out, bad ndim, negative extent or
**                         stride, over the size rule (M40_MAX_TENSOR_BYTES)
**   M40_ERR_DTYPE         invalid dtype
**   M40_ERR_NO_DEVICE     loc is DEVICE on a CPU context
**   M40_ERR_OOM_HOST, M40_ERR_OOM_DEVICE, M40_ERR_CUDA, M40_ERR_DEVICE_LOST */
M40_API m40_status m40_tensor_create(m40_ctx *ctx, const m40_tensor_desc *desc,
                                     m40_location loc, m40_tensor **out);

/* Shorthand for a contiguous tensor of up to 4 dims, on the context's
** natural side (DEVICE on a GPU context, HOST on a CPU context). */
M40_API m40_status m40_tensor_new(m40_ctx *ctx, m40_dtype dtype, int ndim,
                                  const int64_t *shape, m40_tensor **out);

/* Frees a tensor. A view never frees the storage of its base; the base
** must outlive its views. NULL is a no-op; a second free is undefined.
** Valid after m40_ctx_destroy of its context (the context's last child
** frees the context). */
M40_API void m40_tensor_destroy(m40_tensor *t);

/* Wraps memory the caller owns (host pointer for HOST, device pointer for
** DEVICE) without copying; freeing the tensor does not free `data`. desc's
** strides are used as given (non-negative; the size rule above applies to
** the bytes they span), and the caller promises that many bytes at `data`.
** Alignment rule: `data` must be a multiple of the element size (4 for F32
** and I32, 2 for F16, 1 for I8). Misaligned data (tensors inside a
** safetensors file often are) is refused, not copied: copy it into a
** tensor from m40_tensor_create with m40_tensor_upload.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL out, data NULL for a non-empty
** tensor, misaligned data, bad desc, bad loc), M40_ERR_DTYPE,
** M40_ERR_NO_DEVICE, M40_ERR_OOM_HOST. */
M40_API m40_status m40_tensor_wrap(m40_ctx *ctx, const m40_tensor_desc *desc,
                                   m40_location loc, void *data,
                                   m40_tensor **out);

/* A view of `base`: same storage, desc's dtype/shape/strides, starting
** `offset` elements (of desc's dtype) after base's first element. The view
** must lie inside base's storage: offset >= 0, strides >= 0, and every
** element of the view, and its start even when it has no elements, inside
** the storage (checked without overflow for any int64 offset or stride).
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, bad desc, out of bounds),
** M40_ERR_DTYPE (element size differs from base), M40_ERR_OOM_HOST. */
M40_API m40_status m40_tensor_view(m40_ctx *ctx, const m40_tensor *base,
                                   const m40_tensor_desc *desc, int64_t offset,
                                   m40_tensor **out);

M40_API const m40_tensor_desc *m40_tensor_get_desc(const m40_tensor *t);
M40_API m40_location m40_tensor_get_location(const m40_tensor *t);
/* Host or device address of the first element. */
M40_API void *m40_tensor_get_data(const m40_tensor *t);
/* Bytes covered by the tensor (contiguous size). */
M40_API size_t m40_tensor_get_nbytes(const m40_tensor *t);

/* Copies `nbytes` from host memory into a contiguous tensor. nbytes must
** equal m40_tensor_get_nbytes(t). Synchronous with respect to `src`.
** Returns M40_OK, M40_ERR_INVALID_ARG (NULL, size mismatch),
** M40_ERR_UNSUPPORTED (non-contiguous tensor), M40_ERR_CUDA,
** M40_ERR_DEVICE_LOST. */
M40_API m40_status m40_tensor_upload(m40_ctx *ctx, m40_tensor *t,
                                     const void *src, size_t nbytes);

/* Copies a contiguous tensor into host memory (waits for queued work).
** Same statuses as m40_tensor_upload. */
M40_API m40_status m40_tensor_download(m40_ctx *ctx, const m40_tensor *t,
                                       void *dst, size_t nbytes);

/* dst = src for same dtype and shape; either side may be host or device;
** strided tensors are allowed. A host tensor may come from another context
** (this is how data moves between contexts); a device tensor must be ctx's.
** Returns M40_OK, M40_ERR_INVALID_ARG, M40_ERR_SHAPE, M40_ERR_DTYPE,
** M40_ERR_CUDA, M40_ERR_DEVICE_LOST, M40_ERR_OOM_HOST. */
M40_API m40_status m40_tensor_copy(m40_ctx *ctx, m40_tensor *dst,
                                   const m40_tensor *src);

/* CRC-32 (zlib's) of the tensor's contiguous bytes, read back to the host
** when needed. Meant for determinism checks. Statuses as download. */
M40_API m40_status m40_tensor_crc32(m40_ctx *ctx, const m40_tensor *t,
                                    uint32_t *crc);

/* ------------------------------------------------------------------ */
/* Eager ops                                                           */
/*
** Each op runs on the context's side: device tensors on a GPU context,
** host tensors on a CPU context (M40_ERR_LOCATION otherwise). GPU ops are
** queued on the context's stream and return before they finish; errors
** from the kernel itself show up at the next synchronizing call.
**
** Unless an op says otherwise, every op returns
**   M40_OK
**   M40_ERR_INVALID_ARG   a NULL ctx or tensor, or a tensor made on another
**                         context
**   M40_ERR_SHAPE         shapes that do not match the op's rule
**   M40_ERR_DTYPE         a dtype the op does not take
**   M40_ERR_LOCATION      a tensor on the wrong side for the context
**   M40_ERR_UNSUPPORTED   a layout the op does not take (said in the msg)
**   M40_ERR_CUDA, M40_ERR_DEVICE_LOST (GPU contexts)
** Outputs may alias inputs exactly (in place) for elementwise ops.
*/

typedef enum m40_random_dist {
    M40_RANDOM_UNIFORM = 0, /* uniform in [a, b) */
    M40_RANDOM_NORMAL = 1   /* mean a, standard deviation b */
} m40_random_dist;

/* Fills an F32 tensor with a counter-based random sequence: element i (in
** row-major order of the shape) depends only on (seed, i), so CPU and GPU
** give the same values (bit-identical for UNIFORM; NORMAL within a few ulp,
** as the GPU's log/cos differ from libm). F16 tensors get the F32 value
** rounded to nearest even. */
M40_API m40_status m40_fill_random(m40_ctx *ctx, uint64_t seed, m40_random_dist dist,
                                   float a, float b, m40_tensor *t);

/* Elementwise binary ops on F32. `a`, `b` and `out` have the same shape,
** except that `b` may also have fewer dims, matching a's trailing dims
** (broadcast, e.g. a bias of shape [C] added to [N,C]). Any strides. */
M40_API m40_status m40_add(m40_ctx *ctx, const m40_tensor *a,
                           const m40_tensor *b, m40_tensor *out);
M40_API m40_status m40_mul(m40_ctx *ctx, const m40_tensor *a,
                           const m40_tensor *b, m40_tensor *out);

/* out = alpha * x, F32, same shape, any strides. */
M40_API m40_status m40_scale(m40_ctx *ctx, float alpha, const m40_tensor *x,
                             m40_tensor *out);

typedef enum m40_act {
    M40_ACT_RELU = 0, /* max(x, 0) */
    M40_ACT_SILU = 1, /* x * sigmoid(x) */
    M40_ACT_GELU = 2  /* x * Phi(x), the exact (erf) form, as torch's default */
} m40_act;

/* out = act(x), F32, same shape, any strides. */
M40_API m40_status m40_activation(m40_ctx *ctx, m40_act act,
                                  const m40_tensor *x, m40_tensor *out);

/* Softmax over the last dim, F32, contiguous rows (last-dim stride 1; the
** other dims may be strided). Numerically stable (subtracts the row max). */
M40_API m40_status m40_softmax(m40_ctx *ctx, const m40_tensor *x,
                               m40_tensor *out);

/* Converts F32 -> F16 (round to nearest even; overflow -> inf, NaN kept) or
** F16 -> F32 (exact). Same shape, any strides. Same dtype = copy. */
M40_API m40_status m40_convert(m40_ctx *ctx, const m40_tensor *src,
                               m40_tensor *dst);

/* PyTorch Linear: y = x · Wᵀ + bias.
**   x    [..., K]  F32, contiguous  (leading dims flattened to M rows)
**   w    [N, K]    F32, contiguous
**   bias [N]       F32, or NULL
**   y    [..., N]  F32, contiguous, same leading dims as x
** GPU: libm40's own sm_52 FP32 GEMM with the bias fused, or cuBLAS
** (pedantic FP32) with m40_ctx_desc.matmul = M40_MATMUL_CUBLAS or
** M40_MATMUL=cublas in the environment at m40_ctx_create. Shapes with
** little parallelism may split K; the partial sums live in the context's
** workspace, and when it cannot grow K is not split (same result; logged
** at WARN, counted in m40_ctx_stats.workspace_fallbacks, not an error). */
M40_API m40_status m40_matmul(m40_ctx *ctx, const m40_tensor *x,
                              const m40_tensor *w, const m40_tensor *bias,
                              m40_tensor *y);

/* ---- Convolution and pooling (F32; NCHW or NHWC) ---------------------- */

typedef enum m40_layout {
    M40_LAYOUT_NCHW = 0, /* PyTorch's: x [N,C,H,W], conv weights [K,C,R,S] */
    M40_LAYOUT_NHWC = 1  /* channels last: x [N,H,W,C], conv weights [K,R,S,C];
                         ** on the GPU a conv is then one GEMM over all pixels
                         ** (1x1/stride 1: on x itself; else an implicit GEMM
                         ** or, for 3x3/1, Winograd) */
} m40_layout;

typedef struct m40_conv2d_desc {
    size_t struct_size;         /* sizeof(m40_conv2d_desc): m40_conv2d_desc_init sets it */
    int stride_h, stride_w;     /* 1 .. 2^20 */
    int pad_h, pad_w;           /* 0 .. 2^20, zero padding */
    int dilation_h, dilation_w; /* 1 .. 2^20 */
    int relu;                   /* apply ReLU last */
    m40_layout layout;          /* of x, w, residual and y */
} m40_conv2d_desc;

/* Fills a descriptor: stride 1, pad 0, dilation 1, no ReLU, NCHW. */
M40_API void m40_conv2d_desc_init(m40_conv2d_desc *d);

/* 2-D convolution (cross-correlation, as PyTorch) with a fused epilogue:
**   y[n,k,p,q] = act( scale[k] · Σ_{c,r,s} x[n,c,p·sh−ph+r·dh, q·sw−pw+s·dw] · w[k,c,r,s]
**                     + bias[k] + residual[n,k,p,q] )
**   x [N,C,H,W], w [K,C,R,S], y [N,K,P,Q] with P = (H + 2ph − dh(R−1) − 1)/sh + 1
**   (likewise Q); scale [K], bias [K], residual [N,K,P,Q] are each optional
**   (NULL). This is one conv + folded BatchNorm + residual add + ReLU.
**   With layout NHWC the same with x [N,H,W,C], w [K,R,S,C], residual and
**   y [N,P,Q,K]. NHWC on the GPU uses the context's workspace for the
**   stem's channel-padded copy, Winograd's transformed tiles and split-K
**   sums (grown on first need; a graph reserves it when allocated).
** All tensors contiguous F32. Statuses as the other ops, plus
** M40_ERR_INVALID_ARG for a bad descriptor (the message says which field). */
M40_API m40_status m40_conv2d(m40_ctx *ctx, const m40_conv2d_desc *desc,
                              const m40_tensor *x, const m40_tensor *w,
                              const m40_tensor *scale, const m40_tensor *bias,
                              const m40_tensor *residual, m40_tensor *y);

/* ---- Convolution engines: ours or cuDNN, per conv ------------------------
**
** A GPU conv runs libm40's own kernels or, in a libm40
** built with cuDNN (m40_cudnn_version() != 0), cuDNN's: FP32 with FMA math
** only (CUDNN_FMA_MATH: never TF32), NCHW or NHWC, the fused epilogue through
** cudnnConvolutionBiasActivationForward when there is a ReLU (else conv,
** then bias, residual, ReLU as cuDNN passes), the algorithm from cuDNN's
** heuristics (eager) or measured by cudnnFindConvolutionForwardAlgorithmEx
** (graphs), scratch from the context's workspace. Maxwell (the Tesla M40)
** needs cuDNN 8.x or 9.0-9.10: 9.11 and later have no sm_5x code. */
typedef enum m40_conv_engine {
    M40_CONV_ENGINE_DEFAULT = 0, /* inherit: a graph node takes its graph's
                                 ** setting, a graph its context's; a context
                                 ** set to DEFAULT means OURS */
    M40_CONV_ENGINE_OURS = 1,    /* libm40's kernels (the CPU reference on a CPU context) */
    M40_CONV_ENGINE_CUDNN = 2,   /* cuDNN: needs a GPU context and a libm40 built with it */
    M40_CONV_ENGINE_AUTO = 3     /* graphs: each conv timed once with both engines at
                                 ** m40_graph_alloc, the faster kept (m40_graph_get_conv_choice);
                                 ** eager m40_conv2d: OURS. Without cuDNN: OURS, no error */
} m40_conv_engine;

/* "default", "ours", "cudnn", "auto"; "?" for any other value. */
M40_API const char *m40_conv_engine_name(m40_conv_engine e);

/* The cuDNN version this libm40 runs with, as cudnnGetVersion() gives it
** (9.10.2 is 91002; 8.9.7 is 8907), or 0 when it was built without cuDNN
** ("cuDNN: not built in"). */
M40_API int m40_cudnn_version(void);

/* Chooses the engine of the context's convolutions: every eager m40_conv2d
** (AUTO runs OURS there) and the default of graphs allocated on it. CUDNN
** creates the cuDNN handle now, so that a cuDNN that cannot run here is
** reported by this call.
** Returns
**   M40_OK
**   M40_ERR_INVALID_ARG   ctx NULL, or e not an m40_conv_engine value
**   M40_ERR_UNSUPPORTED   CUDNN, and this libm40 has no cuDNN ("cuDNN: not
**                         built in"), or the context is a CPU one, or cuDNN
**                         cannot run on this device (message from cuDNN)
**   M40_ERR_OOM_DEVICE, M40_ERR_CUDA, M40_ERR_DEVICE_LOST
** On an error the context keeps its previous engine. */
M40_API m40_status m40_ctx_set_conv_engine(m40_ctx *ctx, m40_conv_engine e);

/* The context's engine setting (OURS for NULL). */
M40_API m40_conv_engine m40_ctx_get_conv_engine(const m40_ctx *ctx);

typedef enum m40_pool {
    M40_POOL_MAX = 0, /* padding never wins (as -inf) */
    M40_POOL_AVG = 1, /* divides by the window's in-bounds count */
    M40_POOL_GLOBAL_AVG = 2 /* mean over H and W, [N,C,H,W] -> [N,C]:
                            ** m40_global_avgpool (graphs use the enum) */
} m40_pool;

typedef struct m40_pool2d_desc {
    size_t struct_size;         /* sizeof(m40_pool2d_desc): m40_pool2d_desc_init sets it */
    m40_pool kind;              /* MAX or AVG (GLOBAL_AVG: m40_global_avgpool) */
    int kernel_h, kernel_w;     /* window, 1 .. 2^20 */
    int stride_h, stride_w;     /* 1 .. 2^20 */
    int pad_h, pad_w;           /* 0 .. window/2, zero padding */
    m40_layout layout;          /* of x and y */
} m40_pool2d_desc;

/* Fills a descriptor: MAX, 2x2 window, stride 2, pad 0, NCHW. */
M40_API void m40_pool2d_desc_init(m40_pool2d_desc *d);

/* Pooling over [N,C,H,W] -> [N,C,P,Q] (NHWC: [N,H,W,C] -> [N,P,Q,C]),
** window kh×kw, stride, zero padding, P = (H + 2ph − kh)/sh + 1.
** Contiguous F32. M40_ERR_INVALID_ARG for a NULL desc, values outside the
** ranges above and an unknown kind or layout (the message names the field). */
M40_API m40_status m40_pool2d(m40_ctx *ctx, const m40_pool2d_desc *desc,
                              const m40_tensor *x, m40_tensor *y);

/* Mean over H and W: x [N,C,H,W] (NHWC: [N,H,W,C]) -> y [N,C]. Contiguous F32. */
M40_API m40_status m40_global_avgpool(m40_ctx *ctx, m40_layout layout, const m40_tensor *x,
                                      m40_tensor *y);

#ifdef __cplusplus
}
#endif
#endif /* M40_M40_H */
