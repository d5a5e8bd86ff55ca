/* ChatGLM2 / ChatGLM3 on libm40's public API: see chatglm2.h. */
#define _POSIX_C_SOURCE 200809L
#include "chatglm2.h"

#include <m40/comm.h>
#include <m40/transformer.h>

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SHARDS 256
#define HISTORY 64 /* ids the repetition penalty looks back over */

/* One conversation: its cache row (the slot of the same index), how far it
** is, the ids the repetition penalty sees, and the logits it samples next. */
typedef struct glm_seq {
    int pos;                   /* tokens in it */
    int32_t hist[HISTORY];     /* the last ids, oldest first; -1: none */
    int src, row;              /* the logits the next sample reads: row `row` of graph
                               ** src (0 the prefill graph, 1 + k decode graph k,
                               ** SRC_SHORT + j short prefill graph j), or src -1: none */
} glm_seq;

#define MAX_DG 10 /* decode graphs: batch 1, 2, 4, ..., parallel */
#define MAX_SG 12 /* short prefill graphs: chunk 16, 32, ..., < chunk */
#define SRC_SHORT (1 + MAX_DG)

static int is_decode(int src) { return src >= 1 && src <= MAX_DG; }
static const char *src_name(int src) { return is_decode(src) ? "decode" : "prefill"; }

/* A tensor-parallel rank other than 0 (rank 0 is the model's own ctx and
** graphs): its context, its share of the graphs, and its thread, which runs
** `job` each time the model's `gen` moves. */
typedef struct glm_rank {
    m40_ctx *ctx;
    m40_graph *pg, *dg[MAX_DG], *sg[MAX_SG];
    m40_chatglm2_info pi, di[MAX_DG], si[MAX_SG];
    pthread_t th;
    int started;
    m40_graph *job;
    m40_status st;
    char err[256];
} glm_rank;

struct glm_model {
    m40_ctx *ctx;
    m40_st_file *files[MAX_SHARDS];
    int nfiles;
    m40_chatglm2_config cfg;
    int64_t L;                 /* cache length */
    int T;                     /* prefill chunk */
    int P;                     /* sequences (cache slots) */
    int all_logits;
    /* P = 1: both graphs batch 1, as one conversation needs. P > 1: every
    ** graph has a slot input (each row's cache row): the prefill graph at
    ** batch 1 fills one conversation, and decode graphs at batch 1, 2, 4,
    ** ..., P step the active ones together in the smallest that holds
    ** them (one user pays for batch 1, eight for batch 8: idle rows still
    ** cost their share of every GEMV). All share the weights and cache. */
    m40_graph *pg;             /* prefill chunk */
    m40_chatglm2_info pi;
    int ndg;
    m40_graph *dg[MAX_DG];     /* decode steps */
    m40_chatglm2_info di[MAX_DG];
    int dbatch[MAX_DG];
    int captured[MAX_DG];
    int64_t dkeys[MAX_DG];     /* decode graph k's attention key bound (0: none) */
    glm_seq *seq;              /* [P] */
    m40_tensor *pview;         /* [1,V] view of the prefill graph's last logits row */
    m40_tensor **drow[MAX_DG]; /* [dbatch[k]] views of decode graph k's logits rows */
    int32_t *slot_buf;         /* [P] */
    int capture_failed[MAX_DG];
    /* Short prefill graphs: chunks sT[0] < sT[1] < ... < T (powers of two
    ** from prefill_min), sharing the weights and cache. A prompt's last
    ** chunk runs in the smallest that holds it: a 30-token prompt pays a
    ** 32-row pass, not a T-row one (the rest of a chunk is padding). */
    int nsg;
    int sT[MAX_SG];
    m40_graph *sg[MAX_SG];
    m40_chatglm2_info si[MAX_SG];
    m40_tensor *sview[MAX_SG]; /* [1,V] views of their last logits rows */
    /* tensor parallelism: R ranks on one communicator; rk[1..R) */
    int R;
    m40_comm *comm;
    glm_rank rk[GLM_MAX_RANKS];
    pthread_mutex_t pmu;
    pthread_cond_t pcv, dcv;
    unsigned gen;
    int done, quit, pool;      /* pool: the lock and conditions exist */
    int broken;                /* a rank failed: the communicator is gone */
    int layer;                 /* 1: the ranks are pipeline stages (consecutive blocks) */
    m40_ctx *octx;             /* the logits' context: rank 0, or the last stage */
    int og;                    /* its rank */
    float *hbuf;               /* layer split: the hidden state on its way [max(T,P)·C] */
    m40_tensor *t_hist, *t_pos, *t_out; /* sampler inputs [1,HISTORY], [1], output [1,2] */
    int32_t *ids_buf, *pos_buf;        /* [max(T, P)] */
    float *rows;               /* [T·V] when all_logits */
    char err[512];
};

