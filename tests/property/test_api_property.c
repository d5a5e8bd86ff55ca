/* API property test (issue 15): seeded random shapes, strides, offsets,
** dtypes and op parameters -- values near INT64_MAX/INT64_MIN, 0 and
** negatives among them -- through the tensor API, transfers, every eager op,
** the quantized linear and the graph/planner API on a CPU context.
**
** The property: every call either succeeds with in-bounds memory (the
** ASan+UBSan build of scripts/test.sh proves that part: any stray access or
** signed overflow aborts the run) or returns a status together with a fresh,
** non-empty message on the context. The tensor calls also have an oracle
** here (exact 128-bit arithmetic): desc_make/new/create/view/wrap must
** accept exactly the inputs the size and bounds rules of m40.h allow.
**
**   test_api_property [iterations [seed]]      (default 10000, seed 15)
**   test_api_property --iter N [seed]          replays iteration N alone
**
** Each iteration seeds its own generator from (seed, N), so a failure line
** "iter N" is a reproducer. Hostile int parameters also go to conv/pool
** (eager and graph): the rules in lib/ops/ bound them (M40_PROPERTY_ALL=0
** leaves them out, to narrow a failure down). */
#include "check.h"
#include "m40/graph.h"
#include "m40/quant.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 i128;
#define CAP ((i128)1 << 62)

static m40_ctx *C;
static bool all_params;  /* M40_PROPERTY_ALL */
static long long iter;   /* current iteration, for messages */
static int skipped_big;  /* legal shapes too large to allocate here */
static long long ncalls, nok; /* calls judged, and how many succeeded */
static int nruns;             /* random graphs allocated and run */

/* ---- generator --------------------------------------------------------------- */

static uint64_t rs;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t range(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static bool chance(int pct) { return (int)(rnd() % 100) < pct; }

/* Values that break careless size arithmetic: products of 2-4 of them
** cross 2^62/2^63, sums wrap, negation overflows. */
static int64_t hostile_i64(void) {
    static const int64_t special[] = {
        0, 1, 2, 3, -1, -2, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1,
        INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN, (int64_t)1 << 32, (int64_t)1 << 40,
        (int64_t)1 << 61, (int64_t)1 << 62, ((int64_t)1 << 62) + 1, ((int64_t)1 << 62) / 4,
        ((int64_t)1 << 62) / 4 + 1, ((int64_t)1 << 60) - 1, 3037000500LL /* ~2^31.5 */,
        2097152 /* 2^21: cubed 2^63 */, 55109 /* ^4 ~ 2^63 */, 65536, -((int64_t)1 << 62),
        INT64_MAX / 2 + 1, INT64_MAX / 4, INT64_MAX / 3};
    switch (rnd() % 4) {
    case 0:
    case 1: return special[rnd() % (sizeof special / sizeof special[0])];
    case 2: return range(0, 8);
    default: return (int64_t)(rnd() >> (rnd() % 64));
    }
}
static int hostile_int(void) {
    static const int special[] = {0, 1, 2, 3, -1, -2, INT_MAX, INT_MIN, INT_MAX - 1,
                                  INT_MAX / 2, INT_MAX / 2 + 1, 1 << 30, 65536, 46341};
    if (chance(50)) return special[rnd() % (sizeof special / sizeof special[0])];
    return chance(50) ? (int)range(0, 6) : (int)(uint32_t)rnd();
}
/* Mostly small and valid, sometimes hostile. */
static int64_t dim(int hostile_pct) { return chance(hostile_pct) ? hostile_i64() : range(0, 5); }
static m40_dtype any_dtype(void) {
    static const int d[] = {M40_DTYPE_F32, M40_DTYPE_F32, M40_DTYPE_F16, M40_DTYPE_I8,
                            M40_DTYPE_I32, M40_DTYPE_COUNT, M40_DTYPE_Q8, -1, 1000};
    return (m40_dtype)d[rnd() % (chance(85) ? 5 : sizeof d / sizeof d[0])];
}
static int any_ndim(void) { return chance(95) ? (int)range(0, 4) : (int)(chance(50) ? -1 : 5); }

/* ---- the property ------------------------------------------------------------- */

static void fail(const char *what, int line, const char *fmt, long long a, long long b) {
    m40t_failures++;
    fprintf(stderr, "iter %lld, line %d, %s: ", iter, line, what);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (message: %s)\n", m40_errmsg(C));
}

/* Every failing call must leave a fresh message. prime() records a known
** one first so a stale message cannot pass for a new one. */
static char primed[512];
static void prime(void) {
    m40_tensor_view(C, NULL, NULL, 0, NULL); /* "out is NULL": no call below makes it */
    snprintf(primed, sizeof primed, "%s", m40_errmsg(C));
}
static m40_status judge(m40_status st, const char *what, int line) {
    m40t_checks++;
    ncalls++;
    if (st == M40_OK) return nok++, st;
    if ((int)st < 0 || st >= M40_STATUS_COUNT)
        fail(what, line, "returned %lld, not an m40_status%.0lld", (long long)st, 0);
    else if (!m40_errmsg(C)[0] || strcmp(m40_errmsg(C), primed) == 0)
        fail(what, line, "returned status %lld without a message of its own%.0lld", (long long)st, 0);
    else if (m40_errcode(C) != st)
        fail(what, line, "returned %lld but m40_errcode says %lld", (long long)st,
             (long long)m40_errcode(C));
    return st;
}
#define CALL(call) (prime(), judge((call), #call, __LINE__))
/* A call with an oracle: the status must be exactly `want`. */
#define EXPECT(call, want)                                                                 \
    do {                                                                                   \
        m40_status w_ = (want), g_ = CALL(call);                                           \
        if (g_ != w_) fail(#call, __LINE__, "returned %lld, the rules say %lld", (long long)g_, \
                           (long long)w_);                                                 \
    } while (0)

/* ---- oracle: the size and bounds rules of m40.h, in 128-bit arithmetic -------- */

static size_t esz(m40_dtype dt) {
    return dt == M40_DTYPE_F32 || dt == M40_DTYPE_I32 ? 4 : dt == M40_DTYPE_F16 ? 2 : dt == M40_DTYPE_I8 ? 1 : 0;
}
static m40_status rule_shape(m40_dtype dt, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > M40_MAX_DIMS) return M40_ERR_INVALID_ARG;
    if (!esz(dt)) return M40_ERR_DTYPE;
    i128 p = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return M40_ERR_INVALID_ARG;
    for (int i = 0; i < ndim; i++)
        if (shape[i] > 0 && (p *= shape[i]) > CAP) return M40_ERR_INVALID_ARG;
    return p * (i128)esz(dt) > CAP ? M40_ERR_INVALID_ARG : M40_OK;
}
static i128 numel(const m40_tensor_desc *d) {
    i128 n = 1;
    for (int i = 0; i < d->ndim; i++) n *= d->shape[i]; /* checked shapes: <= 2^62 */
    return n;
}
/* Bytes from the first element to one past the last; -1 over the cap. */
static i128 span(const m40_tensor_desc *d) {
    if (numel(d) == 0) return 0;
    i128 last = 0;
    for (int i = 0; i < d->ndim; i++) {
        i128 t = (i128)(d->shape[i] - 1) * d->stride[i];
        if (t > CAP) return -1;
        last += t;
    }
    i128 b = (last + 1) * (i128)esz(d->dtype);
    return b > CAP ? -1 : b;
}
static m40_status rule_desc(const m40_tensor_desc *d) {
    m40_status st = rule_shape(d->dtype, d->ndim, d->shape);
    if (st != M40_OK) return st;
    for (int i = 0; i < d->ndim; i++)
        if (d->stride[i] < 0) return M40_ERR_INVALID_ARG;
    return span(d) < 0 ? M40_ERR_INVALID_ARG : M40_OK;
}

