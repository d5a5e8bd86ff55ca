/* Status strings, version, context lifecycle and error recording. */
#include "internal.h"

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
}

m40_status m40_ctx_create(const m40_ctx_desc *desc, m40_ctx **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    m40_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return M40_ERR_OOM_HOST;
    *out = ctx;
    if (!desc)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_ctx_create: desc is NULL");
    if (desc->struct_size < sizeof(m40_ctx_desc))
        return m40__err(ctx, M40_ERR_INVALID_ARG,
                        "m40_ctx_create: desc->struct_size is %zu, expected %zu "
                        "(call m40_ctx_desc_init first)",
                        desc->struct_size, sizeof(m40_ctx_desc));
    ctx->desc = *desc;
    if (desc->device == M40_DEVICE_CPU) {
        ctx->is_gpu = false;
        snprintf(ctx->device_name, sizeof ctx->device_name, "CPU reference");
        ctx->usable = true;
        return M40_OK;
    }
    if (desc->device < 0)
        return m40__err(ctx, M40_ERR_NO_DEVICE,
                        "m40_ctx_create: device ordinal %d is invalid "
                        "(use >= 0, or M40_DEVICE_CPU for the CPU reference)",
                        desc->device);
#ifdef M40_HAVE_CUDA
    ctx->is_gpu = true;
    m40_status st = m40__cuda_ctx_init(ctx);
    if (st != M40_OK) return st;
    ctx->usable = true;
    m40__log(ctx, M40_LOG_INFO, "libm40 %s: device %d '%s' (cc %d.%d, %d SMs)",
             M40_VERSION_STRING, desc->device, ctx->device_name, ctx->cc_major,
             ctx->cc_minor, ctx->sm_count);
    return M40_OK;
#else
    return m40__err(ctx, M40_ERR_NO_DEVICE,
                    "m40_ctx_create: this libm40 was built without CUDA "
                    "(M40_CUDA=OFF); use device = M40_DEVICE_CPU");
#endif
}

void m40_ctx_destroy(m40_ctx *ctx) {
    if (!ctx) return;
#ifdef M40_HAVE_CUDA
    if (ctx->is_gpu) m40__cuda_ctx_fini(ctx);
#endif
    free(ctx);
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
    if (!ctx->usable)
        return m40__err(ctx, M40_ERR_STATE,
                        "context creation failed; destroy it and create another");
    if (ctx->lost)
        return m40__err(ctx, M40_ERR_DEVICE_LOST,
                        "the CUDA context hit a sticky error earlier; destroy "
                        "this context (and restart the process to use the GPU)");
    return M40_OK;
}

m40_status m40_ctx_info(m40_ctx *ctx, m40_device_info *info) {
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if (!info) return m40__err(ctx, M40_ERR_INVALID_ARG, "m40_ctx_info: info is NULL");
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

void *m40_ctx_stream(m40_ctx *ctx) { return ctx ? ctx->stream : NULL; }