static int fail(glm_model *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* A library call failed: its message is on the context. */
static int lib_fail(glm_model *m, const char *what) {
    const char *e = m40_errmsg(m->ctx);
    if ((!e || !*e) && m->octx) e = m40_errmsg(m->octx);
    return fail(m, "%s: %s", what, e);
}

/* ---- tensor-parallel ranks ------------------------------------------------ */

typedef struct rank_arg {
    glm_model *m;
    int r;
    unsigned gen; /* m->gen when the thread was made: the jobs after it are its own */
} rank_arg;

static void *rank_main(void *arg) {
    glm_model *m = ((rank_arg *)arg)->m;
    glm_rank *k = &m->rk[((rank_arg *)arg)->r];
    /* not m->gen read here: a thread that starts late (a loaded machine)
    ** would take the first job's generation as already seen and wait for
    ** the next, while feed waits for it forever (a CI hang, session 20) */
    unsigned seen = ((rank_arg *)arg)->gen;
    free(arg);
    /* a test's late start (ctest m40_chat_cli_greedy_tp0123_late): the first
    ** job is posted before this thread first takes the lock */
    const char *late = getenv("GLM_TEST_RANK_START_MS");
    const int late_ms = late && *late ? atoi(late) : 0;
    if (late_ms > 0 && late_ms < 10000) {
        struct timespec ts = {late_ms / 1000, (long)(late_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&m->pmu);
    for (;;) {
        while (m->gen == seen && !m->quit) pthread_cond_wait(&m->pcv, &m->pmu);
        if (m->quit) break;
        seen = m->gen;
        m40_graph *g = k->job;
        pthread_mutex_unlock(&m->pmu);
        m40_status st = m40_graph_run(g);
        if (st != M40_OK) {
            snprintf(k->err, sizeof k->err, "%s", m40_errmsg(k->ctx));
            m40_comm_abort(m->comm); /* the others must not wait for this rank */
        }
        pthread_mutex_lock(&m->pmu);
        k->st = st;
        m->done++;
        pthread_cond_broadcast(&m->dcv);
    }
    pthread_mutex_unlock(&m->pmu);
    return NULL;
}

/* Graph src (0: the prefill graph, 1 + k: decode graph k, SRC_SHORT + j:
** short prefill graph j) of rank r. */
static m40_graph *rank_graph(glm_model *m, int r, int src, const m40_chatglm2_info **info) {
    if (src >= SRC_SHORT) {
        const int j = src - SRC_SHORT;
        *info = r ? &m->rk[r].si[j] : &m->si[j];
        return r ? m->rk[r].sg[j] : m->sg[j];
    }
    if (r == 0) {
        *info = src ? &m->di[src - 1] : &m->pi;
        return src ? m->dg[src - 1] : m->pg;
    }
    *info = src ? &m->rk[r].di[src - 1] : &m->rk[r].pi;
    return src ? m->rk[r].dg[src - 1] : m->rk[r].pg;
}

/* Uploads n ids (when the graph takes them: a layer split's first stage
** only) and positions, and the slots (n for a decode step, 1 for a prefill
** chunk) when the graph has a slot input, to graph src of rank r. */
static int upload_inputs(glm_model *m, int r, int src, int n, const int32_t *slots) {
    const m40_chatglm2_info *in;
    m40_graph *g = rank_graph(m, r, src, &in);
    m40_ctx *ctx = r ? m->rk[r].ctx : m->ctx;
    m40_tensor *ti, *tp, *ts;
    if ((in->input_ids >= 0 && (m40_graph_get_tensor(g, in->input_ids, &ti) != M40_OK ||
                                m40_tensor_upload(ctx, ti, m->ids_buf, (size_t)n * 4) != M40_OK)) ||
        m40_graph_get_tensor(g, in->position, &tp) != M40_OK ||
        m40_tensor_upload(ctx, tp, m->pos_buf, (size_t)n * 4) != M40_OK ||
        (in->slot >= 0 && (m40_graph_get_tensor(g, in->slot, &ts) != M40_OK ||
                           m40_tensor_upload(ctx, ts, slots, (size_t)(is_decode(src) ? n : 1) * 4) != M40_OK)))
        return fail(m, "%s inputs, rank %d: %s", src_name(src), r,
                    m40_errmsg(ctx));
    return 0;
}

/* Layer split: the stages one after the other, each stage's residual
** stream (hidden_out [n, C]) into the next one's hidden_in, through the host. */
static int feed_layers(glm_model *m, int src, int n, const int32_t *slots) {
    const size_t hb = (size_t)n * (size_t)m->cfg.hidden * 4;
    for (int r = 0; r < m->R; r++) {
        const m40_chatglm2_info *in;
        m40_graph *g = rank_graph(m, r, src, &in);
        m40_ctx *ctx = r ? m->rk[r].ctx : m->ctx;
        m40_tensor *th;
        if (upload_inputs(m, r, src, n, slots)) return -1;
        if ((in->hidden_in >= 0 && (m40_graph_get_tensor(g, in->hidden_in, &th) != M40_OK ||
                                    m40_tensor_upload(ctx, th, m->hbuf, hb) != M40_OK)) ||
            m40_graph_run(g) != M40_OK ||
            (in->hidden_out >= 0 && (m40_graph_get_tensor(g, in->hidden_out, &th) != M40_OK ||
                                     m40_tensor_download(ctx, th, m->hbuf, hb) != M40_OK)))
            return fail(m, "%s, stage %d: %s", src_name(src), r, m40_errmsg(ctx));
    }
    return 0;
}

/* The inputs to graph src of every rank, then the run: the stages in turn
** (layer split), or every rank at once (rank 0 here, the others on their
** threads; tensor parallelism). */
static int feed(glm_model *m, int src, int n, const int32_t *slots) {
    if (m->layer) return feed_layers(m, src, n, slots);
    if (m->broken) return fail(m, "a tensor-parallel rank failed earlier; open the model again");
    for (int r = 0; r < m->R; r++)
        if (upload_inputs(m, r, src, n, slots)) return -1;
    const m40_chatglm2_info *in0;
    if (m->R == 1)
        return m40_graph_run(rank_graph(m, 0, src, &in0)) != M40_OK
                   ? lib_fail(m, src_name(src)) : 0;
    pthread_mutex_lock(&m->pmu);
    for (int r = 1; r < m->R; r++) {
        const m40_chatglm2_info *in;
        m->rk[r].job = rank_graph(m, r, src, &in);
        m->rk[r].st = M40_OK;
    }
    m->done = 0;
    m->gen++;
    pthread_cond_broadcast(&m->pcv);
    pthread_mutex_unlock(&m->pmu);
    m40_status st0 = m40_graph_run(rank_graph(m, 0, src, &in0));
    if (st0 != M40_OK) {
        fail(m, "%s, rank 0: %s", src_name(src), m40_errmsg(m->ctx));
        m40_comm_abort(m->comm);
    }
    pthread_mutex_lock(&m->pmu);
    while (m->done < m->R - 1) pthread_cond_wait(&m->dcv, &m->pmu);
    pthread_mutex_unlock(&m->pmu);
    int bad = st0 != M40_OK;
    for (int r = 1; r < m->R && !bad; r++)
        if (m->rk[r].st != M40_OK) {
            bad = 1;
            fail(m, "%s, rank %d: %s", src_name(src), r, m->rk[r].err);
        }
    if (bad) m->broken = 1;
    return bad ? -1 : 0;
}

void glm_open_opts_init(glm_open_opts *o) {
    memset(o, 0, sizeof *o);
    o->dtype = GLM_DTYPE_AUTO;
}

const char *glm_errmsg(const glm_model *m) { return m ? m->err : "no model"; }
const m40_chatglm2_config *glm_config(const glm_model *m) { return &m->cfg; }
int64_t glm_ctx_len(const glm_model *m) { return m->L; }
int glm_pos(const glm_model *m) { return m->seq[0].pos; }
int glm_parallel(const glm_model *m) { return m->P; }
int glm_chunk(const glm_model *m) { return m->T; }
int glm_seq_pos(const glm_model *m, int seq) {
    return seq >= 0 && seq < m->P ? m->seq[seq].pos : -1;
}
m40_ctx *glm_ctx(glm_model *m) { return m->ctx; }

void glm_plans(const glm_model *m, m40_plan_info *prefill, m40_plan_info *decode) {
    if (prefill) *prefill = m->pi.plan;
    if (decode) *decode = m->di[m->ndg - 1].plan;
}

uint64_t glm_graphs_bytes(const glm_model *m) {
    uint64_t b = 0;
    for (int k = 0; k < m->ndg; k++) b += m->di[k].plan.total_bytes;
    for (int j = 0; j < m->nsg; j++) b += m->si[j].plan.total_bytes;
    return b;
}

int glm_prefill_sizes(const glm_model *m, int *sizes, int max) {
    int n = 0;
    for (int j = 0; j < m->nsg && n < max; j++) sizes[n++] = m->sT[j];
    if (n < max) sizes[n++] = m->T;
    return n;
}

/* ---- the checkpoint -------------------------------------------------------- */

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int open_file(glm_model *m, const char *path) {
    if (m->nfiles == MAX_SHARDS) return fail(m, "%s: more than %d shards", path, MAX_SHARDS);
    m40_st_file *f = NULL;
    if (m40_st_open(path, &f) != M40_OK) {
        fail(m, "%s: %s", path, f ? m40_st_errmsg(f) : "cannot open");
        m40_st_destroy(f);
        return -1;
    }
    m->files[m->nfiles++] = f;
    return 0;
}

/* An integer field of config.json: absent keeps *v; present must be an
** integer in [lo, hi]. */
static int cfg_int(glm_model *m, json_t *root, const char *key, long lo, long hi, int *v) {
    json_t *x = json_object_get(root, key);
    if (!x) return 0;
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return fail(m, "config.json: %s must be an integer in %ld..%ld", key, lo, hi);
    *v = (int)json_integer_value(x);
    return 0;
}

static int cfg_real(glm_model *m, json_t *root, const char *key, double lo, double hi, double *v) {
    json_t *x = json_object_get(root, key);
    if (!x) return 0;
    if (!json_is_number(x) || !(json_number_value(x) >= lo && json_number_value(x) <= hi))
        return fail(m, "config.json: %s must be a number in [%g, %g]", key, lo, hi);
    *v = json_number_value(x);
    return 0;
}

/* config.json of a THUDM directory (ChatGLM2-6B, ChatGLM3-6B, -32K). */
static int read_config(glm_model *m, const char *dir, int *seq_length, int *qbits) {
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", dir);
    json_error_t je;
    json_t *root = json_load_file(p, 0, &je);
    if (!root) return fail(m, "%s: line %d: %s", p, je.line, je.text);
    m40_chatglm2_config c;
    m40_chatglm2_config_6b(&c);
    double eps = c.eps, ratio = 1.0;
    int rc = 0;
    if (!json_is_object(root)) rc = fail(m, "%s: not a JSON object", p);
    if (!rc) rc = cfg_int(m, root, "num_layers", 1, 1024, &c.layers);
    if (!rc) rc = cfg_int(m, root, "hidden_size", 1, 1 << 20, &c.hidden);
    if (!rc) rc = cfg_int(m, root, "ffn_hidden_size", 1, 1 << 20, &c.ffn);
    if (!rc) rc = cfg_int(m, root, "num_attention_heads", 1, 4096, &c.heads);
    if (!rc) rc = cfg_int(m, root, "multi_query_group_num", 1, 4096, &c.kv_heads);
    if (!rc) rc = cfg_int(m, root, "kv_channels", 4, 256, &c.head_dim);
    if (!rc) rc = cfg_int(m, root, "padded_vocab_size", 1, 1 << 20, &c.vocab);
    if (!rc) rc = cfg_int(m, root, "seq_length", 1, 1 << 22, seq_length);
    if (!rc) rc = cfg_int(m, root, "quantization_bit", 0, 16, qbits);
    if (!rc && *qbits != 0 && *qbits != 4 && *qbits != 8)
        rc = fail(m, "%s: quantization_bit %d: 0 (none), 4 or 8", p, *qbits);
    if (!rc) rc = cfg_real(m, root, "layernorm_epsilon", 1e-12, 0.5, &eps);
    if (!rc) rc = cfg_real(m, root, "rope_ratio", 1e-3, 1e6, &ratio);
    json_t *mq = json_object_get(root, "multi_query_attention");
    if (!rc && mq && json_is_false(mq)) c.kv_heads = c.heads;
    json_decref(root);
    c.eps = (float)eps;
    c.rope_theta = (float)(10000.0 * ratio);
    m->cfg = c;
    return rc;
}

/* The shards a model.safetensors.index.json names, each opened once. */
static int open_index(glm_model *m, const char *dir, const char *index) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, index);
    json_error_t je;
    json_t *root = json_load_file(p, 0, &je);
    if (!root) return fail(m, "%s: line %d: %s", p, je.line, je.text);
    json_t *map = json_object_get(root, "weight_map");
    int rc = 0;
    if (!json_is_object(map)) rc = fail(m, "%s: no weight_map object", p);
    const char *key;
    json_t *v;
    char seen[MAX_SHARDS][256];
    int nseen = 0;
    json_object_foreach(map, key, v) {
        if (rc) break;
        const char *shard = json_string_value(v);
        if (!shard || !*shard || strchr(shard, '/') || strlen(shard) >= 256) {
            rc = fail(m, "%s: tensor '%s' names a bad shard", p, key);
            break;
        }
        int known = 0;
        for (int i = 0; i < nseen && !known; i++) known = !strcmp(seen[i], shard);
        if (known) continue;
        if (nseen == MAX_SHARDS) {
            rc = fail(m, "%s: more than %d shards", p, MAX_SHARDS);
            break;
        }
        snprintf(seen[nseen++], 256, "%s", shard);
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/%s", dir, shard);
        if (!file_exists(sp)) rc = fail(m, "%s names shard %s, which is missing", p, sp);
        else rc = open_file(m, sp);
    }
    json_decref(root);
    return rc;
}

/* *qbits: config.json's quantization_bit (0 when absent) */
static int open_checkpoint(glm_model *m, const char *path, int *have_cfg, int *seq_len, int *qbits) {
    *have_cfg = 0;
    if (!is_dir(path)) return open_file(m, path);
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", path);
    if (file_exists(p)) {
        if (read_config(m, path, seq_len, qbits)) return -1;
        *have_cfg = 1;
    }
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
    if (file_exists(p)) return open_index(m, path, "model.safetensors.index.json");
    snprintf(p, sizeof p, "%s/model.safetensors", path);
    if (file_exists(p)) return open_file(m, p);
    char q[4096];
    snprintf(p, sizeof p, "%s/pytorch_model.bin.index.json", path);
    snprintf(q, sizeof q, "%s/pytorch_model.bin", path);
    if (file_exists(p) || file_exists(q))
        return fail(m, "%s holds PyTorch .bin shards: convert them once with "
                    "examples/chatglm2/convert_bin.py %s OUT_DIR", path, path);
    return fail(m, "%s: no model.safetensors or model.safetensors.index.json", path);
}

/* How layer 0's dense weight is stored (*w: that tensor, NULL when missing):
** I8 with a weight_scale is int4g128 with 2-D scales, else int8 with rows
** of in bytes, int4 with in/2 (rounded up; in: heads · kv_channels), else
** M40_WFMT_COUNT (a wrong shape, which the loader names); anything else
** (F16, BF16, F32, missing) fp16. */
static m40_wformat stored_format(const glm_model *m, const m40_st_tensor **w) {
    const char *wn = "transformer.encoder.layers.0.self_attention.dense.weight";
    const char *sn = "transformer.encoder.layers.0.self_attention.dense.weight_scale";
    const m40_st_tensor *tw = NULL, *ts = NULL;
    for (int i = 0; i < m->nfiles; i++) {
        if (!tw) tw = m40_st_find(m->files[i], wn);
        if (!ts) ts = m40_st_find(m->files[i], sn);
    }
    *w = tw;
    if (!tw || !ts || tw->dtype != M40_DTYPE_I8 || tw->ndim != 2) return M40_WFMT_FP16;
    if (ts->ndim == 2) return M40_WFMT_INT4G128;
    const int64_t in = (int64_t)m->cfg.heads * m->cfg.head_dim;
    return tw->shape[1] == in ? M40_WFMT_INT8 : tw->shape[1] == (in + 1) / 2 ? M40_WFMT_INT4 : M40_WFMT_COUNT;
}

/* config.json's quantization_bit (THUDM's: absent or 0 for fp16 and bf16,
** 8 or 4 for the official quantized checkpoints) against the format the
** weights are stored in (stored_format; w its tensor). 0 says nothing: a
** hand-made directory may hold any format. */
static int check_qbits(glm_model *m, const char *dir, int qbits, const m40_st_tensor *w,
                       m40_wformat stored) {
    const int have = stored == M40_WFMT_INT8 ? 8 : stored == M40_WFMT_INT4 ? 4
                   : stored == M40_WFMT_INT4G128 ? 4 : stored == M40_WFMT_FP16 ? 0 : -1;
    if (!qbits || !w || have == qbits || have < 0) return 0; /* have < 0: the loader names it */
    char dims[96] = "";
    for (int d = 0, n = 0; d < w->ndim && n < (int)sizeof dims; d++)
        n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%lld", d ? "," : "", (long long)w->shape[d]);
    return fail(m, "%s/config.json says quantization_bit %d, the tensors are %s ('%s' is %s [%s])",
                dir, qbits, have == 8 ? "int8" : have == 4 ? "packed int4" : "not quantized", w->name,
                w->dtype_name, dims);
}

/* ---- open / close ------------------------------------------------------- */

static m40_status new_tensor(glm_model *m, m40_dtype dt, int nd, int64_t a, int64_t b, int64_t c,
                             int64_t d, m40_tensor **t) {
    const int64_t s[4] = {a, b, c, d};
    return m40_tensor_new(m->octx, dt, nd, s, t);
}

/* [1,V] view of row `row` of a graph's logits tensor. */
static int logits_view(glm_model *m, m40_graph *g, int id, int64_t row, m40_tensor **view) {
    m40_tensor *t;
    m40_tensor_desc d;
    const int64_t s[2] = {1, m->cfg.vocab};
    m40_tensor_desc_make(&d, M40_DTYPE_F32, 2, s);
    if (m40_graph_get_tensor(g, id, &t) != M40_OK ||
        m40_tensor_view(m->octx, t, &d, row * m->cfg.vocab, view) != M40_OK)
        return lib_fail(m, "logits view");
    return 0;
}

/* The desc of a short prefill graph of chunk t: the prefill desc p with
** the weights and cache of g. */
static void short_desc(m40_chatglm2_desc *out, const m40_chatglm2_desc *p, m40_graph *g,
                       const m40_chatglm2_info *gi, int all_logits, int t) {
    m40_chatglm2_desc_decode(out, p, g, gi);
    out->phase = M40_PHASE_PREFILL;
    out->all_logits = all_logits;
    out->batch = 1;
    out->chunk = t;
}

int glm_model_open(const glm_open_opts *o, glm_model **out, char *err, size_t errlen) {
    *out = NULL;
    glm_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int have_cfg = 0, seq_len = 8192, qbits = 0;
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    /* rank 0's device: devices[0], or 0 of 0..ndevices-1 (rank r takes r) */
    cd.device = o->cpu ? M40_DEVICE_CPU : o->ndevices > 1 ? (o->devices ? o->devices[0] : 0) : o->device;
    if (m40_ctx_create(&cd, &m->ctx) != M40_OK) {
        fail(m, "%s context: %s", o->cpu ? "CPU" : "GPU", m40_errmsg(m->ctx));
        goto bad;
    }
    if (o->random_shape) { /* no checkpoint: seeded random weights of a known shape */
        m40_chatglm2_config_6b(&m->cfg);
        if (!strcmp(o->random_shape, "tiny")) {
            m->cfg.layers = 2;
            m->cfg.hidden = 64;
            m->cfg.ffn = 160;
            m->cfg.heads = 2;
            m->cfg.kv_heads = 1;
            m->cfg.head_dim = 32;
        } else if (strcmp(o->random_shape, "6b")) {
            fail(m, "random weights of shape '%s': '6b' (ChatGLM2-6B) or 'tiny'", o->random_shape);
            goto bad;
        }
    } else if (!o->path) {
        fail(m, "no model path");
        goto bad;
    } else if (open_checkpoint(m, o->path, &have_cfg, &seq_len, &qbits)) {
        goto bad;
    }
    m->L = o->ctx > 0 ? o->ctx : (seq_len < 8192 ? seq_len : 8192);
    m->T = o->chunk > 0 ? o->chunk : 256;
    if (m->T > m->L) m->T = (int)m->L;
    m->all_logits = o->all_logits;
    m->P = o->parallel > 1 ? o->parallel : 1;
    if (m->P > GLM_MAX_PARALLEL) {
        fail(m, "parallel %d: at most %d conversations", o->parallel, GLM_MAX_PARALLEL);
        goto bad;
    }
    m->R = o->ndevices > 1 ? o->ndevices : 1;
    if (m->R > GLM_MAX_RANKS) {
        fail(m, "%d devices: at most %d", o->ndevices, GLM_MAX_RANKS);
        goto bad;
    }
    m->layer = m->R > 1 && o->layer_split;
    m->octx = m->ctx;
    if (m->R > 1) { /* the other ranks' contexts (and, tensor-parallel, the communicator and threads) */
        for (int r = 1; r < m->R; r++) {
            m40_ctx_desc rd;
            m40_ctx_desc_init(&rd);
            rd.device = o->cpu ? M40_DEVICE_CPU : o->devices ? o->devices[r] : r;
            if (m40_ctx_create(&rd, &m->rk[r].ctx) != M40_OK) {
                fail(m, "rank %d's context: %s", r, m40_errmsg(m->rk[r].ctx));
                goto bad;
            }
        }
    }
    if (m->R > 1 && !m->layer) {
        m40_ctx *all[GLM_MAX_RANKS] = {m->ctx};
        for (int r = 1; r < m->R; r++) all[r] = m->rk[r].ctx;
        if (m40_comm_create(all, m->R, M40_COMM_AUTO, &m->comm) != M40_OK) {
            lib_fail(m, "the ranks' communicator");
            goto bad;
        }
        pthread_mutex_init(&m->pmu, NULL);
        pthread_cond_init(&m->pcv, NULL);
        pthread_cond_init(&m->dcv, NULL);
        m->pool = 1;
        for (int r = 1; r < m->R; r++) {
            rank_arg *a = malloc(sizeof *a);
            if (a) *a = (rank_arg){m, r, m->gen}; /* no job yet: open has not returned */
            if (!a || pthread_create(&m->rk[r].th, NULL, rank_main, a)) {
                free(a);
                fail(m, "cannot start rank %d's thread", r);
                goto bad;
            }
            m->rk[r].started = 1;
        }
    }
    m40_budget budget, *bp = NULL;
    if (o->budget) {
        if (m40_budget_preset(o->budget, &budget) != M40_OK) {
            fail(m, "unknown budget '%s' (m40-12g, m40-24g)", o->budget);
            goto bad;
        }
        bp = &budget;
    } else if (!o->cpu && m40_budget_device(m->ctx, &budget) == M40_OK) {
        bp = &budget;
    }
    /* the prefill graph first: it reads the checkpoint and says its shape */
    m40_chatglm2_desc d;
    m40_chatglm2_desc_init(&d);
    d.weights = o->dtype;
    d.ctx = m->L;
    d.chunk = m->T;
    d.all_logits = m->all_logits;
    d.shards = m->files;
    d.nshards = m->nfiles;
    d.budget = bp;
    d.progress = o->progress;
    d.progress_user = o->progress_user;
    d.slots = m->P > 1 ? m->P : 0; /* the prefill fills one conversation's row */
    if (m->R > 1 && !m->layer) {
        d.tp_size = m->R;
        d.comm = m->comm;
    }
    if (have_cfg) {
        d.config = m->cfg;
        d.check_config = 1;
    }
    if (o->random_shape) {
        d.config = m->cfg;
        d.random_weights = 1;
        d.seed = 1818;
        d.shards = NULL;
        d.nshards = 0;
    } else if (m40_chatglm2_config_of(m->ctx, m->files, m->nfiles, have_cfg ? &m->cfg : NULL,
                                      &m->cfg) != M40_OK) {
        lib_fail(m, o->path);
        goto bad;
    }
    if (o->random_shape) {
        if (d.weights == GLM_DTYPE_AUTO) d.weights = M40_WFMT_FP16;
    } else {
        const m40_st_tensor *w = NULL;
        const m40_wformat stored = stored_format(m, &w);
        if (check_qbits(m, o->path, qbits, w, stored)) goto bad;
        /* a shape the loader will name: let it, as int8 */
        if (d.weights == GLM_DTYPE_AUTO) d.weights = stored == M40_WFMT_COUNT ? M40_WFMT_INT8 : stored;
    }
    const m40_chatglm2_config *c = &m->cfg;
    /* layer split: stage r holds blocks [lb[r], lb[r + 1]), as even as the
    ** layer count allows (the first stages take the remainder) */
    int lb[GLM_MAX_RANKS + 1] = {0};
    if (m->layer) {
        if (c->layers < m->R) {
            fail(m, "%d devices for %d layers: at most one device per layer", m->R, c->layers);
            goto bad;
        }
        for (int r = 0; r < m->R; r++) lb[r + 1] = lb[r] + c->layers / m->R + (r < c->layers % m->R);
        d.layer_begin = 0;
        d.layer_end = lb[1];
        m->og = m->R - 1;
        m->octx = m->rk[m->og].ctx;
        if (!(m->hbuf = malloc((size_t)(m->T > m->P ? m->T : m->P) * (size_t)c->hidden * 4))) {
            fail(m, "out of host memory");
            goto bad;
        }
    }
    /* the prefill graph holds the weights and the KV cache (its plan counts
    ** both against the budget); the decode graph binds them */
    if (m40_chatglm2_graph(m->ctx, &d, NULL, &m->pg, &m->pi) != M40_OK) {
        lib_fail(m, "loading");
        goto bad;
    }
    m40_chatglm2_desc dd;
    m40_chatglm2_desc_decode(&dd, &d, m->pg, &m->pi);
    for (int b = 1;; b = b * 2 < m->P ? b * 2 : m->P) {
        dd.batch = b;
        if (m40_chatglm2_graph(m->ctx, &dd, NULL, &m->dg[m->ndg], &m->di[m->ndg]) != M40_OK) {
            lib_fail(m, "the decode graph");
            goto bad;
        }
        m->dbatch[m->ndg++] = b;
        if (b == m->P) break;
    }
    /* the short prefill graphs (the prefill graph at chunk t), best effort:
    ** one that does not fit (the budget, device memory) ends the ladder
    ** there; the full chunk serves every prompt all the same */
    m40_chatglm2_desc sd;
    const int smin = o->prefill_min > 0 ? o->prefill_min : 16;
    for (int t = smin; o->prefill_min >= 0 && t < m->T && m->nsg < MAX_SG; t *= 2) {
        short_desc(&sd, &d, m->pg, &m->pi, m->all_logits, t);
        if (m40_chatglm2_graph(m->ctx, &sd, NULL, &m->sg[m->nsg], &m->si[m->nsg]) != M40_OK) {
            m->sg[m->nsg] = NULL;
            break;
        }
        m->sT[m->nsg++] = t;
    }
    /* the other ranks: the same graphs, each with its share of the weights */
    for (int r = 1; r < m->R; r++) {
        glm_rank *k = &m->rk[r];
        m40_chatglm2_desc rd = d;
        m40_budget rb;
        if (m->layer) {
            rd.layer_begin = lb[r];
            rd.layer_end = lb[r + 1];
        } else {
            rd.tp_rank = r;
        }
        rd.check_config = 0;
        rd.config = *c;
        if (!o->budget && !o->cpu) rd.budget = m40_budget_device(k->ctx, &rb) == M40_OK ? &rb : NULL;
        if (m40_chatglm2_graph(k->ctx, &rd, NULL, &k->pg, &k->pi) != M40_OK) {
            fail(m, "loading rank %d: %s", r, m40_errmsg(k->ctx));
            goto bad;
        }
        for (int j = 0; j < m->nsg; j++) {
            short_desc(&sd, &rd, k->pg, &k->pi, m->all_logits, m->sT[j]);
            if (m40_chatglm2_graph(k->ctx, &sd, NULL, &k->sg[j], &k->si[j]) != M40_OK) {
                /* every rank runs the same graphs: the ladder ends at j on
                ** all of them (the earlier ranks' graphs from j on go) */
                k->sg[j] = NULL;
                for (int r2 = 0; r2 < r; r2++)
                    for (int j2 = j; j2 < m->nsg; j2++) {
                        m40_graph **pg2 = r2 ? &m->rk[r2].sg[j2] : &m->sg[j2];
                        m40_graph_destroy(*pg2);
                        *pg2 = NULL;
                    }
                m->nsg = j;
                break;
            }
        }
        m40_chatglm2_desc_decode(&rd, &rd, k->pg, &k->pi);
        for (int j = 0; j < m->ndg; j++) {
            rd.batch = m->dbatch[j];
            if (m40_chatglm2_graph(k->ctx, &rd, NULL, &k->dg[j], &k->di[j]) != M40_OK) {
                fail(m, "rank %d's decode graph: %s", r, m40_errmsg(k->ctx));
                goto bad;
            }
        }
    }
    /* the checkpoint's bytes are in the graphs now */
    for (int i = 0; i < m->nfiles; i++) m40_st_destroy(m->files[i]);
    m->nfiles = 0;
    int64_t last_row = m->all_logits ? m->T - 1 : 0;
    m->seq = calloc((size_t)m->P, sizeof *m->seq);
    m->slot_buf = calloc((size_t)m->P, sizeof *m->slot_buf);
    if (!m->seq || !m->slot_buf) {
        fail(m, "out of host memory");
        goto bad;
    }
    const m40_chatglm2_info *oin;
    m40_graph *og = rank_graph(m, m->og, 0, &oin);
    if (logits_view(m, og, oin->logits, last_row, &m->pview)) goto bad;
    for (int j = 0; j < m->nsg; j++) {
        og = rank_graph(m, m->og, SRC_SHORT + j, &oin);
        if (logits_view(m, og, oin->logits, m->all_logits ? m->sT[j] - 1 : 0, &m->sview[j]))
            goto bad;
    }
    for (int k = 0; k < m->ndg; k++) {
        if (!(m->drow[k] = calloc((size_t)m->dbatch[k], sizeof *m->drow[k]))) {
            fail(m, "out of host memory");
            goto bad;
        }
        og = rank_graph(m, m->og, 1 + k, &oin);
        for (int i = 0; i < m->dbatch[k]; i++)
            if (logits_view(m, og, oin->logits, i, &m->drow[k][i])) goto bad;
    }
    if (new_tensor(m, M40_DTYPE_I32, 2, 1, HISTORY, 0, 0, &m->t_hist) != M40_OK ||
        new_tensor(m, M40_DTYPE_I32, 1, 1, 0, 0, 0, &m->t_pos) != M40_OK ||
        new_tensor(m, M40_DTYPE_F32, 2, 1, 2, 0, 0, &m->t_out) != M40_OK) {
        lib_fail(m, "sampler tensors");
        goto bad;
    }
    size_t nbuf = (size_t)(m->T > m->P ? m->T : m->P);
    m->ids_buf = malloc(nbuf * sizeof *m->ids_buf);
    m->pos_buf = malloc(nbuf * sizeof *m->pos_buf);
    m->rows = m->all_logits ? malloc((size_t)m->T * (size_t)c->vocab * sizeof(float)) : NULL;
    if (!m->ids_buf || !m->pos_buf || (m->all_logits && !m->rows)) {
        fail(m, "out of host memory");
        goto bad;
    }
    for (int i = 0; i < m->P; i++) glm_seq_rewind(m, i, 0);
    *out = m;
    return 0;
bad:
    snprintf(err, errlen, "%s", m->err);
    glm_model_close(m);
    return -1;
}

void glm_model_close(glm_model *m) {
    if (!m) return;
    if (m->pool) {
        pthread_mutex_lock(&m->pmu);
        m->quit = 1;
        pthread_cond_broadcast(&m->pcv);
        pthread_mutex_unlock(&m->pmu);
    }
    for (int r = 1; r < m->R; r++)
        if (m->rk[r].started) pthread_join(m->rk[r].th, NULL);
    /* the logits' views first: with a layer split their base is the last
    ** rank's output (m40.h: views before their base) */
    m40_tensor_destroy(m->pview);
    for (int j = 0; j < m->nsg; j++) m40_tensor_destroy(m->sview[j]);
    for (int k = 0; k < m->ndg; k++) {
        for (int i = 0; m->drow[k] && i < m->dbatch[k]; i++) m40_tensor_destroy(m->drow[k][i]);
        free(m->drow[k]);
    }
    for (int r = 1; r < m->R; r++) {
        glm_rank *k = &m->rk[r];
        for (int j = MAX_DG - 1; j >= 0; j--) m40_graph_destroy(k->dg[j]);
        for (int j = MAX_SG - 1; j >= 0; j--) m40_graph_destroy(k->sg[j]);
        m40_graph_destroy(k->pg);
    }
    if (m->pool) {
        pthread_mutex_destroy(&m->pmu);
        pthread_cond_destroy(&m->pcv);
        pthread_cond_destroy(&m->dcv);
    }
    m40_comm_destroy(m->comm);
    free(m->seq);
    free(m->slot_buf);
    m40_tensor_destroy(m->t_hist);
    m40_tensor_destroy(m->t_pos);
    m40_tensor_destroy(m->t_out);
    for (int k = m->ndg - 1; k >= 0; k--) m40_graph_destroy(m->dg[k]);
    for (int j = MAX_SG - 1; j >= 0; j--) m40_graph_destroy(m->sg[j]);
    m40_graph_destroy(m->pg);
    for (int i = 0; i < m->nfiles; i++) m40_st_destroy(m->files[i]);
    free(m->ids_buf);
    free(m->pos_buf);
    free(m->rows);
    free(m->hbuf);
    for (int r = 1; r < m->R; r++) m40_ctx_destroy(m->rk[r].ctx);
    m40_ctx_destroy(m->ctx);
    free(m);
}

/* ---- running ---------------------------------------------------------------- */

static void push_history(glm_seq *q, int32_t id) {
    memmove(q->hist, q->hist + 1, (HISTORY - 1) * sizeof q->hist[0]);
    q->hist[HISTORY - 1] = id;
}

static int check_seq(glm_model *m, int seq) {
    if (seq < 0 || seq >= m->P)
        return fail(m, "conversation %d: the model serves %d (0..%d)", seq, m->P, m->P - 1);
    return 0;
}

/* A graph run overwrites the logits rows of every conversation that was
** going to sample from that graph's output: they have nothing to sample now. */
static void forget_last(glm_model *m, int src) {
    for (int i = 0; i < m->P; i++)
        if (m->seq[i].src == src) m->seq[i].src = -1;
}

static m40_tensor *last_view(glm_model *m, const glm_seq *q) {
    return q->src < 0            ? NULL
           : q->src == 0         ? m->pview
           : q->src >= SRC_SHORT ? m->sview[q->src - SRC_SHORT]
                                 : m->drow[q->src - 1][q->row];
}

int glm_seq_rewind(glm_model *m, int seq, int pos) {
    if (check_seq(m, seq)) return -1;
    glm_seq *q = &m->seq[seq];
    if (pos < 0 || pos > q->pos)
        return fail(m, "rewind to %d: the session holds %d tokens", pos, q->pos);
    /* the cache keeps positions < pos; what follows is overwritten by the
    ** next tokens. The penalty's history is not rebuilt (ids are gone). */
    q->pos = pos;
    if (pos == 0)
        for (int i = 0; i < HISTORY; i++) q->hist[i] = -1;
    q->src = -1;
    return 0;
}

int glm_rewind(glm_model *m, int pos) { return glm_seq_rewind(m, 0, pos); }

int glm_seq_set_history(glm_model *m, int seq, const int32_t *ids, int n) {
    if (check_seq(m, seq)) return -1;
    if (n < 0 || (n > 0 && !ids)) return fail(m, "history of %d ids", n);
    const int first = n > HISTORY ? n - HISTORY : 0;
    for (int i = 0; i < n; i++) /* all of them (only the last HISTORY are kept), before anything changes */
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab)
            return fail(m, "history id %d at %d is not in 0..%d", (int)ids[i], i, m->cfg.vocab - 1);
    glm_seq *q = &m->seq[seq];
    for (int i = 0; i < HISTORY; i++) q->hist[i] = -1;
    for (int i = first; i < n; i++) push_history(q, ids[i]);
    return 0;
}

