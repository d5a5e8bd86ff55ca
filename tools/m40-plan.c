/* m40-plan: the device-memory plan of a built-in model on a 12 GB or 24 GB
** M40, without a GPU. Bytes per region, total, headroom, fits or not, and
** what would fit (batch, context, int8/int4).
**
**   m40-plan --model chatglm2-6b --dtype int4 --card m40-12g --ctx 8192 --json
**   m40-plan --model resnet50 --batch 64 --card m40-24g --json
**   m40-plan --model chatglm2-6b --dtype fp16 --cards 2xm40-12g
**   m40-plan --model chatglm2-6b --cards m40-24g,m40-12g --json
**
** Exit status: 0 when a plan was printed (fitting or not: see "fits"),
** 1 on an internal error, 2 on bad options. */
#include "m40/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fputs("usage: m40-plan --model resnet50|chatglm2-6b [options]\n"
          "  --dtype fp32|fp16|int8|int4|int4g128  weight format (resnet50: fp32; chatglm2-6b: fp16)\n"
          "  --batch N                    images or sequences (default 1)\n"
          "  --ctx N|max                  chatglm2-6b context length (default 8192);\n"
          "                               max = the longest context that fits\n"
          "  --chunk N                    chatglm2-6b prefill chunk in tokens (default 512)\n"
          "  --card NAME                  m40-12g (default), m40-24g, m40-12g-noecc,\n"
          "                               m40-24g-noecc, all, or device (free memory of\n"
          "                               GPU --device, needs a CUDA build and a GPU)\n"
          "  --cards LIST                 several cards, a layer split (chatglm2-6b): names as\n"
          "                               for --card (presets) or NxNAME, comma-separated,\n"
          "                               e.g. 2xm40-12g or m40-24g,m40-12g (at most 16)\n"
          "  --split layer|tensor         with --cards: consecutive layers per card (default),\n"
          "                               or each card a share of every layer (tensor parallel)\n"
          "  --device N                   GPU ordinal for --card device (default 0)\n"
          "  --budget BYTES               explicit usable bytes (suffixes K M G, KiB MiB GiB);\n"
          "                               overrides --card\n"
          "  --tensors                    also list every tensor's region and offset\n"
          "  --json                       one JSON object (an array with --card all)\n"
          "  -h, --help\n", f);
}

