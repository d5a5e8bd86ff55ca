/* The memory planner: validation, execution order, liveness, in-place
** reuse, offsets in the activation arena, regions and the budget check.
**
** Offsets use "greedy by size" (Pisarchyk & Lee, 2020): storage blocks
** sorted by size, largest first, each put in the smallest gap among the
** already placed blocks whose live intervals overlap its own (best fit),
** else above them. Two more orders (size x lifetime, first step) are tried
** and the smallest arena kept. Ties break on the first step and then the
** id, so the plan is deterministic. The lower bound is the largest sum of live bytes
** over the steps; no placement can beat it. */
#include "graph_internal.h"
#include "../checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct storage {
    uint64_t size;   /* aligned bytes */
    int first, last; /* live steps, inclusive */
    int owner;       /* first tensor that uses it */
    uint64_t offset;
} storage;

typedef struct planner {
    m40_graph *g;
    int *pos;       /* node -> step */
    int *cons_off;  /* tensor -> first index in cons */
    int *cons;      /* consumer node indices, grouped by tensor */
    storage *st;
    int nst;
} planner;

static void planner_free(planner *p) {
    free(p->pos);
    free(p->cons_off);
    free(p->cons);
    free(p->st);
}

static bool in_arena(const m40__gtensor *t) {
    return !t->bound && (t->role == M40_ROLE_INPUT || t->role == M40_ROLE_ACTIVATION);
}

/* Consumers of each tensor (CSR); a node that reads a tensor twice is listed
** twice, which is harmless. */
static m40_status build_consumers(planner *p) {
    m40_graph *g = p->g;
    p->cons_off = calloc((size_t)g->ntensors + 1, sizeof *p->cons_off);
    int total = 0;
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].d.ninputs; i++)
            if (g->nodes[n].d.inputs[i] != M40_NO_TENSOR) total++;
    p->cons = malloc((size_t)(total ? total : 1) * sizeof *p->cons);
    int *fill = calloc((size_t)g->ntensors + 1, sizeof *fill);
    if (!p->cons_off || !p->cons || !fill) {
        free(fill);
        return m40__err(g->ctx, M40_ERR_OOM_HOST, "m40_graph_plan: out of host memory");
    }
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].d.ninputs; i++)
            if (g->nodes[n].d.inputs[i] != M40_NO_TENSOR) p->cons_off[g->nodes[n].d.inputs[i] + 1]++;
    for (int t = 0; t < g->ntensors; t++) p->cons_off[t + 1] += p->cons_off[t];
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].d.ninputs; i++) {
            int t = g->nodes[n].d.inputs[i];
            if (t != M40_NO_TENSOR) p->cons[p->cons_off[t] + fill[t]++] = n;
        }
    free(fill);
    return M40_OK;
}

static m40_status validate(planner *p) {
    m40_graph *g = p->g;
    if (g->nnodes == 0)
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_plan: the graph has no nodes");
    for (int t = 0; t < g->ntensors; t++) {
        const m40__gtensor *x = &g->tensors[t];
        if (x->role != M40_ROLE_ACTIVATION) continue;
        int ncons = p->cons_off[t + 1] - p->cons_off[t];
        if (x->producer < 0)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                            "m40_graph_plan: dangling tensor '%s': an ACTIVATION that no node "
                            "produces%s%s%s (declare it an INPUT, or add its producer)",
                            x->name, ncons ? " but node '" : "",
                            ncons ? g->nodes[p->cons[p->cons_off[t]]].name : "",
                            ncons ? "' reads it" : "");
        if (!ncons && !x->is_output)
            return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                            "m40_graph_plan: dangling tensor '%s': produced by node '%s' but "
                            "never read and not an output (mark it with "
                            "m40_graph_mark_output, or drop the node)",
                            x->name, g->nodes[x->producer].name);
    }
    return M40_OK;
}

