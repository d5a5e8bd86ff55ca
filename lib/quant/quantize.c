/* Weight-only quantization formats: descriptors, the quantizer and the
** dequantizer (the formulas are in include/m40/quant.h; tests/quant/
** make_golden.py states the same formulas in numpy). */
#include "quant_internal.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_q(m40_dtype t) { return t == M40_DTYPE_Q8 || t == M40_DTYPE_Q4; }

const char *m40_quant_format_name(const m40_quant_format *f) {
    if (!f) return "?";
    if (f->wtype == M40_DTYPE_F16) return "f16";
    if (!is_q(f->wtype) || (f->scale_dtype != M40_DTYPE_F16 && f->scale_dtype != M40_DTYPE_F32))
        return "?";
    static const char *const names[2][4][2] = {
        {{"q8/row/f16", "q8/row/f32"}, {"q8/g32/f16", "q8/g32/f32"},
         {"q8/g64/f16", "q8/g64/f32"}, {"q8/g128/f16", "q8/g128/f32"}},
        {{"q4/row/f16", "q4/row/f32"}, {"q4/g32/f16", "q4/g32/f32"},
         {"q4/g64/f16", "q4/g64/f32"}, {"q4/g128/f16", "q4/g128/f32"}}};
    int g = f->group == 0 ? 0 : f->group == 32 ? 1 : f->group == 64 ? 2 : f->group == 128 ? 3 : -1;
    if (g < 0) return "?";
    return names[f->wtype == M40_DTYPE_Q4][g][f->scale_dtype == M40_DTYPE_F32];
}

m40_status m40__quant_check_format(m40_ctx *ctx, const char *fn, const m40_quant_format *f) {
#define QERR(st, ...) (ctx ? m40__err(ctx, st, __VA_ARGS__) : (st))
    if (!f) return QERR(M40_ERR_INVALID_ARG, "%s: format is NULL", fn);
    if (f->wtype == M40_DTYPE_F16) return M40_OK;
    if (!is_q(f->wtype))
        return QERR(M40_ERR_DTYPE, "%s: weight type %d is not M40_DTYPE_Q8, _Q4 or _F16", fn,
                    (int)f->wtype);
    if (f->scale_dtype != M40_DTYPE_F16 && f->scale_dtype != M40_DTYPE_F32)
        return QERR(M40_ERR_DTYPE, "%s: scale dtype %s; f16 or f32 only", fn,
                    m40_dtype_name(f->scale_dtype));
    if (f->group != 0 && f->group != 32 && f->group != 64 && f->group != 128)
        return QERR(M40_ERR_UNSUPPORTED, "%s: group %d; 0 (per row), 32, 64 or 128 only", fn,
                    f->group);
    return M40_OK;
#undef QERR
}

/* k >= 0; written so that k near INT64_MAX cannot wrap */
int64_t m40__quant_groups(const m40_quant_format *f, int64_t k) {
    return f->group ? k / f->group + (k % f->group != 0) : 1;
}

m40_status m40_quant_descs(const m40_quant_format *f, int64_t n, int64_t k,
                           m40_tensor_desc *data_desc, m40_tensor_desc *scale_desc) {
    m40_status st = m40__quant_check_format(NULL, "", f);
    if (st != M40_OK) return st;
    if (n < 0 || k < 0) return M40_ERR_INVALID_ARG;
    /* made even when the caller wants neither, so both sizes are checked
    ** (each within M40_MAX_TENSOR_BYTES, else INVALID_ARG) */
    m40_tensor_desc dd, sd;
    int64_t dshape[2] = {n, f->wtype == M40_DTYPE_Q4 ? k / 2 + k % 2 : k};
    st = m40_tensor_desc_make(&dd, f->wtype == M40_DTYPE_F16 ? M40_DTYPE_F16 : M40_DTYPE_I8, 2,
                              dshape);
    if (st != M40_OK) return st;
    if (f->wtype == M40_DTYPE_F16) {
        memset(&sd, 0, sizeof sd);
        sd.dtype = M40_DTYPE_F16;
    } else if (f->group == 0) {
        st = m40_tensor_desc_make(&sd, f->scale_dtype, 1, &n);
    } else {
        int64_t shape[2] = {n, m40__quant_groups(f, k)};
        st = m40_tensor_desc_make(&sd, f->scale_dtype, 2, shape);
    }
    if (st != M40_OK) return st;
    /* Q4 packs two per byte, but kernels and the dequantizer index n*k
    ** elements and dequantizing gives n*k floats: keep that within the rule */
    if (n && k > (int64_t)(M40_MAX_TENSOR_BYTES / 4) / n) return M40_ERR_INVALID_ARG;
    if (data_desc) *data_desc = dd;
    if (scale_desc) *scale_desc = sd;
    return M40_OK;
}