void glm_reset(glm_model *m) { glm_seq_rewind(m, 0, 0); }

static int check_ids(glm_model *m, const glm_seq *q, const int32_t *ids, int n) {
    if (n < 1) return fail(m, "no ids");
    if ((int64_t)q->pos + n > m->L)
        return fail(m, "the context is full: %d tokens held, %d more, the cache holds %lld (a "
                    "longer --ctx, or a new session)", q->pos, n, (long long)m->L);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab)
            return fail(m, "id %d at %d is not in 0..%d", (int)ids[i], i, m->cfg.vocab - 1);
    return 0;
}

int glm_seq_prefill(glm_model *m, int seq, const int32_t *ids, int n, float *last, float *all) {
    if (check_seq(m, seq)) return -1;
    glm_seq *q = &m->seq[seq];
    if (check_ids(m, q, ids, n)) return -1;
    if (all && !m->all_logits) return fail(m, "every position's logits need all_logits at open");
    q->src = -1; /* until the last chunk is in: a failed chunk leaves nothing to sample */
    const int V = m->cfg.vocab;
    const int32_t slot = seq;
    int src = 0;
    for (int done = 0; done < n;) {
        /* a chunk runs in the smallest prefill graph that holds it, padded
        ** at the front (position -1: no token), so the graph's last row is
        ** the last real token */
        int T = m->T, k = n - done < T ? n - done : T;
        src = 0;
        for (int j = m->nsg - 1; j >= 0 && m->sT[j] >= k; j--) {
            src = SRC_SHORT + j;
            T = m->sT[j];
        }
        const int pad = T - k;
        for (int i = 0; i < T; i++) {
            m->ids_buf[i] = i < pad ? 0 : ids[done + i - pad];
            m->pos_buf[i] = i < pad ? -1 : q->pos + i - pad;
        }
        forget_last(m, src);
        if (feed(m, src, T, &slot)) return -1;
        if (all) {
            m40_tensor *tl;
            const m40_chatglm2_info *oin;
            m40_graph *og = rank_graph(m, m->og, src, &oin);
            if (m40_graph_get_tensor(og, oin->logits, &tl) != M40_OK)
                return lib_fail(m, "prefill tensors");
            if (m40_tensor_download(m->octx, tl, m->rows, (size_t)T * (size_t)V * 4) != M40_OK)
                return lib_fail(m, "prefill logits");
            memcpy(all + (size_t)done * V, m->rows + (size_t)pad * V, (size_t)k * V * sizeof(float));
        }
        for (int i = 0; i < k; i++) push_history(q, ids[done + i]);
        q->pos += k;
        done += k;
    }
    q->src = src;
    q->row = 0;
    if (last && m40_tensor_download(m->octx, last_view(m, q), last, (size_t)V * 4) != M40_OK)
        return lib_fail(m, "prefill logits");
    return 0;
}