/* Names one cycle among the nodes left unordered by the topological sort. */
static m40_status report_cycle(planner *p, const bool *placed) {
    m40_graph *g = p->g;
    int start = -1;
    for (int n = 0; n < g->nnodes && start < 0; n++)
        if (!placed[n]) start = n;
    /* walk backwards along unplaced producers until a node repeats */
    int *seen = malloc((size_t)g->nnodes * sizeof *seen), *path = malloc((size_t)g->nnodes * sizeof *path);
    if (!seen || !path) {
        free(seen);
        free(path);
        return m40__err(g->ctx, M40_ERR_INVALID_ARG, "m40_graph_plan: the graph has a cycle");
    }
    for (int n = 0; n < g->nnodes; n++) seen[n] = -1;
    int len = 0, n = start;
    while (seen[n] < 0) {
        seen[n] = len;
        path[len++] = n;
        int next = -1;
        const m40__gnode *nd = &g->nodes[n];
        for (int i = 0; i < nd->d.ninputs && next < 0; i++) {
            int t = nd->d.inputs[i];
            if (t != M40_NO_TENSOR && g->tensors[t].producer >= 0 && !placed[g->tensors[t].producer])
                next = g->tensors[t].producer;
        }
        if (next < 0) break; /* cannot happen: an unplaced node waits on one */
        n = next;
    }
    char msg[400] = "";
    size_t used = 0;
    /* path[seen[n]..len-1] is the cycle, each node reading the next's output;
    ** print it in data-flow order */
    int from = seen[n] >= 0 ? seen[n] : 0;
    for (int k = len - 1; k >= from && used < sizeof msg - 48; k--)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "'%s' -> ", g->nodes[path[k]].name);
    snprintf(msg + used, sizeof msg - used, "'%s'", g->nodes[path[len - 1]].name);
    free(seen);
    free(path);
    return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                    "m40_graph_plan: the graph has a cycle: %s (a node's output feeds back "
                    "into its own inputs)", msg);
}

/* Kahn's algorithm; among ready nodes the lowest index runs first, so a
** graph built in a valid order runs in that order. */
static m40_status topo_order(planner *p) {
    m40_graph *g = p->g;
    int *indeg = calloc((size_t)g->nnodes, sizeof *indeg);
    bool *placed = calloc((size_t)g->nnodes, sizeof *placed);
    free(g->order);
    g->order = malloc((size_t)g->nnodes * sizeof *g->order);
    p->pos = malloc((size_t)g->nnodes * sizeof *p->pos);
    m40_status st = M40_OK;
    if (!indeg || !placed || !g->order || !p->pos) {
        st = m40__err(g->ctx, M40_ERR_OOM_HOST, "m40_graph_plan: out of host memory");
        goto done;
    }
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].d.ninputs; i++) {
            int t = g->nodes[n].d.inputs[i];
            if (t != M40_NO_TENSOR && g->tensors[t].producer >= 0) indeg[n]++;
        }
    int nsteps = 0, lowest = 0; /* no ready, unplaced node lies below `lowest` */
    while (nsteps < g->nnodes) {
        int pick = -1;
        for (int n = lowest; n < g->nnodes; n++)
            if (!placed[n] && indeg[n] == 0) {
                pick = n;
                break;
            }
        if (pick < 0) break;
        placed[pick] = true;
        p->pos[pick] = nsteps;
        g->order[nsteps++] = pick;
        lowest = pick + 1; /* nodes in [old lowest, pick) were not ready */
        int out = g->nodes[pick].d.output;
        for (int k = p->cons_off[out]; k < p->cons_off[out + 1]; k++) {
            int c = p->cons[k];
            if (--indeg[c] == 0 && c < lowest) lowest = c;
        }
    }
    if (nsteps < g->nnodes) st = report_cycle(p, placed);
done:
    free(indeg);
    free(placed);
    return st;
}