size_t m40_quant_nbytes(const m40_quant_format *f, int64_t n, int64_t k) {
    m40_tensor_desc d, s;
    if (m40_quant_descs(f, n, k, &d, &s) != M40_OK) return 0;
    /* each part is <= M40_MAX_TENSOR_BYTES (2^62), so the sum cannot wrap
    ** a uint64; on a 32-bit size_t a total that does not fit reads as 0 */
    uint64_t b = (uint64_t)m40_tensor_desc_numel(&d) * m40_dtype_size(d.dtype);
    if (f->wtype != M40_DTYPE_F16) b += (uint64_t)m40_tensor_desc_numel(&s) * m40_dtype_size(s.dtype);
    return b > SIZE_MAX ? 0 : (size_t)b;
}

/* t must have exactly desc's dtype and shape and be contiguous. */
static m40_status check_like(m40_ctx *ctx, const char *fn, const char *what,
                             const m40_tensor *t, const m40_tensor_desc *want) {
    char s1[96], s2[96];
    if (!t) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
    if (t->desc.dtype != want->dtype)
        return m40__err(ctx, M40_ERR_DTYPE, "%s: %s is %s, the format needs %s", fn, what,
                        m40_dtype_name(t->desc.dtype), m40_dtype_name(want->dtype));
    if (!m40__same_shape(&t->desc, want))
        return m40__err(ctx, M40_ERR_SHAPE, "%s: %s is %s, the format needs %s", fn, what,
                        m40__shape_str(&t->desc, s1, sizeof s1), m40__shape_str(want, s2, sizeof s2));
    if (!m40_tensor_desc_is_contiguous(&t->desc))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: %s must be contiguous", fn, what);
    return M40_OK;
}

m40_status m40__quant_check_qweight(m40_ctx *ctx, const char *fn, const m40_qweight *qw) {
    if (!qw) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: weight is NULL", fn);
    m40_status st = m40__quant_check_format(ctx, fn, &qw->fmt);
    if (st != M40_OK) return st;
    if (qw->n < 0 || qw->k < 0)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: weight shape [%lld, %lld] is negative", fn,
                        (long long)qw->n, (long long)qw->k);
    m40_tensor_desc dd, sd;
    if (m40_quant_descs(&qw->fmt, qw->n, qw->k, &dd, &sd) != M40_OK)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: weight shape [%lld, %lld] is larger "
                        "than 2^62 bytes (M40_MAX_TENSOR_BYTES)", fn, (long long)qw->n,
                        (long long)qw->k);
    if ((st = check_like(ctx, fn, "weight data", qw->data, &dd)) != M40_OK) return st;
    if (qw->fmt.wtype != M40_DTYPE_F16 &&
        (st = check_like(ctx, fn, "weight scale", qw->scale, &sd)) != M40_OK)
        return st;
    return M40_OK;
}

static m40_status need_host(m40_ctx *ctx, const char *fn, const char *what, const m40_tensor *t) {
    if (t && t->loc != M40_LOC_HOST)
        return m40__err(ctx, M40_ERR_LOCATION, "%s: %s must be in host memory", fn, what);
    return M40_OK;
}

