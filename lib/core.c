/* Status strings, version, context lifecycle and error recording. */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_text[] = {
#define M40__TEXT(name, text) text,
    M40_STATUS_TABLE(M40__TEXT)
#undef M40__TEXT
};

const char *m40_status_str(m40_status s) {
    if ((int)s < 0 || s >= M40_STATUS_COUNT) return "unknown status";
    return status_text[s];
}

const char *m40_version(void) { return M40_VERSION_STRING; }

#define M40__STR2(x) #x
#define M40__STR(x) M40__STR2(x)

const char *m40_build_info(void) {
#ifdef M40_HAVE_CUDA
    return "cuda=" M40_CUDA_VERSION_STRING " archs=" M40_CUDA_ARCHS_STRING
#ifdef M40_HAVE_CUBLAS
           " cublas=yes"
#else
           " cublas=no"
#endif
#ifdef M40_HAVE_CUDNN
           " cudnn=yes";
#else
           " cudnn=no";
#endif
#else
    return "cuda=no";
#endif
}

m40_status m40__err(m40_ctx *ctx, m40_status status, const char *fmt, ...) {
    if (!ctx) return status;
    ctx->last_status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    va_end(ap);
    if (ctx->desc.log && ctx->desc.log_level <= M40_LOG_DEBUG)
        ctx->desc.log(ctx->desc.log_user, M40_LOG_DEBUG, ctx->errmsg);
    return status;
}

void m40__log(m40_ctx *ctx, m40_log_level level, const char *fmt, ...) {
    if (!ctx || !ctx->desc.log || level < ctx->desc.log_level) return;
    char buf[M40__ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ctx->desc.log(ctx->desc.log_user, level, buf);
}

void m40_ctx_desc_init(m40_ctx_desc *desc) {
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->struct_size = sizeof *desc;
    desc->device = 0;
    desc->log_level = M40_LOG_INFO;
    desc->matmul = M40_MATMUL_OURS;
}

/* The size of the first m40_ctx_desc (0.1.0): fields after it are optional. */
#define M40__CTX_DESC_V1 offsetof(m40_ctx_desc, matmul)

/* The matmul engine: the descriptor's, unless M40_MATMUL overrides it (for
** benchmarks; read here only, so no call after creation reads the environment). */
static void pick_matmul(m40_ctx *ctx) {
    const char *env = getenv("M40_MATMUL");
    m40_matmul_engine e = ctx->desc.matmul;
    if (env && *env) {
        if (strcmp(env, "cublas") == 0) e = M40_MATMUL_CUBLAS;
        else if (strcmp(env, "ours") == 0) e = M40_MATMUL_OURS;
        else
            m40__log(ctx, M40_LOG_WARN, "M40_MATMUL=%s ignored (use cublas or ours)", env);
    }
    ctx->desc.matmul = e;
    ctx->matmul_cublas = e == M40_MATMUL_CUBLAS;
}

m40_status m40_ctx_create(const m40_ctx_desc *desc, m40_ctx **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    m40_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return M40_ERR_OOM_HOST;
    *out = ctx;
    if (!desc)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_ctx_create: desc is NULL");
    if (desc->struct_size < M40__CTX_DESC_V1 || desc->struct_size > sizeof(m40_ctx_desc))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_ctx_create: desc->struct_size is %zu, expected %zu..%zu "
                        "(call m40_ctx_desc_init first)",
                        desc->struct_size, (size_t)M40__CTX_DESC_V1, sizeof(m40_ctx_desc));
    /* an older, smaller descriptor keeps the defaults of the fields it lacks */
    m40_ctx_desc_init(&ctx->desc);
    memcpy(&ctx->desc, desc, desc->struct_size);
    ctx->desc.struct_size = sizeof(m40_ctx_desc);
    if ((int)ctx->desc.matmul != M40_MATMUL_OURS && (int)ctx->desc.matmul != M40_MATMUL_CUBLAS)
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_ctx_create: desc->matmul is %d (M40_MATMUL_OURS or _CUBLAS)",
                        (int)ctx->desc.matmul);
    pick_matmul(ctx);
    if (ctx->desc.device == M40_DEVICE_CPU) {
        ctx->is_gpu = false;
        snprintf(ctx->device_name, sizeof ctx->device_name, "CPU reference");
        ctx->usable = true;
        return M40_OK;
    }
    if (ctx->desc.device < 0)
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "m40_ctx_create: device ordinal %d is invalid "
                        "(use >= 0, or M40_DEVICE_CPU for the CPU reference)",
                        ctx->desc.device);
#ifdef M40_HAVE_CUDA
    ctx->is_gpu = true;
    m40_status st = m40__cuda_ctx_init(ctx);
    if (st != M40_OK) return st;
    ctx->usable = true;
    m40__log(ctx, M40_LOG_INFO, "libm40 %s: device %d '%s' (cc %d.%d, %d SMs)",
             M40_VERSION_STRING, ctx->desc.device, ctx->device_name, ctx->cc_major,
             ctx->cc_minor, ctx->sm_count);
    return M40_OK;
#else
    return m40__err(ctx, M40_ERR_NO_DEVICE,
                    "m40_ctx_create: this libm40 was built without CUDA "
                    "(M40_CUDA=OFF); use device = M40_DEVICE_CPU");
#endif
}