/* Live intervals, in-place sharing, storage blocks. */
static m40_status liveness(planner *p) {
    m40_graph *g = p->g;
    int last_step = g->nnodes - 1;
    p->st = malloc((size_t)(g->ntensors ? g->ntensors : 1) * sizeof *p->st);
    if (!p->st) return m40__err(g->ctx, M40_ERR_OOM_HOST, "m40_graph_plan: out of host memory");
    p->nst = 0;
    for (int t = 0; t < g->ntensors; t++) {
        m40__gtensor *x = &g->tensors[t];
        x->storage = -1;
        x->shares_with = -1;
        x->first = x->last = -1;
        if (!in_arena(x)) continue;
        if (x->role == M40_ROLE_INPUT) { /* written before the run, kept across runs */
            x->first = 0;
            x->last = last_step;
        } else {
            x->first = x->last = p->pos[x->producer];
            for (int k = p->cons_off[t]; k < p->cons_off[t + 1]; k++)
                if (p->pos[p->cons[k]] > x->last) x->last = p->pos[p->cons[k]];
            if (x->is_output) x->last = last_step;
        }
    }
    g->info.inplace = 0;
    /* inputs first, then outputs in execution order: storage ids follow time */
    for (int t = 0; t < g->ntensors; t++) {
        m40__gtensor *x = &g->tensors[t];
        if (!in_arena(x) || x->role != M40_ROLE_INPUT) continue;
        p->st[p->nst] = (storage){m40__align_up(x->bytes, M40_GRAPH_ALIGN), x->first, x->last, t, 0};
        x->storage = p->nst++;
    }
    for (int s = 0; s < g->nnodes; s++) {
        const m40__gnode *n = &g->nodes[g->order[s]];
        m40__gtensor *y = &g->tensors[n->d.output];
        if (!in_arena(y)) continue;
        int a = n->d.inputs[0];
        if (m40_op_inplace(n->d.op) && a != M40_NO_TENSOR && y->bytes > 0) {
            m40__gtensor *x = &g->tensors[a];
            if (in_arena(x) && x->role == M40_ROLE_ACTIVATION && !x->is_output &&
                x->storage >= 0 && x->bytes == y->bytes &&
                m40_dtype_size(x->desc.dtype) == m40_dtype_size(y->desc.dtype) &&
                p->st[x->storage].last == s) {
                y->storage = x->storage;
                y->shares_with = p->st[x->storage].owner;
                if (y->last > p->st[y->storage].last) p->st[y->storage].last = y->last;
                g->info.inplace++;
                continue;
            }
        }
        p->st[p->nst] = (storage){m40__align_up(y->bytes, M40_GRAPH_ALIGN), y->first, y->last,
                                  n->d.output, 0};
        y->storage = p->nst++;
    }
    return M40_OK;
}

/* Placement order: k1 descending, then k2 ascending, then id. */
typedef struct { uint64_t k1; int64_t k2; int id; } sref;
static int sref_cmp(const void *pa, const void *pb) {
    const sref *a = pa, *b = pb;
    if (a->k1 != b->k1) return a->k1 > b->k1 ? -1 : 1;
    if (a->k2 != b->k2) return a->k2 < b->k2 ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}
static int off_cmp(const void *pa, const void *pb) {
    const storage *a = *(const storage *const *)pa, *b = *(const storage *const *)pb;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    return a->size < b->size ? -1 : a->size > b->size;
}

/* One best-fit pass in the given order; writes offsets, returns the top. */
static uint64_t place_pass(planner *p, const sref *order, const storage **placed,
                           const storage **live) {
    int nplaced = 0;
    uint64_t top = 0;
    for (int i = 0; i < p->nst; i++) {
        storage *s = &p->st[order[i].id];
        int nlive = 0;
        for (int k = 0; k < nplaced; k++)
            if (placed[k]->first <= s->last && s->first <= placed[k]->last) live[nlive++] = placed[k];
        qsort(live, (size_t)nlive, sizeof *live, off_cmp);
        uint64_t prev_end = 0, best_gap = UINT64_MAX, best_off = 0;
        bool found = false;
        for (int k = 0; k < nlive; k++) {
            if (live[k]->offset > prev_end) {
                uint64_t gap = live[k]->offset - prev_end;
                if (gap >= s->size && gap < best_gap) {
                    best_gap = gap;
                    best_off = prev_end;
                    found = true;
                }
            }
            if (live[k]->offset + live[k]->size > prev_end) prev_end = live[k]->offset + live[k]->size;
        }
        s->offset = found ? best_off : prev_end;
        if (s->offset + s->size > top) top = s->offset + s->size;
        placed[nplaced++] = s;
    }
    return top;
}