/* Round half to even in the default floating-point environment. */
static float rne(float v) { return nearbyintf(v); }

m40_status m40_quantize(m40_ctx *ctx, const m40_quant_format *f, const m40_tensor *w,
                        m40_tensor *data, m40_tensor *scale) {
    static const char fn[] = "m40_quantize";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if ((st = m40__quant_check_format(ctx, fn, f)) != M40_OK) return st;
    if (!w) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w is NULL", fn);
    if (!data) return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: data is NULL", fn);
    if (f->wtype != M40_DTYPE_F16 && !scale)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: scale is NULL (needed for %s)", fn,
                        m40_quant_format_name(f));
    if ((st = need_host(ctx, fn, "w", w)) != M40_OK ||
        (st = need_host(ctx, fn, "data", data)) != M40_OK ||
        (f->wtype != M40_DTYPE_F16 && (st = need_host(ctx, fn, "scale", scale)) != M40_OK))
        return st;
    if (w->desc.dtype != M40_DTYPE_F32 && w->desc.dtype != M40_DTYPE_F16)
        return m40__err(ctx, M40_ERR_DTYPE, "%s: w is %s; f32 or f16 only", fn,
                        m40_dtype_name(w->desc.dtype));
    if (w->desc.ndim != 2) {
        char s[96];
        return m40__err(ctx, M40_ERR_SHAPE, "%s: w must be 2-D [N, K], got %s", fn,
                        m40__shape_str(&w->desc, s, sizeof s));
    }
    if (!m40_tensor_desc_is_contiguous(&w->desc))
        return m40__err(ctx, M40_ERR_UNSUPPORTED, "%s: w must be contiguous", fn);
    const int64_t N = w->desc.shape[0], K = w->desc.shape[1];
    m40_tensor_desc dd, sd;
    if (m40_quant_descs(f, N, K, &dd, &sd) != M40_OK) /* w's own size was checked */
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w [%lld, %lld] is too large", fn,
                        (long long)N, (long long)K);
    if ((st = check_like(ctx, fn, "data", data, &dd)) != M40_OK) return st;
    if (f->wtype != M40_DTYPE_F16 && (st = check_like(ctx, fn, "scale", scale, &sd)) != M40_OK)
        return st;

    const bool w16 = w->desc.dtype == M40_DTYPE_F16;
    const float *wf = w->data;
    const uint16_t *wh = w->data;
#define WAT(n, k) (w16 ? m40__f16_to_f32(wh[(n) * K + (k)]) : wf[(n) * K + (k)])
    /* non-finite weights have no quantized value: refuse them up front */
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            if (!isfinite(WAT(n, k)))
                return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: w[%lld, %lld] is not finite", fn,
                                (long long)n, (long long)k);

    if (f->wtype == M40_DTYPE_F16) {
        uint16_t *o = data->data;
        for (int64_t i = 0; i < N * K; i++)
            o[i] = w16 ? wh[i] : m40__f32_to_f16(wf[i]);
        return M40_OK;
    }

    const float qmax = f->wtype == M40_DTYPE_Q8 ? 127.0f : 7.0f;
    const int64_t G = f->group ? f->group : K, ng = m40__quant_groups(f, K);
    const bool s16 = f->scale_dtype == M40_DTYPE_F16;
    const int64_t rowbytes = f->wtype == M40_DTYPE_Q4 ? K / 2 + K % 2 : K;
    unsigned char *qd = data->data;
    memset(qd, 0, (size_t)(N * rowbytes));
    for (int64_t n = 0; n < N; n++) {
        for (int64_t g = 0; g < ng; g++) {
            int64_t k0 = g * G, k1 = k0 + G < K ? k0 + G : K;
            float amax = 0.0f;
            for (int64_t k = k0; k < k1; k++) amax = fmaxf(amax, fabsf(WAT(n, k)));
            float s = amax / qmax;
            if (s16) {
                uint16_t h = m40__f32_to_f16(s);
                if ((h & 0x7C00u) == 0x7C00u)
                    return m40__err(ctx, M40_ERR_UNSUPPORTED,
                                    "%s: row %lld: scale %g overflows f16 (max |w| %g); use "
                                    "f32 scales", fn, (long long)n, (double)s, (double)amax);
                ((uint16_t *)scale->data)[n * ng + g] = h;
                s = m40__f16_to_f32(h); /* quantize against the stored scale */
            } else {
                ((float *)scale->data)[n * ng + g] = s;
            }
            for (int64_t k = k0; k < k1; k++) {
                float q = s > 0.0f ? rne(WAT(n, k) / s) : 0.0f;
                q = fminf(fmaxf(q, -qmax), qmax);
                int qi = (int)q;
                if (f->wtype == M40_DTYPE_Q8) {
                    qd[n * rowbytes + k] = (unsigned char)(signed char)qi;
                } else {
                    unsigned nib = (unsigned)qi & 0xFu;
                    unsigned char *b = &qd[n * rowbytes + k / 2];
                    *b = (unsigned char)(*b | ((k & 1) ? nib : nib << 4));
                }
            }
        }
    }