/* A random desc: shapes and strides mostly small, some hostile. */
static void random_desc(m40_tensor_desc *d, int hostile_pct) {
    memset(d, 0, sizeof *d);
    d->dtype = any_dtype();
    d->ndim = any_ndim();
    int nd = d->ndim < 0 ? 0 : d->ndim > M40_MAX_DIMS ? M40_MAX_DIMS : d->ndim;
    for (int i = 0; i < nd; i++) {
        d->shape[i] = dim(hostile_pct);
        d->stride[i] = chance(hostile_pct) ? hostile_i64() : range(0, 12);
    }
}

/* ---- tensors ------------------------------------------------------------------ */

/* Reads and writes every element of t through a strided copy (ASan checks). */
static void touch(m40_tensor *t) {
    const m40_tensor_desc *d = m40_tensor_get_desc(t);
    if (numel(d) > 4096) return;
    m40_tensor *c = NULL;
    if (CALL(m40_tensor_create(C, d, M40_LOC_HOST, &c)) != M40_OK) return;
    EXPECT(m40_tensor_copy(C, c, t), M40_OK);
    EXPECT(m40_tensor_copy(C, t, c), M40_OK);
    m40_tensor_destroy(c);
}

static void prop_desc_make(void) {
    int64_t shape[M40_MAX_DIMS];
    int ndim = any_ndim();
    m40_dtype dt = any_dtype();
    for (int i = 0; i < M40_MAX_DIMS; i++) shape[i] = dim(60);
    m40_tensor_desc d;
    m40_status want = rule_shape(dt, ndim, shape), got = m40_tensor_desc_make(&d, dt, ndim, shape);
    m40t_checks++;
    if (got != want) fail("m40_tensor_desc_make", __LINE__, "returned %lld, the rules say %lld", got, want);
    if (got == M40_OK) {
        m40t_checks++;
        if (!m40_tensor_desc_is_contiguous(&d) || numel(&d) != (i128)m40_tensor_desc_numel(&d) ||
            span(&d) != numel(&d) * (i128)esz(dt))
            fail("m40_tensor_desc_make", __LINE__, "made a desc that is not contiguous%.0lld%.0lld", 0, 0);
    }
    m40t_checks++;
    if (m40_tensor_desc_make(NULL, dt, ndim, shape) != M40_ERR_INVALID_ARG ||
        (ndim > 0 && m40_tensor_desc_make(&d, dt, ndim, NULL) == M40_OK))
        fail("m40_tensor_desc_make", __LINE__, "took a NULL argument%.0lld%.0lld", 0, 0);
    /* numel of an unchecked desc: exact or -1, never a wrapped value */
    random_desc(&d, 60);
    int64_t n = m40_tensor_desc_numel(&d);
    m40t_checks++;
    if (n != -1 && (d.ndim < 0 || d.ndim > M40_MAX_DIMS || (i128)n != numel(&d)))
        fail("m40_tensor_desc_numel", __LINE__, "gave %lld for ndim %lld", n, d.ndim);
    (void)m40_tensor_desc_is_contiguous(&d);
}