int glm_prefill(glm_model *m, const int32_t *ids, int n, float *last, float *all) {
    return glm_seq_prefill(m, 0, ids, n, last, all);
}

int glm_step_batch(glm_model *m, int n, const int *seqs, const int32_t *ids) {
    if (n < 1 || n > m->P) return fail(m, "a step of %d conversations (1..%d)", n, m->P);
    int k = 0;
    while (m->dbatch[k] < n) k++;
    const int B = m->dbatch[k];
    for (int i = 0; i < m->P; i++) m->slot_buf[i] = -1; /* which row holds conversation i */
    for (int i = 0; i < n; i++) {
        if (check_seq(m, seqs[i])) return -1;
        if (m->slot_buf[seqs[i]] >= 0) return fail(m, "conversation %d twice in one step", seqs[i]);
        if (check_ids(m, &m->seq[seqs[i]], &ids[i], 1)) return -1;
        m->slot_buf[seqs[i]] = i;
    }
    /* rows 0..n-1: the conversations; the rest idle (position -1: no token,
    ** nothing appended; slot 0 is never touched by them) */
    for (int i = 0; i < B; i++) {
        m->ids_buf[i] = i < n ? ids[i] : 0;
        m->pos_buf[i] = i < n ? m->seq[seqs[i]].pos : -1;
        m->slot_buf[i] = i < n ? seqs[i] : 0;
    }
    /* the attention key bound of this step (m40_graph_set_attention_keys):
    ** 128, then powers of two, none from the cache length where that is
    ** past 1024 (up to 512 decode v5's ways, for one sequence to 1024 with
    ** splits of the keys, their splits from the bound within the cache:
    ** lib/ops/attention.c; past the edge v6, the same with or without a
    ** bound at the cache's length); a change drops
    ** the captured CUDA graph, captured again below (a few times as a
    ** conversation grows, and after a rewind) */
    int64_t keys = 0, kb = 128;
    for (int i = 0; i < n; i++)
        if (m->seq[seqs[i]].pos + 1 > keys) keys = m->seq[seqs[i]].pos + 1;
    while (kb < keys) kb *= 2;
    if (kb >= m->L && m->L > 1024) kb = 0;
    if (kb != m->dkeys[k]) {
        for (int r = 0; r < m->R; r++) {
            const m40_chatglm2_info *in;
            if (m40_graph_set_attention_keys(rank_graph(m, r, 1 + k, &in), kb) != M40_OK)
                return lib_fail(m, "attention key bound");
        }
        m->dkeys[k] = kb;
        m->captured[k] = 0;
    }
    if (feed(m, 1 + k, B, m->slot_buf)) return -1;
    /* on a GPU each step graph becomes one captured CUDA graph after its
    ** first run, on every rank or on none (a host all-reduce cannot be) */
    if (!m->captured[k] && !m->capture_failed[k]) {
        int ok = 1;
        for (int r = 0; r < m->R && ok; r++) {
            const m40_chatglm2_info *in;
            ok = m40_graph_capture(rank_graph(m, r, 1 + k, &in), 1) == M40_OK;
        }
        for (int r = 0; r < m->R && !ok; r++) {
            const m40_chatglm2_info *in;
            m40_graph_capture(rank_graph(m, r, 1 + k, &in), 0);
        }
        m->captured[k] = ok;
        m->capture_failed[k] = !ok;
    }
    forget_last(m, 1 + k);
    for (int i = 0; i < n; i++) {
        glm_seq *q = &m->seq[seqs[i]];
        push_history(q, ids[i]);
        q->pos++;
        q->src = 1 + k;
        q->row = i;
    }
    return 0;
}