static int bad(const char *fmt, const char *a, const char *b) {
    fputs("m40-plan: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputs("\n(m40-plan --help lists the options)\n", stderr);
    return 2;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s || !*s) return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* "11.5GiB", "12000000000", "512M". Returns 1, or 0 with *why set: a
** budget must be a finite number of bytes from 1 MiB (a bare "0.5" is half
** a byte, almost surely a missing suffix: said, not silently planned as
** "no budget") to 2^62 (M40_MAX_TENSOR_BYTES; beyond that no sum of
** planned bytes is exact). */
static int parse_bytes(const char *s, uint64_t *out, const char **why) {
    *why = "is not a byte count (e.g. 11GiB, 11500M, 12000000000)";
    if (!s || !*s) return 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s) return 0;
    if (!isfinite(v)) {
        *why = "is not a finite number of bytes (e.g. 11GiB)";
        return 0;
    }
    if (errno == ERANGE || v <= 0) {
        *why = "must be a positive byte count (e.g. 11GiB)";
        return 0;
    }
    static const struct { const char *suf; double mul; } sufs[] = {
        {"", 1}, {"B", 1}, {"K", 1e3}, {"KB", 1e3}, {"M", 1e6}, {"MB", 1e6}, {"G", 1e9},
        {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (strcmp(end, sufs[i].suf) == 0) {
            double b = v * sufs[i].mul;
            if (b < 1048576.0) {
                *why = "is under 1 MiB (budgets are in bytes: add a suffix, e.g. 0.5GiB)";
                return 0;
            }
            if (b > 4611686018427387904.0) { /* 2^62, exact in a double */
                *why = "is over 2^62 bytes (4 EiB), more than any device";
                return 0;
            }
            *out = (uint64_t)b;
            return 1;
        }
    *why = "has an unknown suffix (K M G KB MB GB KiB MiB GiB)";
    return 0;
}

static const char *gib(uint64_t b, char *buf, size_t n) {
    const double k = 1024.0;
    if (b >= (uint64_t)1 << 30) snprintf(buf, n, "%.2f GiB", (double)b / (k * k * k));
    else if (b >= (uint64_t)1 << 20) snprintf(buf, n, "%.1f MiB", (double)b / (k * k));
    else snprintf(buf, n, "%.1f KiB", (double)b / k);
    return buf;
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

typedef struct opts {
    m40_model_desc d;
    int ctx_max, json, tensors, device, have_dtype, have_ctx, have_chunk;
    const char *card, *cards, *split;
    uint64_t budget;
} opts;

static double ratio(uint64_t a, uint64_t lb) { return lb ? (double)a / (double)lb : 1.0; }

static void print_json(const opts *o, const m40_model_desc *d, const m40_budget *b,
                       const m40_model_plan *mp, const char *msg) {
    const m40_plan_info *p = &mp->plan;
    bool glm = d->model == M40_MODEL_CHATGLM2_6B;
    printf("{\"model\": \"%s\", \"dtype\": \"%s\", \"batch\": %d", m40_model_name(d->model),
           m40_wformat_name(d->weights), d->batch);
    if (glm) printf(", \"ctx\": %" PRId64 ", \"chunk\": %d", d->ctx, d->chunk);
    printf(", \"card\": ");
    json_str(b->name);
    printf(", \"board_bytes\": %" PRIu64 ", \"reserved_bytes\": %" PRIu64
           ", \"usable_bytes\": %" PRIu64 ", \"params\": %" PRIu64 ", \"regions\": {",
           b->board_bytes, b->reserved_bytes, b->usable_bytes, mp->params);
    for (int r = 0; r < M40_REGION_COUNT; r++)
        printf("%s\"%s\": %" PRIu64, r ? ", " : "", m40_region_name((m40_region)r),
               p->region_bytes[r]);
    printf("}, \"peak_bytes\": %" PRIu64 ", \"headroom_bytes\": %" PRId64
           ", \"fits\": %s", p->total_bytes, p->headroom_bytes, p->fits ? "true" : "false");
    printf(", \"activations\": {");
    for (int ph = 0; ph < mp->phases; ph++)
        printf("%s\"%s\": {\"arena_bytes\": %" PRIu64 ", \"lower_bound_bytes\": %" PRIu64
               ", \"ratio\": %.4f, \"workspace_bytes\": %" PRIu64 "}",
               ph ? ", " : "", glm ? (ph ? "decode" : "prefill") : "forward", mp->arena[ph],
               mp->lower_bound[ph], ratio(mp->arena[ph], mp->lower_bound[ph]),
               mp->workspace[ph]);
    printf("}, \"max_batch\": %d", mp->max_batch);
    if (glm) {
        printf(", \"kv_bytes_per_token\": %" PRIu64 ", \"max_ctx\": %" PRId64
               ", \"model_max_ctx\": %" PRId64 ", \"max_ctx_memory\": %" PRId64
               ", \"ctx_was_max\": %s, \"formats\": [",
               mp->kv_bytes_per_token, mp->max_ctx, mp->model_max_ctx, mp->max_ctx_memory,
               o->ctx_max ? "true" : "false");
        for (int f = 0; f < M40_WFMT_COUNT; f++)
            printf("%s{\"dtype\": \"%s\", \"fits\": %s, \"max_ctx\": %" PRId64 "}", f ? ", " : "",
                   m40_wformat_name((m40_wformat)f), mp->fits_format[f] == 1 ? "true" : "false",
                   mp->max_ctx_format[f]);
        printf("]");
    }
    printf(", \"message\": ");
    json_str(msg ? msg : "");
    printf("}");
}

static void print_text(const opts *o, const m40_model_desc *d, const m40_budget *b,
                       const m40_model_plan *mp, const char *msg) {
    const m40_plan_info *p = &mp->plan;
    bool glm = d->model == M40_MODEL_CHATGLM2_6B;
    char s1[32], s2[48], s3[32];
    printf("%s %s, batch %d", m40_model_name(d->model), m40_wformat_name(d->weights), d->batch);
    if (glm) printf(", ctx %" PRId64 "%s (prefill chunk %d)", d->ctx,
                    !o->ctx_max ? "" : mp->max_ctx > 0 ? " (longest that fits)"
                                                       : " (no context fits; planned at 1)",
                    d->chunk);
    printf(" on %s\n", b->name);
    if (b->board_bytes)
        printf("  budget       %s board - %s reserved (ECC, driver, CUDA context) = %s usable\n",
               gib(b->board_bytes, s1, sizeof s1), gib(b->reserved_bytes, s2, sizeof s2),
               gib(b->usable_bytes, s3, sizeof s3));
    else
        printf("  budget       %s usable\n", gib(b->usable_bytes, s1, sizeof s1));
    printf("  parameters   %" PRIu64 "\n", mp->params);
    for (int r = 0; r < M40_REGION_COUNT; r++) {
        printf("  %-12s %12s", m40_region_name((m40_region)r),
               gib(p->region_bytes[r], s1, sizeof s1));
        if (r == M40_REGION_KV && glm)
            printf("   (%s per token)", gib(mp->kv_bytes_per_token, s2, sizeof s2));
        if (r == M40_REGION_ACTIVATIONS)
            for (int ph = 0; ph < mp->phases; ph++)
                printf("%s%s %s, %.3fx its lower bound", ph ? "; " : "   (",
                       glm ? (ph ? "decode" : "prefill") : "arena",
                       gib(mp->arena[ph], s2, sizeof s2),
                       ratio(mp->arena[ph], mp->lower_bound[ph]));
        if (r == M40_REGION_ACTIVATIONS) printf(")");
        printf("\n");
    }
    printf("  %-12s %12s\n", "total", gib(p->total_bytes, s1, sizeof s1));
    snprintf(s2, sizeof s2, "%s%s", p->headroom_bytes < 0 ? "-" : "",
             gib((uint64_t)(p->headroom_bytes < 0 ? -p->headroom_bytes : p->headroom_bytes), s1,
                 sizeof s1));
    printf("  %-12s %12s\n", "headroom", s2);
    printf("  %-12s %12s\n", "fits", p->fits ? "yes" : "NO");
    if (glm) {
        printf("  longest context that fits: %" PRId64, mp->max_ctx);
        if (mp->max_ctx_memory >= mp->model_max_ctx)
            printf(" (the model's limit; memory alone allows %" PRId64 ")", mp->max_ctx_memory);
        printf("\n  formats at this batch: ");
        for (int f = 0; f < M40_WFMT_COUNT; f++)
            printf("%s%s %s (ctx <= %" PRId64 ")", f ? ", " : "", m40_wformat_name((m40_wformat)f),
                   mp->fits_format[f] == 1 ? "fits" : "no", mp->max_ctx_format[f]);
        printf("\n");
    }
    printf("  largest batch that fits%s: %d\n", glm ? " at this ctx" : "", mp->max_batch);
    if (msg) printf("  %s\n", msg);
}

static void print_tensors(m40_ctx *ctx, const m40_model_desc *d) {
    m40_graph *g = NULL;
    if (m40_model_graph(ctx, d, M40_PHASE_PREFILL, &g) != M40_OK) return;
    if (m40_graph_plan(g, NULL, NULL) == M40_OK) {
        printf("  %-58s %-12s %14s %12s %s\n", "tensor", "region", "offset", "bytes", "live");
        for (int i = 0; i < m40_graph_get_tensor_count(g); i++) {
            m40_graph_tensor_info ti;
            if (m40_graph_get_tensor_info(g, i, &ti) != M40_OK) continue;
            printf("  %-58s %-12s %14" PRIu64 " %12" PRIu64, ti.name,
                   ti.region < 0 ? "bound" : m40_region_name((m40_region)ti.region), ti.offset,
                   ti.size);
            if (ti.first_step >= 0) printf(" %d..%d", ti.first_step, ti.last_step);
            if (ti.shares_with >= 0) {
                m40_graph_tensor_info o;
                if (m40_graph_get_tensor_info(g, ti.shares_with, &o) == M40_OK)
                    printf(" (in place of %s)", o.name);
            }
            printf("\n");
        }
    }
    m40_graph_destroy(g);
}

/* Plans one card; returns the exit status. */
static int plan_card(m40_ctx *ctx, opts *o, const char *card, int first) {
    m40_budget b;
    m40_ctx *dev = NULL;
    if (o->budget) {
        m40_budget_bytes(o->budget, &b);
    } else if (strcmp(card, "device") == 0) {
        m40_ctx_desc cd;
        m40_ctx_desc_init(&cd);
        cd.device = o->device;
        m40_status st = m40_ctx_create(&cd, &dev);
        if (st == M40_OK) st = m40_budget_device(dev, &b);
        if (st != M40_OK) {
            fprintf(stderr, "m40-plan: --card device: %s\n", dev ? m40_errmsg(dev) : m40_status_str(st));
            m40_ctx_destroy(dev);
            return 1;
        }
        m40_ctx_destroy(dev);
    } else if (m40_budget_preset(card, &b) != M40_OK) {
        return bad("unknown card '%s'%s: use m40-12g, m40-24g, m40-12g-noecc, m40-24g-noecc, "
                   "all, device, or --budget BYTES", card, "");
    }
    m40_model_desc d = o->d;
    if (o->ctx_max) {
        int64_t best = 0;
        if (m40_model_max_ctx(ctx, &d, &b, 32768, &best) != M40_OK) {
            fprintf(stderr, "m40-plan: %s\n", m40_errmsg(ctx));
            return 1;
        }
        d.ctx = best > 0 ? best : 1;
    }
    m40_model_plan mp;
    m40_status st = m40_model_plan_build(ctx, &d, &b, &mp);
    if (st != M40_OK && st != M40_ERR_OOM_DEVICE) {
        fprintf(stderr, "m40-plan: %s\n", m40_errmsg(ctx));
        return st == M40_ERR_INVALID_ARG ? 2 : 1;
    }
    const char *msg = st == M40_ERR_OOM_DEVICE ? m40_errmsg(ctx) : NULL;
    if (o->json) {
        if (!first) printf(",\n");
        print_json(o, &d, &b, &mp, msg);
    } else {
        if (!first) printf("\n");
        print_text(o, &d, &b, &mp, msg);
        if (o->tensors) print_tensors(ctx, &d);
    }
    return 0;
}

/* "2xm40-12g", "m40-24g,m40-12g", "m40-24g,3xm40-12g": presets, each
** with an optional count. Returns 1, or 0 with why. */
static int parse_cards(const char *s, m40_budget *out, int *n, char *why, size_t nwhy) {
    *n = 0;
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item) {
            snprintf(why, nwhy, "%s card name (use e.g. 2xm40-12g or m40-24g,m40-12g)",
                     len ? "an overlong" : "an empty");
            return 0;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        long count = 1;
        const char *name = item;
        size_t digits = strspn(item, "0123456789");
        if (digits > 0 && item[digits] == 'x') {
            if (digits > 2 || (count = strtol(item, NULL, 10)) < 1) {
                snprintf(why, nwhy, "'%s': the count must be 1..%d", item, M40_PLAN_MAX_CARDS);
                return 0;
            }
            name = item + digits + 1;
        }
        m40_budget b;
        if (m40_budget_preset(name, &b) != M40_OK) {
            snprintf(why, nwhy, "unknown card '%s' (m40-12g, m40-24g, m40-12g-noecc, "
                     "m40-24g-noecc)", name);
            return 0;
        }
        if (*n + count > M40_PLAN_MAX_CARDS) {
            snprintf(why, nwhy, "more than %d cards", M40_PLAN_MAX_CARDS);
            return 0;
        }
        for (long i = 0; i < count; i++) out[(*n)++] = b;
        if (!end) return 1;
        p = end + 1;
    }
}

static void print_split_json(const opts *o, const m40_model_desc *d, const m40_split_plan *sp,
                             const char *msg) {
    printf("{\"model\": \"%s\", \"dtype\": \"%s\", \"batch\": %d, \"ctx\": %" PRId64
           ", \"chunk\": %d, \"split\": \"%s\", \"layers\": %d, \"params\": %" PRIu64
           ", \"cards\": [", m40_model_name(d->model), m40_wformat_name(d->weights), d->batch,
           d->ctx, d->chunk, sp->tensor ? "tensor" : "layer", sp->layers, sp->params);
    for (int i = 0; i < sp->ncards; i++) {
        const m40_stage_plan *s = &sp->stage[i];
        const m40_plan_info *p = &s->plan;
        printf("%s{\"card\": ", i ? ", " : "");
        json_str(s->card.name);
        printf(", \"usable_bytes\": %" PRIu64 ", \"layer_begin\": %d, \"layer_end\": %d"
               ", \"embedding\": %s, \"output\": %s, \"params\": %" PRIu64 ", \"regions\": {",
               s->card.usable_bytes, s->layer_begin, s->layer_end,
               s->embedding ? "true" : "false", s->output ? "true" : "false", s->params);
        for (int r = 0; r < M40_REGION_COUNT; r++)
            printf("%s\"%s\": %" PRIu64, r ? ", " : "", m40_region_name((m40_region)r),
                   p->region_bytes[r]);
        printf("}, \"prefill_arena_bytes\": %" PRIu64 ", \"decode_arena_bytes\": %" PRIu64
               ", \"total_bytes\": %" PRIu64 ", \"headroom_bytes\": %" PRId64 ", \"fits\": %s}",
               s->arena[0], s->arena[1], p->total_bytes, p->headroom_bytes,
               p->fits ? "true" : "false");
    }
    printf("], \"total_bytes\": %" PRIu64 ", \"usable_bytes\": %" PRIu64
           ", \"shortfall_bytes\": %" PRIu64 ", \"fullest_card_fill\": %.4f, \"fits\": %s"
           ", \"hidden_bytes_per_token\": %" PRIu64 ", \"max_ctx\": %" PRId64
           ", \"model_max_ctx\": %" PRId64 ", \"ctx_was_max\": %s, \"formats\": [",
           sp->total_bytes, sp->usable_bytes, sp->shortfall_bytes, sp->fill,
           sp->fits ? "true" : "false", sp->hidden_bytes_per_token, sp->max_ctx,
           sp->model_max_ctx, o->ctx_max ? "true" : "false");
    for (int f = 0; f < M40_WFMT_COUNT; f++)
        printf("%s{\"dtype\": \"%s\", \"fits\": %s, \"max_ctx\": %" PRId64 "}", f ? ", " : "",
               m40_wformat_name((m40_wformat)f), sp->fits_format[f] == 1 ? "true" : "false",
               sp->max_ctx_format[f]);
    printf("], \"message\": ");
    json_str(msg ? msg : "");
    printf("}\n");
}

static void print_split_text(const opts *o, const m40_model_desc *d, const m40_split_plan *sp,
                             const char *msg) {
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32], s8[48];
    printf("%s %s, batch %d, ctx %" PRId64 "%s (prefill chunk %d), %s over %d card%s\n",
           m40_model_name(d->model), m40_wformat_name(d->weights), d->batch, d->ctx,
           !o->ctx_max ? "" : sp->max_ctx > 0 ? " (longest that fits)"
                                              : " (no context fits; planned at 1)",
           d->chunk, sp->tensor ? "tensor parallelism" : "layer split", sp->ncards,
           sp->ncards > 1 ? "s" : "");
    printf("  %-4s %-14s %-22s %11s %11s %11s %11s %11s %11s %11s\n", "card", "budget", "layers",
           "weights", "kv_cache", "workspace", "activations", "total", "usable", "headroom");
    for (int i = 0; i < sp->ncards; i++) {
        const m40_stage_plan *s = &sp->stage[i];
        const m40_plan_info *p = &s->plan;
        char layers[64];
        int n = 0;
        if (sp->tensor)
            snprintf(layers, sizeof layers, "1/%d of all %d", sp->ncards, s->layer_end);
        else if (s->layer_end > s->layer_begin + 1)
            n = snprintf(layers, sizeof layers, "%d-%d", s->layer_begin, s->layer_end - 1);
        else if (s->layer_end > s->layer_begin)
            n = snprintf(layers, sizeof layers, "%d", s->layer_begin);
        if (sp->tensor) {
        } else if (s->layer_end > s->layer_begin)
            snprintf(layers + n, sizeof layers - (size_t)n, "%s%s",
                     s->embedding ? " +embedding" : "", s->output ? " +output" : "");
        else snprintf(layers, sizeof layers, "(unused)");
        int64_t h = p->headroom_bytes;
        snprintf(s8, sizeof s8, "%s%s", h < 0 ? "-" : "",
                 gib((uint64_t)(h < 0 ? -h : h), s7, sizeof s7));
        printf("  %-4d %-14s %-22s %11s %11s %11s %11s %11s %11s %11s%s\n", i, s->card.name,
               layers, gib(p->region_bytes[M40_REGION_WEIGHTS], s1, sizeof s1),
               gib(p->region_bytes[M40_REGION_KV], s2, sizeof s2),
               gib(p->region_bytes[M40_REGION_WORKSPACE], s3, sizeof s3),
               gib(p->region_bytes[M40_REGION_ACTIVATIONS], s4, sizeof s4),
               gib(p->total_bytes, s5, sizeof s5), gib(s->card.usable_bytes, s6, sizeof s6), s8,
               p->fits ? "" : "  OVER");
    }
    printf("  %-4s %-14s %-22s %11s %11s %11s %11s %11s %11s\n", "all", "", "", "", "", "", "",
           gib(sp->total_bytes, s1, sizeof s1), gib(sp->usable_bytes, s2, sizeof s2));
    printf("  fits         %s (fullest card %.1f%% of its usable memory", sp->fits ? "yes" : "NO",
           100.0 * sp->fill);
    if (!sp->fits) printf("; short by %s over the cards", gib(sp->shortfall_bytes, s1, sizeof s1));
    printf(")\n  between cards: %s, %s per token (a prefill chunk: %s)\n",
           sp->tensor ? "two all-reduces of the hidden state per block, each card's share"
                      : "the hidden state",
           gib(sp->hidden_bytes_per_token, s1, sizeof s1),
           gib(sp->hidden_bytes_per_token * (uint64_t)d->chunk, s2, sizeof s2));
    printf("  longest context that fits: %" PRId64 "%s\n", sp->max_ctx,
           sp->max_ctx >= sp->model_max_ctx ? " (the model's limit)" : "");
    printf("  formats at this batch: ");
    for (int f = 0; f < M40_WFMT_COUNT; f++)
        printf("%s%s %s (ctx <= %" PRId64 ")", f ? ", " : "", m40_wformat_name((m40_wformat)f),
               sp->fits_format[f] == 1 ? "fits" : "no", sp->max_ctx_format[f]);
    printf("\n");
    if (msg) printf("  %s\n", msg);
}

/* The layer split over several cards; returns the exit status. */
static int plan_cards(m40_ctx *ctx, opts *o, const m40_budget *cards, int ncards) {
    m40_model_desc d = o->d;
    m40_split_plan sp;
    const int tensor = o->split && !strcmp(o->split, "tensor");
    m40_status (*plan)(m40_ctx *, const m40_model_desc *, const m40_budget *, int,
                       m40_split_plan *) = tensor ? m40_model_plan_tensor : m40_model_plan_split;
    m40_status st = plan(ctx, &d, cards, ncards, &sp);
    if (st == M40_OK || st == M40_ERR_OOM_DEVICE) {
        if (o->ctx_max) { /* again at the longest context that fits */
            d.ctx = sp.max_ctx > 0 ? sp.max_ctx : 1;
            st = plan(ctx, &d, cards, ncards, &sp);
        }
    }
    if (st != M40_OK && st != M40_ERR_OOM_DEVICE) {
        fprintf(stderr, "m40-plan: %s\n", m40_errmsg(ctx));
        return st == M40_ERR_INVALID_ARG ? 2 : 1;
    }
    const char *msg = st == M40_ERR_OOM_DEVICE ? m40_errmsg(ctx) : NULL;
    if (o->json) print_split_json(o, &d, &sp, msg);
    else print_split_text(o, &d, &sp, msg);
    return 0;
}

int main(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    const char *model = NULL, *dtype = NULL, *ctxs = NULL;
    int64_t batch = 1, chunk = 512;
    o.card = "m40-12g";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        char key[32];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) return bad("unexpected argument '%s'%s", a, "");
        const char *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
        if (kl >= sizeof key) return bad("unknown option '%s'%s", a, "");
        memcpy(key, a, kl);
        key[kl] = '\0';
        if (strcmp(key, "--json") == 0 || strcmp(key, "--tensors") == 0) {
            if (eq) return bad("%s takes no value%s", key, "");
            if (key[2] == 'j') o.json = 1; else o.tensors = 1;
            continue;
        }
        static const char *const with_value[] = {"--model", "--dtype", "--batch", "--ctx",
                                                 "--chunk", "--card", "--budget", "--device",
                                                 "--cards", "--split"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known = known || strcmp(key, with_value[k]) == 0;
        if (!known) return bad("unknown option '%s'%s", key, "");
        if (eq) v = eq + 1;
        else if (i + 1 < argc) v = argv[++i];
        else return bad("%s needs a value%s", key, "");
        if (strcmp(key, "--model") == 0) model = v;
        else if (strcmp(key, "--dtype") == 0) dtype = v;
        else if (strcmp(key, "--ctx") == 0) ctxs = v;
        else if (strcmp(key, "--card") == 0) o.card = v;
        else if (strcmp(key, "--cards") == 0) o.cards = v;
        else if (strcmp(key, "--split") == 0) o.split = v;
        else if (strcmp(key, "--batch") == 0) {
            if (!parse_i64(v, 1, 1 << 20, &batch))
                return bad("--batch '%s' is not an integer in 1..%s", v, "1048576");
        } else if (strcmp(key, "--chunk") == 0) {
            if (!parse_i64(v, 1, 1 << 20, &chunk))
                return bad("--chunk '%s' is not an integer in 1..%s", v, "1048576");
            o.have_chunk = 1;
        } else if (strcmp(key, "--device") == 0) {
            int64_t dv = 0;
            if (!parse_i64(v, 0, 1024, &dv)) return bad("--device '%s' is not a GPU ordinal%s", v, "");
            o.device = (int)dv;
        } else if (strcmp(key, "--budget") == 0) {
            const char *why = NULL;
            if (!parse_bytes(v, &o.budget, &why)) return bad("--budget '%s' %s", v, why);
        }
    }
    if (!model) return bad("--model is required (resnet50 or chatglm2-6b)%s%s", "", "");
    m40_model_kind kind;
    if (strcmp(model, "resnet50") == 0) kind = M40_MODEL_RESNET50;
    else if (strcmp(model, "chatglm2-6b") == 0) kind = M40_MODEL_CHATGLM2_6B;
    else return bad("unknown model '%s'%s: use resnet50 or chatglm2-6b", model, "");
    m40_model_desc_init(&o.d, kind);
    o.d.batch = (int)batch;
    o.d.chunk = (int)chunk;
    if (dtype) {
        int f = -1;
        for (int k = 0; k < M40_WFMT_COUNT; k++)
            if (strcmp(dtype, m40_wformat_name((m40_wformat)k)) == 0) f = k;
        if (f < 0) return bad("unknown --dtype '%s'%s: use fp32, fp16, int8, int4 or int4g128", dtype, "");
        if (kind == M40_MODEL_RESNET50 && f != M40_WFMT_FP32)
            return bad("resnet50 is planned in fp32 only (--dtype %s given)%s", dtype, "");
        o.d.weights = (m40_wformat)f;
    }
    if (kind == M40_MODEL_RESNET50 && (ctxs || o.have_chunk))
        return bad("--ctx and --chunk apply to chatglm2-6b only%s%s", "", "");
    if (ctxs) {
        int64_t c = 0;
        if (strcmp(ctxs, "max") == 0) o.ctx_max = 1;
        else if (!parse_i64(ctxs, 1, (int64_t)1 << 22, &c))
            return bad("--ctx '%s' is not 'max' or an integer in 1..%s", ctxs, "4194304");
        else o.d.ctx = c;
    }
    m40_budget cards[M40_PLAN_MAX_CARDS];
    int ncards = 0;
    if (o.cards) {
        char why[160];
        if (kind != M40_MODEL_CHATGLM2_6B)
            return bad("--cards splits a transformer's layers: chatglm2-6b only%s%s", "", "");
        if (o.budget || o.tensors)
            return bad("--cards does not take --budget or --tensors (one card each)%s%s", "", "");
        if (!parse_cards(o.cards, cards, &ncards, why, sizeof why))
            return bad("--cards '%s': %s", o.cards, why);
    }
    if (o.split && strcmp(o.split, "layer") && strcmp(o.split, "tensor"))
        return bad("--split '%s': layer or tensor%s", o.split, "");
    if (o.split && !o.cards) return bad("--split goes with --cards%s%s", "", "");
    m40_ctx_desc cd;
    m40_ctx_desc_init(&cd);
    cd.device = M40_DEVICE_CPU;
    m40_ctx *ctx = NULL;
    if (m40_ctx_create(&cd, &ctx) != M40_OK) {
        fprintf(stderr, "m40-plan: cannot create a CPU context: %s\n", m40_errmsg(ctx));
        m40_ctx_destroy(ctx);
        return 1;
    }
    int rc = 0;
    if (o.cards) {
        rc = plan_cards(ctx, &o, cards, ncards);
    } else if (strcmp(o.card, "all") == 0 && !o.budget) {
        static const char *const cards[] = {"m40-12g", "m40-24g"};
        if (o.json) printf("[");
        for (int k = 0; k < 2 && rc == 0; k++) rc = plan_card(ctx, &o, cards[k], k == 0);
        if (o.json) printf("]\n");
    } else {
        rc = plan_card(ctx, &o, o.card, 1);
        if (o.json && rc == 0) printf("\n");
    }
    m40_ctx_destroy(ctx);
    return rc;
}