static void prop_new_create(void) {
    int64_t shape[M40_MAX_DIMS];
    int ndim = any_ndim();
    m40_dtype dt = any_dtype();
    for (int i = 0; i < M40_MAX_DIMS; i++) shape[i] = dim(30);
    m40_status want = rule_shape(dt, ndim, shape);
    m40_tensor_desc d;
    if (want == M40_OK) {
        m40_tensor_desc_make(&d, dt, ndim, shape);
        if (numel(&d) * (i128)esz(dt) > (1 << 20)) { /* legal, but not here */
            skipped_big++;
            return;
        }
    }
    m40_tensor *t = (m40_tensor *)&d; /* must be overwritten with NULL on failure */
    EXPECT(m40_tensor_new(C, dt, ndim, shape, &t), want);
    m40t_checks++;
    if ((want == M40_OK) != (t != NULL)) fail("m40_tensor_new", __LINE__, "out is %lld%.0lld", t != NULL, 0);
    if (t) {
        size_t nb = m40_tensor_get_nbytes(t);
        unsigned char *h = calloc(1, nb ? nb : 1);
        EXPECT(m40_tensor_upload(C, t, h, nb), M40_OK);
        EXPECT(m40_tensor_download(C, t, h, nb), M40_OK);
        free(h);
        m40_tensor_destroy(t);
    }
    /* create: the same rule; strides (garbage here) are ignored, loc checked */
    memset(&d, 0, sizeof d);
    d.dtype = dt;
    d.ndim = ndim;
    for (int i = 0; i < M40_MAX_DIMS && i < ndim; i++) d.shape[i] = shape[i], d.stride[i] = hostile_i64();
    int loc = chance(80) ? M40_LOC_HOST : chance(50) ? M40_LOC_DEVICE : (int)hostile_int();
    if (want == M40_OK && loc != M40_LOC_HOST)
        want = loc == M40_LOC_DEVICE ? M40_ERR_NO_DEVICE : M40_ERR_INVALID_ARG;
    t = NULL;
    EXPECT(m40_tensor_create(C, &d, (m40_location)loc, &t), want);
    if (t) touch(t);
    m40_tensor_destroy(t);
}

/* A small contiguous base of a random plain dtype, filled. */
static m40_tensor *small_base(int64_t max_elems) {
    static const m40_dtype dts[] = {M40_DTYPE_F32, M40_DTYPE_F16, M40_DTYPE_I8, M40_DTYPE_I32};
    int64_t n[1] = {range(0, max_elems)};
    m40_tensor *t = NULL;
    if (CALL(m40_tensor_new(C, dts[rnd() % 4], 1, n, &t)) != M40_OK) return NULL;
    size_t nb = m40_tensor_get_nbytes(t);
    unsigned char *h = malloc(nb ? nb : 1);
    for (size_t i = 0; i < nb; i++) h[i] = (unsigned char)rnd();
    EXPECT(m40_tensor_upload(C, t, h, nb), M40_OK);
    free(h);
    return t;
}

/* The view rule, given where base's data starts (skip bytes into storage). */
static m40_status rule_view(const m40_tensor_desc *d, m40_dtype base_dt, i128 skip, i128 storage,
                            int64_t offset) {
    m40_status st = rule_desc(d);
    if (st != M40_OK) return st;
    if (esz(d->dtype) != esz(base_dt)) return M40_ERR_DTYPE;
    if (offset < 0) return M40_ERR_INVALID_ARG;
    i128 start = skip + (i128)offset * (i128)esz(d->dtype);
    if (start > storage || start + span(d) > storage) return M40_ERR_INVALID_ARG;
    return M40_OK;
}

static void prop_view(void) {
    m40_tensor *base = small_base(256);
    if (!base) return;
    m40_dtype bdt = m40_tensor_get_desc(base)->dtype;
    i128 storage = (i128)m40_tensor_get_nbytes(base), skip = 0;
    m40_tensor *parent = base, *mid = NULL;
    if (chance(30)) { /* a view of a view: its data starts inside the storage */
        int64_t n = (int64_t)(storage / (i128)esz(bdt)), off = range(0, n);
        int64_t s[1] = {range(0, n - off)};
        m40_tensor_desc md;
        m40_tensor_desc_make(&md, bdt, 1, s);
        EXPECT(m40_tensor_view(C, base, &md, off, &mid), M40_OK);
        if (mid) parent = mid, skip = (i128)off * (i128)esz(bdt);
    }
    for (int k = 0; k < 4; k++) {
        m40_tensor_desc d;
        random_desc(&d, 15);
        if (chance(60)) d.dtype = bdt;
        int64_t off = chance(20) ? hostile_i64() : range(0, 40);
        m40_tensor *v = (m40_tensor *)&d;
        m40_status want = rule_view(&d, bdt, skip, storage, off);
        EXPECT(m40_tensor_view(C, parent, &d, off, &v), want);
        m40t_checks++;
        if ((want == M40_OK) != (v != NULL)) fail("m40_tensor_view", __LINE__, "out is %lld%.0lld", v != NULL, 0);
        if (v) {
            touch(v);
            m40_tensor_destroy(v);
        }
    }
    m40_tensor_destroy(mid);
    m40_tensor_destroy(base);
}

static void prop_wrap(void) {
    enum { BUF = 512 };
    unsigned char *buf = malloc(BUF + 8);
    size_t mis = (size_t)range(0, 3);
    void *data = chance(10) ? NULL : buf + mis;
    m40_tensor_desc d;
    random_desc(&d, 15);
    m40_status want = rule_desc(&d);
    if (want == M40_OK && !data && numel(&d) > 0) want = M40_ERR_INVALID_ARG;
    int loc = chance(90) ? M40_LOC_HOST : chance(50) ? M40_LOC_DEVICE : (int)hostile_int();
    if (want == M40_OK && loc != M40_LOC_HOST)
        want = loc == M40_LOC_DEVICE ? M40_ERR_NO_DEVICE : M40_ERR_INVALID_ARG;
    if (want == M40_OK && (uintptr_t)data % esz(d.dtype)) want = M40_ERR_INVALID_ARG;
    m40_tensor *t = NULL;
    EXPECT(m40_tensor_wrap(C, &d, (m40_location)loc, data, &t), want);
    /* wrap trusts the caller for the size of `data`: touch only what we own */
    if (t && span(&d) <= BUF) touch(t);
    m40_tensor_destroy(t);
    free(buf);
}