/* Best fit in three orders, keeping the smallest arena (the first on ties):
** by size (greedy by size), by size x lifetime, and by first step (the
** order an online allocator sees). Returns the arena size. */
static m40_status place(planner *p, uint64_t *arena) {
    size_t n = (size_t)(p->nst ? p->nst : 1);
    sref *order = malloc(n * sizeof *order);
    const storage **placed = malloc(n * sizeof *placed), **live = malloc(n * sizeof *live);
    uint64_t *best_off = malloc(n * sizeof *best_off);
    if (!order || !placed || !live || !best_off) {
        free(order), free(placed), free(live), free(best_off);
        return m40__err(p->g->ctx, M40_ERR_OOM_HOST, "m40_graph_plan: out of host memory");
    }
    uint64_t best = UINT64_MAX;
    for (int mode = 0; mode < 3; mode++) {
        for (int i = 0; i < p->nst; i++) {
            const storage *s = &p->st[i];
            uint64_t life = (uint64_t)(s->last - s->first + 1);
            if (mode == 0) order[i] = (sref){s->size, s->first, i};
            else if (mode == 1) order[i] = (sref){m40__sat_mul_u64(s->size, life), s->first, i};
            else order[i] = (sref){UINT64_MAX - (uint64_t)s->first, -(int64_t)s->size, i};
        }
        qsort(order, (size_t)p->nst, sizeof *order, sref_cmp);
        uint64_t top = place_pass(p, order, placed, live);
        if (top < best) {
            best = top;
            for (int i = 0; i < p->nst; i++) best_off[i] = p->st[i].offset;
        }
    }
    for (int i = 0; i < p->nst; i++) p->st[i].offset = best_off[i];
    free(order), free(placed), free(live), free(best_off);
    *arena = p->nst ? best : 0;
    return M40_OK;
}

/* Largest sum of live storage bytes over the steps (difference array). */
static m40_status lower_bound(planner *p, uint64_t *lb, int *peak) {
    int n = p->g->nnodes;
    int64_t *delta = calloc((size_t)n + 1, sizeof *delta);
    if (!delta) return m40__err(p->g->ctx, M40_ERR_OOM_HOST, "m40_graph_plan: out of host memory");
    for (int i = 0; i < p->nst; i++) {
        delta[p->st[i].first] += (int64_t)p->st[i].size;
        delta[p->st[i].last + 1] -= (int64_t)p->st[i].size;
    }
    int64_t cur = 0, best = 0;
    *peak = 0;
    for (int s = 0; s < n; s++) {
        cur += delta[s];
        if (cur > best) {
            best = cur;
            *peak = s;
        }
    }
    free(delta);
    *lb = (uint64_t)best;
    return M40_OK;
}

static m40_status too_large(m40_graph *g, const char *what, const char *tensor) {
    return m40__err(g->ctx, M40_ERR_INVALID_ARG,
                    "m40_graph_plan: the %s bytes%s%s%s exceed 2^62 (M40_MAX_TENSOR_BYTES); no "
                    "device has that much memory", what, tensor ? " (at '" : "",
                    tensor ? tensor : "", tensor ? "')" : "");
}

static m40_status budget_check(m40_graph *g, const m40_budget *b) {
    m40_plan_info *in = &g->info;
    in->usable_bytes = b ? b->usable_bytes : UINT64_MAX;
    in->fits = !b || in->total_bytes <= b->usable_bytes;
    in->headroom_bytes = b ? m40__headroom(b->usable_bytes, in->total_bytes) : INT64_MAX;
    if (in->fits) return M40_OK;
    /* the first region, in allocation order, that crosses the budget */
    uint64_t before = 0;
    int r = 0;
    for (; r < M40_REGION_COUNT - 1; r++) {
        if (before + in->region_bytes[r] > b->usable_bytes) break;
        before += in->region_bytes[r];
    }
    uint64_t room = b->usable_bytes > before ? b->usable_bytes - before : 0;
    double frac = in->region_bytes[r] ? (double)room / (double)in->region_bytes[r] : 0.0;
    char need[32], have[32], short_by[32], reg[32], hint[200];
    switch (r) {
    case M40_REGION_WEIGHTS:
        snprintf(hint, sizeof hint, "store the weights as int8 (half of f16) or int4 "
                 "(a quarter), or use a larger card");
        break;
    case M40_REGION_KV:
        snprintf(hint, sizeof hint, "%.0f%% of the KV cache fits: shorten the context to "
                 "about that fraction, or quantize the weights", 100.0 * frac);
        break;
    case M40_REGION_WORKSPACE:
        snprintf(hint, sizeof hint, "an op's scratch is too large: split its batch");
        break;
    default:
        snprintf(hint, sizeof hint, "%.0f%% of the activations fit: a batch (or prefill "
                 "chunk) about that fraction of the current one would fit", 100.0 * frac);
        break;
    }
    return m40__err(g->ctx, M40_ERR_OOM_DEVICE,
                    "m40_graph_plan: needs %s but budget '%s' has %s usable: region %s (%s) "
                    "does not fit, short by %s; %s",
                    m40__fmt_bytes(in->total_bytes, need, sizeof need), b->name,
                    m40__fmt_bytes(b->usable_bytes, have, sizeof have),
                    m40_region_name((m40_region)r),
                    m40__fmt_bytes(in->region_bytes[r], reg, sizeof reg),
                    m40__fmt_bytes(in->total_bytes - b->usable_bytes, short_by, sizeof short_by),
                    hint);
}