int glm_step(glm_model *m, int32_t id, float *logits) {
    const int seq = 0;
    if (glm_step_batch(m, 1, &seq, &id)) return -1;
    if (logits && m40_tensor_download(m->octx, m->drow[0][0], logits, (size_t)m->cfg.vocab * 4) != M40_OK)
        return lib_fail(m, "decode logits");
    return 0;
}

int glm_seq_sample(glm_model *m, int seq, const m40_sampler_desc *s, int32_t *id, float *p) {
    if (check_seq(m, seq)) return -1;
    glm_seq *q = &m->seq[seq];
    m40_tensor *last = last_view(m, q);
    if (!last) return fail(m, "nothing to sample from: prefill or step first");
    int32_t pos = q->pos;
    float out[2];
    if (m40_tensor_upload(m->octx, m->t_hist, q->hist, sizeof q->hist) != M40_OK ||
        m40_tensor_upload(m->octx, m->t_pos, &pos, 4) != M40_OK ||
        m40_sample(m->octx, s, last, m->t_hist, m->t_pos, m->t_out) != M40_OK ||
        m40_tensor_download(m->octx, m->t_out, out, sizeof out) != M40_OK)
        return lib_fail(m, "sample");
    *id = (int32_t)out[0];
    if (p) *p = out[1];
    return 0;
}