static void prop_transfer(void) {
    m40_tensor *base = small_base(64);
    if (!base) return;
    size_t nb = m40_tensor_get_nbytes(base);
    unsigned char *h = malloc(nb + 1);
    size_t n = nb;
    switch (rnd() % 4) {
    case 0: n = nb + 1; break;
    case 1: n = nb ? nb - 1 : SIZE_MAX; break;
    case 2: n = (size_t)hostile_i64(); break;
    }
    m40_status want = n == nb ? M40_OK : M40_ERR_INVALID_ARG;
    EXPECT(m40_tensor_upload(C, base, h, n), want);
    EXPECT(m40_tensor_download(C, base, h, n), want);
    EXPECT(m40_tensor_upload(C, base, NULL, n), n ? M40_ERR_INVALID_ARG : want);
    /* a strided view refuses transfers; a contiguous one takes its own size */
    const m40_tensor_desc *bd = m40_tensor_get_desc(base);
    if (bd->shape[0] >= 4) {
        int64_t s[2] = {2, 2};
        m40_tensor_desc vd;
        m40_tensor_desc_make(&vd, bd->dtype, 2, s);
        vd.stride[0] = chance(50) ? 2 : 1; /* 1: rows overlap, still strided */
        vd.stride[1] = chance(50) ? 1 : 0;
        m40_tensor *v = NULL;
        EXPECT(m40_tensor_view(C, base, &vd, 0, &v), M40_OK);
        if (v) {
            size_t vb = m40_tensor_get_nbytes(v);
            m40_status vw = m40_tensor_desc_is_contiguous(&vd) ? M40_OK : M40_ERR_UNSUPPORTED;
            EXPECT(m40_tensor_upload(C, v, h, vb), vw);
            EXPECT(m40_tensor_download(C, v, h, vb), vw);
            m40_tensor_destroy(v);
        }
    }
    free(h);
    m40_tensor_destroy(base);
}

/* ---- eager ops ---------------------------------------------------------------- */

/* A pool of tensors the ops draw from: contiguous, strided and broadcast
** views, empty ones, every dtype; the shapes mostly agree so that calls get
** past the shape checks and run. */
enum { POOL = 10 };
static m40_tensor *pool[POOL], *owners[POOL];

static m40_tensor *tensor_of(m40_dtype dt, int nd, const int64_t *s, bool may_stride) {
    m40_tensor *t = NULL;
    if (may_stride && chance(30) && nd >= 1) { /* a strided view into a larger base */
        int64_t bs[M40_MAX_DIMS];
        for (int i = 0; i < nd; i++) bs[i] = s[i] + range(0, 2);
        m40_tensor *b = NULL;
        if (CALL(m40_tensor_new(C, dt, nd, bs, &b)) != M40_OK) return NULL;
        m40_tensor_desc vd = *m40_tensor_get_desc(b);
        for (int i = 0; i < nd; i++) vd.shape[i] = s[i];
        if (chance(20)) vd.stride[range(0, nd - 1)] = 0; /* broadcast dim */
        if (CALL(m40_tensor_view(C, b, &vd, 0, &t)) != M40_OK) {
            m40_tensor_destroy(b);
            return NULL;
        }
        for (int i = 0; i < POOL; i++)
            if (!owners[i]) {
                owners[i] = b;
                return t;
            }
        m40_tensor_destroy(t);
        m40_tensor_destroy(b);
        return NULL;
    }
    if (CALL(m40_tensor_new(C, dt, nd, s, &t)) != M40_OK) return NULL;
    if (dt == M40_DTYPE_F32 || dt == M40_DTYPE_F16)
        EXPECT(m40_fill_random(C, rnd(), M40_RANDOM_UNIFORM, -2, 2, t), M40_OK);
    return t;
}

static m40_dtype op_dtype(void) { return chance(80) ? M40_DTYPE_F32 : chance(50) ? M40_DTYPE_F16 : M40_DTYPE_I32; }

static void fill_pool(int nd, const int64_t *s) {
    for (int i = 0; i < POOL; i++) {
        int64_t t[M40_MAX_DIMS];
        int n = nd;
        for (int k = 0; k < nd; k++) t[k] = s[k];
        if (chance(15)) t[range(0, nd ? nd - 1 : 0)] = range(0, 4); /* a mismatch */
        if (chance(10)) n = (int)range(0, nd);                      /* fewer dims: broadcast */
        pool[i] = tensor_of(op_dtype(), n, n < nd ? t + (nd - n) : t, true);
    }
}
static void drain_pool(void) {
    for (int i = 0; i < POOL; i++) {
        m40_tensor_destroy(pool[i]);
        m40_tensor_destroy(owners[i]);
        pool[i] = owners[i] = NULL;
    }
}
static m40_tensor *pick(void) { return chance(3) ? NULL : pool[rnd() % POOL]; }
static float any_float(void) {
    static const float f[] = {0.0f, 1.0f, -1.0f, 1e30f, -1e-30f, 65504.0f, 1e38f};
    if (chance(10)) return NAN;
    if (chance(10)) return chance(50) ? INFINITY : -INFINITY;
    return f[rnd() % (sizeof f / sizeof f[0])];
}