/* ---- lifetime ------------------------------------------------------------ */

/* Frees everything: the upper layers' state first (the cuDNN handle is
** bound to the stream), then the CUDA side, then the struct. */
static void ctx_free(m40_ctx *ctx) {
    m40__ctx_enter(ctx);
    for (int i = ctx->nfini - 1; i >= 0; i--) ctx->fini[i](ctx);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) m40__cuda_ctx_fini(ctx);
#endif
    free(ctx);
}

void m40_ctx_destroy(m40_ctx *ctx) {
    if (!ctx || ctx->closing) return;
    ctx->closing = true;
    if (ctx->live_tensors > 0 || ctx->live_graphs > 0) {
        /* children live on: keep everything they need, but wait for queued
        ** work now, as a destroy promises (the caller may free host memory
        ** that queued copies still read). */
#ifdef M40_HAVE_CUDA
        if (ctx->is_gpu && ctx->stream && !ctx->lost) {
            m40__ctx_enter(ctx);
            (void)m40__cuda_sync(ctx);
        }
#endif
        m40__log(ctx, M40_LOG_DEBUG,
                 "m40_ctx_destroy: %lld tensors and %lld graphs still alive; the context "
                 "is freed with the last of them",
                 (long long)ctx->live_tensors, (long long)ctx->live_graphs);
        return;
    }
    ctx_free(ctx);
}

void m40__ctx_hold(m40_ctx *ctx, int kind) {
    if (kind == M40__CHILD_GRAPH) ctx->live_graphs++;
    else ctx->live_tensors++;
}

void m40__ctx_release(m40_ctx *ctx, int kind) {
    if (!ctx) return;
    if (kind == M40__CHILD_GRAPH) ctx->live_graphs--;
    else ctx->live_tensors--;
    if (ctx->closing && ctx->live_tensors <= 0 && ctx->live_graphs <= 0) ctx_free(ctx);
}

void m40__ctx_on_fini(m40_ctx *ctx, void (*fn)(m40_ctx *ctx)) {
    for (int i = 0; i < ctx->nfini; i++)
        if (ctx->fini[i] == fn) return;
    /* a fixed table: the hooks are the library's own, not the caller's */
    if (ctx->nfini < (int)(sizeof ctx->fini / sizeof ctx->fini[0])) ctx->fini[ctx->nfini++] = fn;
}

void m40__ctx_enter(m40_ctx *ctx) {
#ifdef M40_HAVE_CUDA
    if (ctx && ctx->is_gpu && ctx->stream) (void)m40__cuda_enter(ctx);
#else
    (void)ctx;
#endif
}

const char *m40_errmsg(const m40_ctx *ctx) {
    if (!ctx) return "no context";
    return ctx->errmsg;
}

m40_status m40_errcode(const m40_ctx *ctx) {
    return ctx ? ctx->last_status : M40_ERR_INVALID_ARG;
}

m40_status m40__ctx_check(m40_ctx *ctx) {
    if (!ctx) return M40_ERR_INVALID_ARG;
    if (ctx->closing)
        return m40__err(ctx, M40_ERR_STATE,
                        "the context was destroyed (m40_ctx_destroy); only its tensors' "
                        "and graphs' destroy calls remain valid");
    if (!ctx->usable)
        return m40__err(ctx, M40_ERR_STATE,
                        "context creation failed; destroy it and create another");
    if (ctx->lost)
        return m40__err(ctx, M40_ERR_DEVICE_LOST,
                        "the CUDA context hit a sticky error earlier; destroy "
                        "this context (and restart the process to use the GPU)");
    /* a call that succeeds leaves no error behind */
    ctx->last_status = M40_OK;
    ctx->errmsg[0] = '\0';
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) return m40__cuda_enter(ctx);
#endif
    return M40_OK;
}

m40_status m40_ctx_get_stats(m40_ctx *ctx, m40_ctx_stats *stats) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    /* the first version of the struct ends after live_graphs */
    if (!stats || stats->struct_size < offsetof(m40_ctx_stats, live_graphs) + sizeof(int64_t))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_ctx_get_stats: %s", !stats ? "stats is NULL"
                        : "stats->struct_size is too small (set it to sizeof(m40_ctx_stats))");
    m40_ctx_stats s;
    memset(&s, 0, sizeof s);
    s.workspace_fallbacks = ctx->workspace_fallbacks;
    s.live_tensors = ctx->live_tensors;
    s.live_graphs = ctx->live_graphs;
    size_t n = stats->struct_size < sizeof s ? stats->struct_size : sizeof s;
    s.struct_size = n;
    memcpy(stats, &s, n);
    return M40_OK;
}

m40_status m40_ctx_get_info(m40_ctx *ctx, m40_device_info *info) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!info) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_ctx_get_info: info is NULL");
    memset(info, 0, sizeof *info);
    info->device = ctx->is_gpu ? ctx->desc.device : M40_DEVICE_CPU;
    snprintf(info->name, sizeof info->name, "%s", ctx->device_name);
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) return m40__cuda_info(ctx, info);
#endif
    return M40_OK;
}

m40_status m40_ctx_sync(m40_ctx *ctx) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) return m40__cuda_sync(ctx);
#endif
    return M40_OK;
}

void *m40_ctx_get_stream(m40_ctx *ctx) { return ctx ? ctx->stream : NULL; }