int glm_seq_logits(glm_model *m, int seq, float *logits) {
    if (check_seq(m, seq)) return -1;
    m40_tensor *v = last_view(m, &m->seq[seq]);
    if (!v) return fail(m, "conversation %d has no logits: prefill or step it", seq);
    if (m40_tensor_download(m->octx, v, logits, (size_t)m->cfg.vocab * 4) != M40_OK)
        return lib_fail(m, "logits");
    return 0;
}

int glm_sample(glm_model *m, const m40_sampler_desc *s, int32_t *id, float *p) {
    return glm_seq_sample(m, 0, s, id, p);
}

/* ---- saving --------------------------------------------------------------- */

static const char *st_dtype(m40_dtype dt) {
    switch (dt) {
    case M40_DTYPE_F32: return "F32";
    case M40_DTYPE_F16: return "F16";
    case M40_DTYPE_I8: return "I8";
    case M40_DTYPE_I32: return "I32";
    default: return NULL;
    }
}

/* One safetensors file of what the prefill graph holds: every weight in
** its converted or quantized form (so the next load is a single mmap and
** no quantization), the config as metadata, and `extra` bytes (a
** tokenizer model) as the tensor "extra.tokenizer.model". */
int glm_model_save(glm_model *m, const char *path, const void *extra, size_t extra_len) {
    return glm_model_save_as(m, path, extra, extra_len, NULL);
}