static void prop_elementwise(void) {
    int nd = (int)range(0, 4);
    int64_t s[M40_MAX_DIMS];
    for (int i = 0; i < nd; i++) s[i] = range(0, 5);
    fill_pool(nd, s);
    for (int k = 0; k < 12; k++) {
        m40_tensor *a = pick(), *b = pick(), *o = pick();
        switch (rnd() % 8) {
        case 0: CALL(m40_add(C, a, b, o)); break;
        case 1: CALL(m40_mul(C, a, b, a)); break; /* in place */
        case 2: CALL(m40_scale(C, any_float(), a, o)); break;
        case 3: CALL(m40_activation(C, (m40_act)(chance(80) ? range(0, 2) : hostile_int()), a, o)); break;
        case 4: CALL(m40_softmax(C, a, o)); break;
        case 5: CALL(m40_convert(C, a, o)); break;
        case 6:
            CALL(m40_fill_random(C, rnd(), (m40_random_dist)(chance(80) ? range(0, 1) : hostile_int()), any_float(), any_float(), a));
            break;
        default:
            if (a || o) CALL(m40_tensor_copy(C, a, o));
            break;
        }
    }
    drain_pool();
}

static void prop_matmul(void) {
    int64_t M = range(0, 5), N = range(0, 5), K = range(0, 5), B = range(1, 3);
    int nd = (int)range(1, 3);
    int64_t xs[3] = {B, M, K}, ws[2] = {N, K}, ys[3] = {B, M, N}, bs[1] = {N};
    if (chance(20)) ws[rnd() % 2] = range(0, 6);
    if (chance(20)) ys[2] = range(0, 6);
    m40_tensor *x = tensor_of(op_dtype(), nd, xs + 3 - nd, true);
    m40_tensor *w = tensor_of(op_dtype(), 2, ws, true);
    m40_tensor *y = tensor_of(op_dtype(), nd, ys + 3 - nd, true);
    m40_tensor *b = chance(50) ? tensor_of(op_dtype(), 1, bs, false) : NULL;
    CALL(m40_matmul(C, x, w, b, y));
    m40_tensor_destroy(x), m40_tensor_destroy(w), m40_tensor_destroy(y), m40_tensor_destroy(b);
    drain_pool(); /* strided bases */
}

/* Conv and pool parameters: valid and small, or (M40_PROPERTY_ALL) hostile. */
static int param(int lo, int hi) { return all_params && chance(25) ? hostile_int() : (int)range(lo, hi); }

static void prop_conv_pool(void) {
    bool nhwc = chance(50);
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.stride_h = param(1, 3), cd.stride_w = param(1, 3);
    cd.pad_h = param(0, 2), cd.pad_w = param(0, 2);
    cd.dilation_h = param(1, 2), cd.dilation_w = param(1, 2);
    cd.relu = (int)range(0, 1);
    cd.layout = chance(95) ? (nhwc ? M40_LAYOUT_NHWC : M40_LAYOUT_NCHW) : (m40_layout)hostile_int();
    int64_t N = range(0, 2), Cc = range(1, 3), H = range(0, 6), W = range(0, 6), K = range(0, 3);
    int64_t R = range(1, 3), S = range(1, 3);
    if (chance(10)) N = 0, H = dim(100) & 0xFFFF; /* empty batch, odd height */
    /* y's shape from the formula when it is sane, else something small */
    int64_t eh = (int64_t)cd.dilation_h * (R - 1) + 1, ew = (int64_t)cd.dilation_w * (S - 1) + 1;
    int64_t P = cd.stride_h > 0 ? (H + 2 * (int64_t)cd.pad_h - eh) / cd.stride_h + 1 : 1;
    int64_t Q = cd.stride_w > 0 ? (W + 2 * (int64_t)cd.pad_w - ew) / cd.stride_w + 1 : 1;
    if (P < 0 || P > 64) P = range(0, 3);
    if (Q < 0 || Q > 64) Q = range(0, 3);
    if (chance(10)) P = range(0, 6);
    int64_t xs[4] = {N, Cc, H, W}, ws[4] = {K, Cc, R, S}, ys[4] = {N, K, P, Q}, ks[1] = {K};
    if (nhwc) {
        xs[1] = H, xs[2] = W, xs[3] = Cc;
        ws[1] = R, ws[2] = S, ws[3] = Cc;
        ys[1] = P, ys[2] = Q, ys[3] = K;
    }
    m40_tensor *x = tensor_of(op_dtype(), 4, xs, false), *w = tensor_of(op_dtype(), 4, ws, false);
    m40_tensor *y = tensor_of(op_dtype(), 4, ys, false), *r = chance(30) ? tensor_of(op_dtype(), 4, ys, false) : NULL;
    m40_tensor *sc = chance(30) ? tensor_of(op_dtype(), 1, ks, false) : NULL;
    m40_tensor *bi = chance(30) ? tensor_of(op_dtype(), 1, ks, false) : NULL;
    CALL(m40_conv2d(C, chance(3) ? NULL : &cd, x, w, sc, bi, r, y));
    /* pooling over the same x */
    int kh = param(1, 3), kw = param(1, 3), sh = param(1, 2), sw = param(1, 2);
    int ph = param(0, 1), pw = param(0, 1);
    int64_t pp = sh > 0 ? (H + 2 * (int64_t)ph - kh) / sh + 1 : 1, pq = sw > 0 ? (W + 2 * (int64_t)pw - kw) / sw + 1 : 1;
    if (pp < 0 || pp > 64) pp = range(0, 3);
    if (pq < 0 || pq > 64) pq = range(0, 3);
    int64_t ps[4] = {N, Cc, pp, pq}, gs[2] = {N, Cc};
    if (nhwc) ps[1] = pp, ps[2] = pq, ps[3] = Cc;
    m40_tensor *py = tensor_of(op_dtype(), 4, ps, false), *gy = tensor_of(op_dtype(), 2, gs, false);
    m40_pool kind = chance(90) ? (m40_pool)range(0, 1) : (m40_pool)(chance(50) ? 2 : hostile_int());
    CALL(m40t_pool2d(C, kind, kh, kw, sh, sw, ph, pw, x, py, cd.layout));
    CALL(m40_global_avgpool(C, cd.layout, x, chance(10) ? py : gy));
    m40_tensor *all[] = {x, w, y, r, sc, bi, py, gy};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
}