m40_status m40_graph_plan(m40_graph *g, const m40_budget *budget, m40_plan_info *info) {
    if (!g) return M40_ERR_INVALID_ARG;
    m40_status st = m40__ctx_check(g->ctx);
    if (st != M40_OK) return st;
    if (g->state == M40__G_ALLOCATED)
        return m40__err(g->ctx, M40_ERR_STATE, "m40_graph_plan: the graph is already allocated");
    planner p = {.g = g};
    memset(&g->info, 0, sizeof g->info);
    g->state = M40__G_BUILD;
    if ((st = build_consumers(&p)) != M40_OK || (st = validate(&p)) != M40_OK ||
        (st = topo_order(&p)) != M40_OK || (st = liveness(&p)) != M40_OK)
        goto out;
    /* offsets are at most the sum of all blocks: keep that sum in range so
    ** that no offset + size in place() or lower_bound() can wrap */
    uint64_t all = 0;
    for (int i = 0; i < p.nst; i++)
        if (m40__add_u64(all, p.st[i].size, &all) || all > M40_MAX_BYTES) {
            st = too_large(g, "activations", g->tensors[p.st[i].owner].name);
            goto out;
        }
    uint64_t arena = 0;
    if ((st = place(&p, &arena)) != M40_OK ||
        (st = lower_bound(&p, &g->info.arena_lower_bound, &g->info.peak_step)) != M40_OK)
        goto out;
    /* persistent regions: declaration order; workspace: the largest op's.
    ** Every tensor is <= M40_MAX_BYTES (add_tensor), but a graph of many
    ** can sum past 2^64: each sum is checked against the same cap. */
    uint64_t *rb = g->info.region_bytes, ws = 0;
    for (int t = 0; t < g->ntensors; t++) {
        m40__gtensor *x = &g->tensors[t];
        if (x->bound) {
            x->region = -1;
            g->info.external_bytes = m40__sat_add_u64(g->info.external_bytes, x->bytes);
            continue;
        }
        if (x->role == M40_ROLE_WEIGHT || x->role == M40_ROLE_STATE) {
            x->region = x->role == M40_ROLE_WEIGHT ? M40_REGION_WEIGHTS : M40_REGION_KV;
            x->offset = rb[x->region];
            x->size = m40__align_up(x->bytes, M40_GRAPH_ALIGN);
            if (m40__add_u64(rb[x->region], x->size, &rb[x->region]) ||
                rb[x->region] > M40_MAX_BYTES) {
                st = too_large(g, m40_region_name((m40_region)x->region), x->name);
                goto out;
            }
        } else {
            x->region = M40_REGION_ACTIVATIONS;
            x->offset = p.st[x->storage].offset;
            x->size = p.st[x->storage].size;
        }
    }
    int wsn = -1;
    for (int n = 0; n < g->nnodes; n++)
        if (g->nodes[n].workspace > ws) ws = g->nodes[n].workspace, wsn = n;
    if (ws > M40_MAX_BYTES) {
        st = too_large(g, "workspace", g->nodes[wsn].name);
        goto out;
    }
    rb[M40_REGION_WORKSPACE] = m40__align_up(ws, M40_GRAPH_ALIGN);
    rb[M40_REGION_ACTIVATIONS] = arena;
    for (int r = 0; r < M40_REGION_COUNT; r++)
        if (m40__add_u64(g->info.total_bytes, rb[r], &g->info.total_bytes) ||
            g->info.total_bytes > M40_MAX_BYTES) {
            st = too_large(g, "total", NULL);
            goto out;
        }
    g->info.nodes = g->nnodes;
    g->info.tensors = g->ntensors;
    g->state = M40__G_PLANNED;
    st = budget_check(g, budget);
out:
    if (info) *info = g->info;
    planner_free(&p);
    if (st != M40_OK && st != M40_ERR_OOM_DEVICE) g->state = M40__G_BUILD;
    return st;
}