int glm_model_save_as(glm_model *m, const char *path, const void *extra, size_t extra_len,
                      const char *chat_format) {
    if (m->R > 1) return fail(m, "save: the model is split over %d devices; save it from one", m->R);
    int n = m40_graph_get_tensor_count(m->pg), rc = -1;
    json_t *head = json_object(), *meta = json_object();
    FILE *f = NULL;
    char *tmp = NULL;
    void *buf = NULL;
    uint64_t off = 0;
    const m40_chatglm2_config *c = &m->cfg;
    char v[64];
    if (!head || !meta) return fail(m, "out of host memory");
#define META(k, fmt, x) (snprintf(v, sizeof v, fmt, x), json_object_set_new(meta, k, json_string(v)))
    META("num_layers", "%d", c->layers);
    META("hidden_size", "%d", c->hidden);
    META("ffn_hidden_size", "%d", c->ffn);
    META("num_attention_heads", "%d", c->heads);
    META("multi_query_group_num", "%d", c->kv_heads);
    META("kv_channels", "%d", c->head_dim);
    META("padded_vocab_size", "%d", c->vocab);
    META("layernorm_epsilon", "%.9g", (double)c->eps);
    META("rope_ratio", "%.9g", (double)c->rope_theta / 10000.0);
#undef META
    if (chat_format) json_object_set_new(meta, "chat_format", json_string(chat_format));
    json_object_set_new(head, "__metadata__", meta);
    /* the header: weights in declaration order, then the extra bytes */
    for (int id = 0; id < n; id++) {
        m40_graph_tensor_info ti;
        if (m40_graph_get_tensor_info(m->pg, id, &ti) != M40_OK) goto lib;
        if (ti.role != M40_ROLE_WEIGHT) continue;
        json_t *shape = json_array(), *e = json_object();
        for (int d = 0; d < ti.desc.ndim; d++) json_array_append_new(shape, json_integer(ti.desc.shape[d]));
        json_object_set_new(e, "dtype", json_string(st_dtype(ti.desc.dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", json_pack("[II]", (json_int_t)off,
                                                         (json_int_t)(off + ti.bytes)));
        json_object_set_new(head, ti.name, e);
        off += ti.bytes;
    }
    if (extra && extra_len)
        json_object_set_new(head, "extra.tokenizer.model",
                            json_pack("{s:s, s:[I], s:[II]}", "dtype", "I8", "shape",
                                      (json_int_t)extra_len, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + extra_len)));
    char *hj = json_dumps(head, JSON_COMPACT);
    if (!hj) {
        fail(m, "out of host memory");
        goto out;
    }
    size_t hl = strlen(hj), pad = (8 - hl % 8) % 8;
    uint64_t hlen = hl + pad;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hlen >> (8 * i));
    /* a new file beside the target, renamed onto it once complete: a failure
    ** (or a path that is a directory, a device, a read-only file) leaves
    ** whatever was at path as it was */
    const size_t pl = strlen(path);
    if (!(tmp = malloc(pl + 32))) {
        free(hj);
        fail(m, "out of host memory");
        goto out;
    }
    snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        fail(m, "%s: %s", tmp, strerror(errno));
        if (fd >= 0) close(fd), remove(tmp);
        free(tmp), tmp = NULL;
        free(hj);
        goto out;
    }
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(hj, 1, hl, f) == hl &&
             fwrite("        ", 1, pad, f) == pad;
    free(hj);
    /* the data, in the header's order */
    for (int id = 0; ok && id < n; id++) {
        m40_graph_tensor_info ti;
        m40_tensor *t;
        if (m40_graph_get_tensor_info(m->pg, id, &ti) != M40_OK) goto lib;
        if (ti.role != M40_ROLE_WEIGHT) continue;
        void *nb = realloc(buf, ti.bytes ? ti.bytes : 1);
        if (!nb) {
            fail(m, "out of host memory");
            goto out;
        }
        buf = nb;
        if (m40_graph_get_tensor(m->pg, id, &t) != M40_OK ||
            m40_tensor_download(m->ctx, t, buf, ti.bytes) != M40_OK)
            goto lib;
        ok = fwrite(buf, 1, ti.bytes, f) == ti.bytes;
    }
    if (ok && extra && extra_len) ok = fwrite(extra, 1, extra_len, f) == extra_len;
    if (ok && (fflush(f) != 0 || fsync(fileno(f)) != 0)) ok = 0;
    if (fclose(f) != 0) ok = 0;
    f = NULL;
    if (!ok) {
        fail(m, "%s: writing failed: %s (%s left as it was)", tmp, strerror(errno), path);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        fail(m, "%s: %s (the model was written to %s first; removed)", path, strerror(errno), tmp);
        goto out;
    }
    rc = 0;
    goto out;
lib:
    lib_fail(m, "save");
out:
    if (f) fclose(f);
    if (rc && tmp) remove(tmp);
    free(tmp);
    free(buf);
    json_decref(head);
    return rc;
}