static void prop_quant(void) {
    static const int wt[] = {M40_DTYPE_Q8, M40_DTYPE_Q4, M40_DTYPE_F16};
    m40_quant_format f = {(m40_dtype)wt[rnd() % 3], chance(50) ? 0 : 32 << (rnd() % 3),
                          chance(50) ? M40_DTYPE_F16 : M40_DTYPE_F32};
    if (chance(10)) f.group = hostile_int();
    if (chance(5)) f.wtype = any_dtype();
    /* sizes of hostile shapes: exact, or 0 for refused ones, never wrapped */
    int64_t hn = hostile_i64(), hk = hostile_i64();
    size_t nb = m40_quant_nbytes(&f, hn, hk);
    m40t_checks++;
    if (nb > (size_t)((uint64_t)1 << 63)) fail("m40_quant_nbytes", __LINE__, "gave %lld for n %lld", (long long)nb, hn);
    m40_tensor_desc dd, sd;
    m40_status st = m40_quant_descs(&f, hn, hk, &dd, &sd);
    m40t_checks++;
    if (st == M40_OK && (rule_desc(&dd) != M40_OK || (f.wtype != M40_DTYPE_F16 && rule_desc(&sd) != M40_OK)))
        fail("m40_quant_descs", __LINE__, "accepted n %lld, k %lld with descs over the rules", hn, hk);
    /* a real (small) weight, sometimes declared with a hostile n or k */
    int64_t n = range(0, 6), k = range(0, 70), M = range(0, 3);
    m40_qweight q = {f, n, k, NULL, NULL};
    m40_tensor *data = NULL, *scale = NULL, *x = NULL, *y = NULL, *b = NULL, *wf = NULL;
    if (m40_quant_descs(&f, n, k, &dd, &sd) == M40_OK) {
        int64_t ws[2] = {n, k};
        wf = tensor_of(M40_DTYPE_F32, 2, ws, false);
        CALL(m40_tensor_create(C, &dd, M40_LOC_HOST, &data));
        if (f.wtype != M40_DTYPE_F16) CALL(m40_tensor_create(C, &sd, M40_LOC_HOST, &scale));
        if (wf && data) CALL(m40_quantize(C, &f, wf, data, scale));
    }
    q.data = data, q.scale = scale;
    if (chance(15)) q.n = hostile_i64();
    if (chance(15)) q.k = hostile_i64();
    int64_t xs[2] = {M, k}, ys[2] = {M, n}, bs[1] = {n};
    if (chance(15)) xs[1] = range(0, 70);
    x = tensor_of(op_dtype(), 2, xs, true);
    y = tensor_of(op_dtype(), 2, ys, true);
    if (chance(40)) b = tensor_of(op_dtype(), 1, bs, false);
    CALL(m40_quant_linear(C, x, chance(3) ? NULL : &q, b, y));
    if (wf) CALL(m40_dequantize(C, &q, wf));
    m40_tensor *all[] = {data, scale, x, y, b, wf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) m40_tensor_destroy(all[i]);
    drain_pool();
}

/* ---- graph and planner -------------------------------------------------------- */