#undef WAT
    return M40_OK;
}

void m40__quant_dequant_row(const m40_quant_format *f, int64_t k, const void *data,
                            const void *scale, int64_t n, float *out) {
    if (k == 0) return; /* K = 0: no storage behind data (y is the bias alone) */
    if (f->wtype == M40_DTYPE_F16) {
        const uint16_t *h = (const uint16_t *)data + n * k;
        for (int64_t i = 0; i < k; i++) out[i] = m40__f16_to_f32(h[i]);
        return;
    }
    const int64_t ng = m40__quant_groups(f, k);
    const int64_t G = f->group ? f->group : (k ? k : 1);
    const bool s16 = f->scale_dtype == M40_DTYPE_F16;
    const int64_t rowbytes = f->wtype == M40_DTYPE_Q4 ? k / 2 + k % 2 : k;
    const unsigned char *q = (const unsigned char *)data + n * rowbytes;
    for (int64_t i = 0; i < k; i++) {
        int64_t si = n * ng + i / G;
        float s = s16 ? m40__f16_to_f32(((const uint16_t *)scale)[si]) : ((const float *)scale)[si];
        int v;
        if (f->wtype == M40_DTYPE_Q8) {
            v = (signed char)q[i];
        } else {
            unsigned nib = (i & 1) ? (q[i / 2] & 0xFu) : (q[i / 2] >> 4);
            v = (int)nib - (int)((nib & 8u) << 1); /* two's complement nibble */
        }
        out[i] = (float)v * s;
    }
}

m40_status m40_dequantize(m40_ctx *ctx, const m40_qweight *qw, m40_tensor *out) {
    static const char fn[] = "m40_dequantize";
    m40_status st = m40__ctx_check(ctx);
    if (st != M40_OK) return st;
    if ((st = m40__quant_check_qweight(ctx, fn, qw)) != M40_OK) return st;
    if ((st = need_host(ctx, fn, "weight data", qw->data)) != M40_OK ||
        (st = need_host(ctx, fn, "weight scale", qw->scale)) != M40_OK)
        return st;
    int64_t shape[2] = {qw->n, qw->k};
    m40_tensor_desc od;
    if (m40_tensor_desc_make(&od, M40_DTYPE_F32, 2, shape) != M40_OK)
        return m40__err(ctx, M40_ERR_INVALID_ARG, "%s: the f32 output [%lld, %lld] would be "
                        "larger than 2^62 bytes", fn, (long long)qw->n, (long long)qw->k);
    if ((st = check_like(ctx, fn, "out", out, &od)) != M40_OK) return st;
    if ((st = need_host(ctx, fn, "out", out)) != M40_OK) return st;
    for (int64_t n = 0; n < qw->n; n++)
        m40__quant_dequant_row(&qw->fmt, qw->k, qw->data->data,
                               qw->scale ? qw->scale->data : NULL, n,
                               (float *)out->data + n * qw->k);
    return M40_OK;
}