static void prop_graph(void) {
    m40_graph *g = NULL;
    if (CALL(m40_graph_create(C, &g)) != M40_OK) return;
    /* declared tensors: the same shape rule as tensors (strides ignored) */
    int ids[6], nid = 0;
    void *keep[6] = {NULL}; /* set_data buffers live until m40_graph_alloc returns */
    int hostile = chance(50) ? 40 : 3; /* half the graphs small enough to run */
    for (int k = 0; k < 6; k++) {
        m40_tensor_desc d;
        random_desc(&d, hostile);
        if (chance(50)) d.dtype = M40_DTYPE_F32;
        m40_tensor_role role = chance(90) ? (m40_tensor_role)range(0, 1) : (m40_tensor_role)hostile_int();
        m40_status want = (int)role < 0 || role > M40_ROLE_STATE ? M40_ERR_INVALID_ARG : rule_shape(d.dtype, d.ndim, d.shape);
        int id = -1;
        EXPECT(m40_graph_tensor(g, role, NULL, &d, &id), want);
        if (want != M40_OK) continue;
        ids[nid++] = id;
        /* set_data: the exact byte count, or refused; NaN/Inf refused for weights */
        uint64_t bytes = numel(&d) * (i128)esz(d.dtype);
        if (role != M40_ROLE_WEIGHT) continue;
        if (bytes > 4096) { /* a wrong size is refused before the data is read */
            size_t nb = chance(50) ? (size_t)bytes + 1 : (size_t)hostile_i64();
            static const float dummy[1];
            if (nb != bytes) EXPECT(m40_graph_set_data(g, id, dummy, nb), M40_ERR_INVALID_ARG);
            continue;
        }
        unsigned char *buf = calloc(1, bytes + 4), *h = buf + range(0, 3); /* may be misaligned */
        m40_status sw = M40_OK;
        size_t nb = (size_t)bytes;
        if (chance(20)) nb = (size_t)hostile_i64(), sw = nb == bytes ? M40_OK : M40_ERR_INVALID_ARG;
        if (sw == M40_OK && bytes && chance(30) && (d.dtype == M40_DTYPE_F32 || d.dtype == M40_DTYPE_F16)) {
            int64_t e = range(0, (int64_t)(bytes / esz(d.dtype)) - 1);
            float f = chance(50) ? NAN : -INFINITY;
            uint16_t hf = chance(50) ? 0x7E00 : 0xFC00;
            if (d.dtype == M40_DTYPE_F32) memcpy(h + 4 * e, &f, 4);
            else memcpy(h + 2 * e, &hf, 2);
            sw = M40_ERR_FORMAT;
        }
        EXPECT(m40_graph_set_data(g, id, h, nb), sw);
        keep[k] = buf;
    }
    /* nodes over them, then a plan against any budget */
    for (int k = 0; k < 4 && nid; k++) {
        m40_node_desc nd;
        m40_node_desc_init(&nd, (m40_op)range(0, M40_OP_COUNT - 1));
        nd.ninputs = (int)range(1, 3);
        for (int i = 0; i < nd.ninputs; i++) nd.inputs[i] = ids[rnd() % nid];
        nd.alpha = any_float();
        nd.out_dtype = any_dtype();
        if (all_params) {
            nd.kernel[0] = hostile_int(), nd.kernel[1] = hostile_int();
            nd.stride[0] = hostile_int(), nd.pad[0] = hostile_int(), nd.groups = hostile_int();
            nd.heads = hostile_int(), nd.head_dim = hostile_int(), nd.rope_dims = hostile_int();
        }
        int out = -1;
        if (CALL(m40_graph_node(g, &nd, &out)) == M40_OK) m40_graph_mark_output(g, out);
    }
    m40_budget b;
    m40_budget_bytes(chance(50) ? (uint64_t)hostile_i64() : rnd(), &b);
    m40_plan_info pi;
    memset(&pi, 0, sizeof pi);
    m40_status st = CALL(m40_graph_plan(g, chance(80) ? &b : NULL, &pi));
    if (st == M40_OK || st == M40_ERR_OOM_DEVICE) {
        m40t_checks++;
        bool fits = pi.total_bytes <= pi.usable_bytes;
        if (pi.fits != fits || (pi.fits ? pi.headroom_bytes < 0 : pi.headroom_bytes >= 0) ||
            (st == M40_OK) != fits || pi.total_bytes > (uint64_t)CAP)
            fail("m40_graph_plan", __LINE__, "fits %lld with headroom %lld", pi.fits, pi.headroom_bytes);
    }
    /* small enough to run here: allocate and run it (the executor's checks) */
    if (st == M40_OK && pi.total_bytes <= (1u << 20) && CALL(m40_graph_alloc(g)) == M40_OK)
        nruns += CALL(m40_graph_run(g)) == M40_OK;
    m40_graph_destroy(g);
    for (int k = 0; k < 6; k++) free(keep[k]);
}

/* Planner sums: every tensor within the rule, their sum far beyond it. */
static void prop_plan_sums(void) {
    m40_graph *g = NULL;
    if (CALL(m40_graph_create(C, &g)) != M40_OK) return;
    int nw = (int)range(1, 6);
    int64_t s[1] = {((int64_t)1 << 60) - range(0, 1000)};
    m40_tensor_desc d;
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 1, s);
    int x = -1, out = -1;
    for (int i = 0; i < nw; i++) EXPECT(m40_graph_tensor(g, chance(50) ? M40_ROLE_WEIGHT : M40_ROLE_STATE, NULL, &d, NULL), M40_OK);
    EXPECT(m40_graph_tensor(g, M40_ROLE_INPUT, "x", &d, &x), M40_OK);
    m40_node_desc nd;
    m40_node_desc_init(&nd, M40_OP_SCALE);
    nd.ninputs = 1;
    nd.inputs[0] = x;
    EXPECT(m40_graph_node(g, &nd, &out), M40_OK);
    if (out >= 0) m40_graph_mark_output(g, out);
    m40_budget b;
    m40_budget_bytes(rnd(), &b);
    m40_plan_info pi;
    /* x and its output alone are 2^62 bytes: always over the rule */
    EXPECT(m40_graph_plan(g, &b, &pi), M40_ERR_INVALID_ARG);
    m40_graph_destroy(g);
}

/* The probe's findings in the old op entry points (lib/ops_conv.c and
** lib/graph/shapes.c before lib/ops/), one call each: each must return a
** status, and UBSan must stay quiet. Each overflowed an int there (file:line
** in the comments, of that old tree) -- pads, heads and head_dim reached
** "2 * p" or "H + 2 * G" in int before any widening. */
static m40_graph *g_new(void) {
    m40_graph *g = NULL;
    CALL(m40_graph_create(C, &g));
    return g;
}
static int g_tensor(m40_graph *g, m40_tensor_role role, m40_dtype dt, int nd, const int64_t *s) {
    m40_tensor_desc d;
    int id = -1;
    m40_tensor_desc_make(&d, dt, nd, s);
    CALL(m40_graph_tensor(g, role, NULL, &d, &id));
    return id;
}
static void known_findings(void) {
    int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 1, 1};
    m40_tensor *x = tensor_of(M40_DTYPE_F32, 4, xs, false), *y = tensor_of(M40_DTYPE_F32, 4, xs, false);
    m40_tensor *w = tensor_of(M40_DTYPE_F32, 4, ws, false);
    /* ops_conv.c:171: 2 * ph */
    CALL(m40t_pool2d(C, M40_POOL_MAX, 3, 3, 1, 1, INT_MAX - 1, 1, x, y, M40_LAYOUT_NCHW));
    /* ops_conv.c:115-120: H + 2 * pad_h */
    m40_conv2d_desc cd;
    m40_conv2d_desc_init(&cd);
    cd.pad_h = INT_MAX - 1;
    CALL(m40_conv2d(C, &cd, x, w, NULL, NULL, NULL, y));
    m40_tensor_destroy(x), m40_tensor_destroy(y), m40_tensor_destroy(w);
    m40_graph *g = g_new();
    if (!g) return;
    int out;
    m40_node_desc nd;
    /* shapes.c:320: (int64_t)(H + 2 * G) * D */
    int64_t q[3] = {1, 1, 8}, kv[4] = {1, 4, 1 << 30, 1}, p[2] = {1, 1}; /* pos [B,T] */
    m40_node_desc_init(&nd, M40_OP_ATTENTION);
    nd.ninputs = 4;
    nd.inputs[0] = g_tensor(g, M40_ROLE_INPUT, M40_DTYPE_F32, 3, q);
    nd.inputs[1] = g_tensor(g, M40_ROLE_STATE, M40_DTYPE_F16, 4, kv);
    nd.inputs[2] = g_tensor(g, M40_ROLE_STATE, M40_DTYPE_F16, 4, kv);
    nd.inputs[3] = g_tensor(g, M40_ROLE_INPUT, M40_DTYPE_I32, 2, p);
    nd.heads = nd.kv_heads = 1 << 30;
    nd.head_dim = 1;
    CALL(m40_graph_node(g, &nd, &out));
    /* shapes.c:329: the decode workspace's D + 2 */
    int64_t q2[3] = {1, 1, 3LL * INT_MAX}, kv2[4] = {1, 1, 1, INT_MAX};
    nd.inputs[0] = g_tensor(g, M40_ROLE_INPUT, M40_DTYPE_F32, 3, q2);
    nd.inputs[1] = g_tensor(g, M40_ROLE_STATE, M40_DTYPE_F16, 4, kv2);
    nd.inputs[2] = g_tensor(g, M40_ROLE_STATE, M40_DTYPE_F16, 4, kv2);
    nd.heads = nd.kv_heads = 1;
    nd.head_dim = INT_MAX;
    CALL(m40_graph_node(g, &nd, &out));
    /* shapes.c:250: a POOL2D node's 2 * pad (then planned as if pad were -1) */
    int ix = g_tensor(g, M40_ROLE_INPUT, M40_DTYPE_F32, 4, xs);
    m40_node_desc_init(&nd, M40_OP_POOL2D);
    nd.ninputs = 1;
    nd.inputs[0] = ix;
    nd.kernel[0] = nd.kernel[1] = 2;
    nd.pad[0] = INT_MAX;
    CALL(m40_graph_node(g, &nd, &out));
    /* shapes.c:196: a CONV2D node's 2 * pad */
    m40_node_desc_init(&nd, M40_OP_CONV2D);
    nd.ninputs = 2;
    nd.inputs[0] = ix;
    nd.inputs[1] = g_tensor(g, M40_ROLE_WEIGHT, M40_DTYPE_F32, 4, ws);
    nd.pad[0] = INT_MAX;
    CALL(m40_graph_node(g, &nd, &out));
    m40_graph_destroy(g);
}

/* ---- driver ------------------------------------------------------------------- */

static void (*const props[])(void) = {prop_desc_make, prop_new_create, prop_view, prop_view,
                                      prop_wrap, prop_transfer, prop_elementwise,
                                      prop_elementwise, prop_matmul, prop_conv_pool,
                                      prop_quant, prop_graph, prop_plan_sums};
enum { NPROPS = sizeof props / sizeof props[0] };

static bool trace; /* M40_PROPERTY_TRACE=1: "iter N" on stderr before each */

static void run_iter(uint64_t seed, long long i) {
    iter = i;
    if (trace) fprintf(stderr, "iter %lld\n", i);
    rs = seed * 0x100000001B3ull ^ (uint64_t)i;
    rnd();
    props[rnd() % NPROPS]();
}

int main(int argc, char **argv) {
    long long iters = 10000, only = -1;
    uint64_t seed = 15;
    int a = 1;
    if (a < argc && strcmp(argv[a], "--iter") == 0 && a + 1 < argc) only = atoll(argv[a + 1]), a += 2;
    else if (a < argc) iters = atoll(argv[a++]);
    if (a < argc) seed = strtoull(argv[a], NULL, 0);
    const char *all = getenv("M40_PROPERTY_ALL");
    all_params = !all || strcmp(all, "0") != 0; /* on unless M40_PROPERTY_ALL=0 */
    trace = getenv("M40_PROPERTY_TRACE") != NULL;
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    if (m40_ctx_create(&cd, &C) != M40_OK) {
        fprintf(stderr, "cannot create a CPU context: %s\n", m40_errmsg(C));
        return 1;
    }
    printf("test_api_property: seed %llu, %s, hostile conv/pool params %s\n",
           (unsigned long long)seed, only >= 0 ? "one iteration" : "all iterations",
           all_params ? "on" : "off (M40_PROPERTY_ALL=0)");
    if (all_params) known_findings();
    if (only >= 0) run_iter(seed, only);
    for (long long i = 0; only < 0 && i < iters && m40t_failures < 20; i++) run_iter(seed, i);
    /* still usable after all of it */
    int64_t s[1] = {3};
    m40_tensor *t = NULL;
    CHECK_ST(m40_tensor_new(C, M40_DTYPE_F32, 1, s, &t), M40_OK);
    CHECK_ST(m40_fill_random(C, 1, M40_RANDOM_UNIFORM, 0, 1, t), M40_OK);
    m40_tensor_destroy(t);
    m40_ctx_destroy(C);
    printf("test_api_property: %lld calls, %lld succeeded, the rest refused with a status and "
           "message; %d random graphs ran; %d legal shapes too large to allocate here were "
           "skipped\n", ncalls, nok, nruns, skipped_big);
    return m40t_finish("test_api_property");
}
