#!/usr/bin/env python3
"""Instructions per element of the transformer kernels' hot loops, from the
sm_52 SASS (cuobjdump -sass, CUDA 11.8): the issue side of the M40
projections in docs/projections.md (issues 16, 17).

    scripts/sass_ops_ipe.py OBJ_OR_SASS... [--check] [--json] [--cuobjdump PATH]
                            [--project [--markdown] [--launch-us 3] [--rule m40|h100]]

OBJ_OR_SASS: the objects of kernels/{norm,rope,swiglu,embedding,attention,
sample}.cu (cuobjdump runs on them; with a CMake list, the objects of other
files are skipped) or saved `cuobjdump -sass` listings. take_last.cu has no
kernel (one cudaMemcpy2DAsync).

Method (scripts/sass_quant_ipw.py's, extended to loops with branches): a loop
is a backward branch; the loop that does a kernel's work is found by its
memory or arithmetic instructions (the unrolled float4 loop of a norm pass
by its LDG.E.128 / STG.E.128, attention's tile loop by the two inner loops
of >= 64 FFMA, ...), and one iteration's elements are read off those
instructions (4 per float4 store, 1 per F2F, 8 per for_row step, ...).
Instructions per iteration: the static count of the loop body ("static"),
and the hot path ("hot"): the shortest path from the loop head to its back
branch that passes every instruction of the iteration's data (its vector
loads and stores), following BRA, SSY/SYNC and PBK/BRK. The hot path leaves
out the branches a ChatGLM2 shape never takes (attention's scalar-load
fallback for unaligned caches, rope's per-pair sincosf when the angles fit
the shared table, sampling's histogram flushes); the static count is the
upper bound. Inner loops count body x trips, the trips from the FFMA the
template parameters imply (attention: SR*SC*DP per tile for Q.K^T, OR*8*BN
for P.V). Set-up outside the loops is not counted (per thread, once).

quarter: F2F, I2F, F2I and MUFU in the hot path, which issue at a quarter
of the FP32 rate on sm_52 (32 lanes per SM per clock); weighted = hot + 3 x
quarter, the issue slots those cost.

--check: fails (exit 1) if a bandwidth op (norm, rope, swiglu, embedding,
kv_append, attention's combine) needs more than BUDGET_IPB = 6 weighted
instructions per byte of DRAM traffic in its hot loop. The M40 issues
3.42e12 thread-instructions/s against 288.4e9 B/s, 11.9 per byte at 100%
issue; 6 is half of that: the split-K GEMV loop measured ~48% of the issue
rate on the H200 (docs/quant.md), so an op above ~6 per byte risks being
issue-bound on an M40 at the issue efficiency our kernels actually reach.
A checked op whose kernel or loop is no longer found fails too. The
attention tile kernel is reported, not checked: at decode it shares each K/V
row among 16 heads (8 FFMA per byte before any overhead) by design, and its
count (~18 per byte) says it is issue-bound on an M40 (docs/projections.md).

--project: the ChatGLM2-6B decode step and prefill on an M40 from these
counts, the GEMV counts of scripts/sass_quant_ipw.py (IPW below) and the
stated assumptions (launch cost, GEMM efficiency): a projection, not a
measurement; --markdown adds the per-op tables of docs/projections.md.
"""
import argparse
import bisect
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_common  # noqa: E402
from sass_common import sass_text  # noqa: E402

QUARTER = ("F2F", "I2F", "F2I", "MUFU")
BUDGET_IPB = 6.0
M40_ISSUE = 24 * 128 * 1.114e9  # thread-instructions per second
M40_BW = 288.4e9
M40_CLOCK = 1.114e9  # an SM returns 32 lanes x 4 B of shared memory a clock


def functions(text):
    """(name, [(addr, pred, op, args)]) per sm_52 function."""
    for name, arch, body in sass_common.functions(text):
        if arch == "sm_52":
            yield name, body


def target(args):
    m = re.search(r"0x([0-9a-f]+)", args)
    return int(m.group(1), 16) if m else None


class Index:
    """Instruction index of an address; a branch target may be a bundle's
    control word (every 32 bytes on sm_5x): the next instruction."""
    def __init__(self, body):
        self.addrs = [a for a, _, _, _ in body]

    def get(self, t):
        i = bisect.bisect_left(self.addrs, t)
        return i if i < len(self.addrs) else None


def loops(body):
    """(head index, back-branch index) of every backward branch."""
    idx = Index(body)
    out = []
    for i, (a, _, op, args) in enumerate(body):
        t = target(args) if op.startswith("BRA") else None
        if t is not None and t < a:
            out.append((idx.get(t), i))
    return out


def innermost(lps):
    return [l for l in lps if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in lps)]


def ops(body, lp):
    return collections.Counter(body[i][2] for i in range(lp[0], lp[1] + 1))


def count(c, prefix):
    return sum(v for k, v in c.items() if k.startswith(prefix))


def hot_path(body, lp, required, inner=None):
    """Instructions on the shortest path head -> back branch through every
    index in `required` (in address order). inner: {head: (back, cost)}
    collapses an inner loop to one step of that cost. Returns (count,
    quarter-rate count)."""
    i0, i1 = lp
    inner = inner or {}
    idx = Index(body)
    # reconvergence targets of SSY (for SYNC) and PBK (for BRK) by region
    marks = [(i, op, target(args)) for i, (_, _, op, args) in enumerate(body)
             if op in ("SSY", "PBK")]

    def region_target(i, kind):
        a = body[i][0]
        for j, op, t in reversed(marks):
            if j < i and op == kind and t is not None and t > a:
                return idx.get(t)
        return None

    def succ(i):
        if i in inner:
            back, _ = inner[i]
            return [back + 1]
        _, pred, op, args = body[i]
        out = [] if not pred else [i + 1]
        if op.startswith("BRA"):
            t = target(args)
            if t is not None and t > body[i][0]:
                out.append(idx.get(t))
            elif pred == "" and t is None:
                out.append(i + 1)
        elif op == "SYNC":
            out.append(region_target(i, "SSY"))
        elif op == "BRK":
            out.append(region_target(i, "PBK"))
        elif op in ("EXIT", "RET"):
            pass
        else:
            out = [i + 1]
        return [s for s in out if s is not None and i0 <= s <= i1]

    def cost(i):
        if i in inner:
            return inner[i][1], 0.0
        q = 1.0 if body[i][2].startswith(QUARTER) else 0.0
        return 1.0, q

    def shortest(a, b):
        INF = float("inf")
        dist = {a: cost(a)}
        for i in range(a, b + 1):
            if i not in dist:
                continue
            for s in succ(i):
                if s > b:
                    continue
                c, q = cost(s)
                d = (dist[i][0] + c, dist[i][1] + q)
                if s not in dist or d[0] < dist[s][0]:
                    dist[s] = d
        return dist.get(b, (INF, 0.0))

    pts = [i0] + sorted(r for r in required if i0 < r < i1) + [i1]
    n, q = cost(i0)
    for a, b in zip(pts, pts[1:]):
        d = shortest(a, b)
        n += d[0] - cost(a)[0]
        q += d[1] - cost(a)[1]
    return n, q


def req(body, lp, pattern):
    return [i for i in range(lp[0], lp[1] + 1) if re.match(pattern, body[i][2])]


class Row:
    def __init__(self, op, kernel, unit, elems, static, hot, quarter, bpe, checked):
        self.op, self.kernel, self.unit, self.elems = op, kernel, unit, elems
        self.static, self.hot, self.quarter, self.bpe, self.checked = static, hot, quarter, bpe, checked

    def as_dict(self):
        e = self.elems
        d = {"op": self.op, "kernel": self.kernel, "unit": self.unit, "per_iter": e,
             "static_ipe": self.static / e, "hot_ipe": self.hot / e,
             "weighted_ipe": (self.hot + 3 * self.quarter) / e, "bytes_per_unit": self.bpe}
        if self.bpe:
            d["weighted_ipb"] = d["weighted_ipe"] / self.bpe
        return d


def loop_rows(fname, body, spec):
    """spec: (op, unit, pick(counter) -> elems or 0, required regex, bytes per
    unit or None, checked); the loop with the most elements per iteration
    (the unrolled one), ties to the shorter body."""
    op, unit, pick, rq, bpe, checked, allow_nested = spec
    lps = loops(body) if allow_nested else innermost(loops(body))
    best = None
    for lp in lps:
        c = ops(body, lp)
        e = pick(c)
        if e and (best is None or e > best[0] or (e == best[0] and lp[1] - lp[0] < best[1][1] - best[1][0])):
            best = (e, lp)
    if not best:
        return None
    e, lp = best
    n, q = hot_path(body, lp, req(body, lp, rq))
    return Row(op, short(fname), unit, e, lp[1] - lp[0] + 1, n, q, bpe, checked)


def short(name):
    m = re.search(r"\d+(\w+?kernel|rms_\w+?|attn_combine|kv_append_kernel)(I.*?E)?E?v", name)
    return (m.group(1) + (m.group(2) or "")) if m else name[-60:]


# the tile kernel's template: DP, BM, BN, SR, SC, OR, MINB, the cache type,
# then (since 2026-12-02) PF, its "loads a phase early" flag (Lb0E / Lb1E)
ATT = re.compile(r"attn_kernelILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E(6__half|f)(?:Lb[01]E)*E")
NT = 128


def qk_pv_loops(body, qk_ffma, pv_ffma):
    """The loop over tiles (steps) that encloses two inner loops of >= 64 FFMA,
    Q.K^T first, then P.V (the source order), with their trips from the
    FFMA a thread does per tile: -> (the tile loop, {inner head: (its end,
    instructions over its trips)}, the quarter-rate instructions over the
    trips), or None."""
    lps = loops(body)
    big = [l for l in innermost(lps) if count(ops(body, l), "FFMA") >= 64]
    tile = [l for l in lps if sum(1 for b in big if l[0] < b[0] and b[1] < l[1]) >= 2]
    if not tile:
        return None
    tl = min(tile, key=lambda l: l[1] - l[0])
    coll, qin = {}, 0.0
    for k, b in enumerate(sorted(x for x in big if tl[0] < x[0] and x[1] < tl[1])[:2]):
        trips = (qk_ffma if k == 0 else pv_ffma) / count(ops(body, b), "FFMA")
        coll[b[0]] = (b[1], trips * (b[1] - b[0] + 1))
        qin += trips * sum(1 for i in range(b[0], b[1] + 1) if body[i][2].startswith(QUARTER))
    return tl, coll, qin


def attention_row(fname, body, label):
    m = ATT.search(fname)
    dp, bm, bn, sr, sc, orr = (int(g) for g in m.groups()[:6])
    qk_ffma, pv_ffma = sr * sc * dp, orr * 8 * bn
    found = qk_pv_loops(body, qk_ffma, pv_ffma)
    if not found:
        return None
    tl, coll, _ = found
    # the vector path of the tile loads; not the scalar fallback
    n, q = hot_path(body, tl, req(body, tl, r"LDG\.E\.128|STS\.128"), coll)
    static = (tl[1] - tl[0] + 1) + sum(c - (b - h + 1) for h, (b, c) in coll.items())
    keys = bn
    rows = bm
    elem = 2 if "6__half" in fname else 4
    # per key per KV group (decode: the block's 16 rows are the group's 16
    # heads at T = 1) and per (query row, key) (prefill)
    per_key = NT * n / keys
    # shared-memory return (one register a lane a clock: an LDS.128 holds the
    # SM's path 4 cycles, broadcast or not), SM-cycles per tile, from the
    # tiling: Q.K^T SR + SC float4 a thread per 4 dims; P.V 2 float4 of V and
    # OR of P a thread per key; K and V staged as floats; the softmax's ~4
    # accesses a score (bench/NOTES.md, "Session 9", item 5)
    smem_tile = (NT * dp * (sr + sc) + NT * bn * (8 + orr) + 2 * bn * dp + 4 * bm * bn) / 32
    return {"op": label, "kernel": f"attn_kernel<{dp},{bm},{bn},{sr},{sc},{orr}>",
            "smem_per_key_per_group": smem_tile / keys, "smem_per_row_key": smem_tile / keys / rows,
            "tile_static": static, "tile_hot": n, "tile_quarter": q,
            "per_key_per_group": per_key, "per_key_per_group_weighted": NT * (n + 3 * q) / keys,
            "per_row_key": per_key / rows, "per_row_key_weighted": NT * (n + 3 * q) / keys / rows,
            "bytes_per_key_per_group": 2 * dp * elem,
            "ffma_per_row_key": (qk_ffma + pv_ffma) * NT / keys / rows}


# decode v3/v4 (kernels/attention.cu attn_decode_kernel<DP, RW, C, cache>):
# 16 / RW warps a block, each lane C keys of a 32·C-key step and RW rows
ATT_V4 = re.compile(r"attn_decode_kernelILi(\d+)ELi(\d+)ELi(\d+)E(6__half|f)E")


def attention_v4_row(fname, body, label):
    m = ATT_V4.search(fname)
    dp, rw, c = (int(g) for g in m.groups()[:3])
    nt, ks, epl = 16 // rw * 32, 32 * c, dp // 32
    qk_ffma, pv_ffma = rw * c * dp, rw * epl * ks  # FFMA a thread a step
    found = qk_pv_loops(body, qk_ffma, pv_ffma)
    if not found:
        return None
    sl, coll, qin = found  # qin: the conversions of K and V are inside the inner loops here
    # the path through both inner loops (their loads are inside them)
    n, q = hot_path(body, sl, sorted(coll), coll)
    q += qin
    static = (sl[1] - sl[0] + 1) + sum(cc - (b - h + 1) for h, (b, cc) in coll.items())
    elem = 2 if "6__half" in fname else 4
    # shared-memory return a step (SM-cycles; an LDS.128 holds the path 4
    # cycles, broadcast or not): Q, RW/4 LDS.128 a warp a dim; p, RW/4 a
    # warp a key; p's stores, C·RW/4 STS.128 a lane... a warp
    warps = 16 // rw
    smem_step = warps * (dp * rw + ks * rw + c * rw)
    return {"op": label, "kernel": f"attn_decode_kernel<{dp},{rw},{c}>",
            "smem_per_key_per_group": smem_step / ks, "smem_per_row_key": smem_step / ks / 16,
            "tile_static": static, "tile_hot": n, "tile_quarter": q,
            "per_key_per_group": nt * n / ks, "per_key_per_group_weighted": nt * (n + 3 * q) / ks,
            "per_row_key": nt * n / ks / 16, "per_row_key_weighted": nt * (n + 3 * q) / ks / 16,
            "bytes_per_key_per_group": 2 * dp * elem,
            "ffma_per_row_key": (qk_ffma + pv_ffma) * nt / ks / 16}


# decode v6 (kernels/attention.cu attn_decode_v6<HH, ROPE>): 16/HH warps a
# (b, g) per key stream, a warp step 8 keys (two half-warps x 4) for HH rows;
# no shared memory in the loop (the streams fold once a split). The hot
# path leaves out the rescale branch (taken when a row's max moves).
ATT_V6 = re.compile(r"attn_decode_v6ILi(\d+)ELb([01])E")


def attention_v6_row(fname, body, label):
    hh = int(ATT_V6.search(fname).group(1))
    lps = loops(body)
    if not lps:
        return None
    lp = max(lps, key=lambda l: count(ops(body, l), "FFMA"))
    if count(ops(body, lp), "FFMA") < 2 * hh * 8 * 4 - 8 * hh:  # Q.K^T + P.V of a step (first products FMUL)
        return None
    n, q = hot_path(body, lp, req(body, lp, r"LDG|LD\."))
    nt = 16 // hh * 32  # threads of the row groups that share a key stream
    return {"op": label, "kernel": f"attn_decode_v6<{hh}>",
            "smem_per_key_per_group": 0.0, "smem_per_row_key": 0.0,
            "tile_static": lp[1] - lp[0] + 1, "tile_hot": n, "tile_quarter": q,
            "per_key_per_group": nt * n / 8, "per_key_per_group_weighted": nt * (n + 3 * q) / 8,
            "per_row_key": nt * n / 8 / 16, "per_row_key_weighted": nt * (n + 3 * q) / 8 / 16,
            "bytes_per_key_per_group": 2 * 128 * 2, "ffma_per_row_key": 256.0}


# decode v5 (kernels/attention.cu attn_decode_v5<TC, ROPE, W, RB>): a warp a
# query row, a lane 4 of its 128 dims, 4 keys a step (one 8-byte K and V load
# a lane a key, their F2F, a butterfly a score); W > 1 the ways (W warps a
# row over shares of the keys, folded in the block), W 1 the splits (a block
# a split, attn_combine after). Every one of a group's 16 rows reads and
# converts each key itself: per key and KV group 16 warps' steps.
ATT_V5 = re.compile(r"attn_decode_v5I6__halfLb([01])ELi(\d+)ELi(\d+)EE")


def attention_v5_row(fname, body, label):
    w, rb = (int(g) for g in ATT_V5.search(fname).groups()[1:])
    lps = loops(body)
    if not lps:
        return None
    # the key loop: its K and V conversions (v5_fold's loop, with W 1, has
    # more FFMA and no F2F)
    lp = max(lps, key=lambda l: (count(ops(body, l), "F2F"), count(ops(body, l), "FFMA")))
    if count(ops(body, lp), "FFMA") < 16 + 4 * 4 - 4:  # Q.K^T 4 keys x 4 dims, P.V 4 x 4 (first products FMUL)
        return None
    n, q = hot_path(body, lp, req(body, lp, r"LDG|LD\."))
    per_row_key, per_row_key_w = 32 * n / 4, 32 * (n + 3 * q) / 4
    return {"op": label, "kernel": f"attn_decode_v5<{w},{rb}>", "ways": w,
            "smem_per_key_per_group": 0.0, "smem_per_row_key": 0.0,
            "tile_static": lp[1] - lp[0] + 1, "tile_hot": n, "tile_quarter": q,
            "per_key_per_group": 16 * per_row_key, "per_key_per_group_weighted": 16 * per_row_key_w,
            "per_row_key": per_row_key, "per_row_key_weighted": per_row_key_w,
            "bytes_per_key_per_group": 2 * 128 * 2, "ffma_per_row_key": 256.0}


def sample_rows(fname, body):
    rows = []
    for lp in innermost(loops(body)):
        c = ops(body, lp)
        nld = count(c, "LDG.E") + count(c, "LD.E")
        if nld != 8 or lp[1] - lp[0] < 60:
            continue
        kind = ("pass 1 (z, max)" if count(c, "FCHK") else
                "select digit" if count(c, "ATOMS") else
                "greedy sum" if count(c, "MUFU.EX2") else "copy / other")
        n, q = hot_path(body, lp, req(body, lp, r"LDG\.E|LD\.E"))
        rows.append(Row(f"sample {kind} @{body[lp[0]][0]:#x}", "sample_kernel", "logit/pass", 8, lp[1] - lp[0] + 1,
                        n, q, 4, False))
    return rows


def has(c, *names):
    return all(count(c, n) for n in names)


SPECS = [
    # (function regex, spec) -- the instances ChatGLM2 runs: f16 weights and
    # caches, float4 paths (C, F, head_dim multiples of 4, aligned)
    (r"rms_blockILi4E6__halfLi256E", ("rmsnorm pass 1 (x += r)", "element",
     lambda c: 4 * count(c, "STG.E.128") if has(c, "FADD", "STG.E.128") and
     count(c, "LDG.E.128") == 2 * count(c, "STG.E.128") else 0,
     r"LDG\.E\.128|STG\.E\.128", 12, True, False)),
    (r"rms_blockILi4E6__halfLi256E", ("rmsnorm pass 2 (y = x*inv*w)", "element",
     lambda c: count(c, "F2F") if has(c, "F2F", "STG.E.128") else 0,
     r"LDG|STG", 10, True, False)),
    (r"swiglu_kernelILi4E", ("swiglu", "output", lambda c: 4 * count(c, "STG.E.128")
     if has(c, "MUFU.EX2", "STG.E.128") else 0, r"LDG|STG", 12, True, False)),
    (r"rope_kernelILi0ELb1E", ("rope (shared table)", "pair",
     lambda c: count(c, "STG.E.64") if has(c, "LDS", "STG.E.64") else 0,
     r"LDG\.E\.64|STG\.E\.64|LDS", 16, True, True)),
    (r"embedding_kernelILi4E6__half", ("embedding (f16 table)", "element",
     lambda c: count(c, "F2F") if has(c, "F2F", "STG.E.128") else 0,
     r"LDG|STG", 6, True, False)),
    (r"kv_append_kernel", ("kv_append (f16 cache)", "element",
     lambda c: count(c, "F2F.F16") if has(c, "F2F.F16", "STG") else 0,
     r"LDG|STG", 6, True, False)),
    # the online fold (2026-12-02): per split a lane loads its out[d] and the
    # split's (m, l) (the warp's 32 lanes the same 8 bytes: one broadcast),
    # so a unit (split x dim) is 3 loads and 4 bytes of DRAM. Reported, not
    # checked: two exp2 a unit make it ~16 instructions a byte, but it reads
    # the partials only (on an M40 at 32K, 24 splits: 0.4 MB a layer, 1.2%
    # of the K/V bytes, ~1 us of issue), and what the H200 measured was its
    # latency: 4.9 us at 8K against 16.5 for the 3-instructions-a-byte
    # version it replaced (bench/NOTES.md)
    (r"attn_combine", ("attention combine", "split x dim",
     lambda c: count(c, "LDG") // 3 if has(c, "LDG", "FFMA", "MUFU.EX2") else 0,
     r"LDG", 4, False, False)),
]
# the decode tile an M40 runs at ChatGLM2's 8192-token cache (kernels/attention.h:
# 64 keys from L >= 3072 on 48 slots; the 32-key tile below that and on the H200)
# the instances an M40 runs: decode at a long cache (the 64-key tile; the
# 32-key tile with its loads early below L = 3072) and prefill (the BM-32
# tile, PAIR); template tails (PF, PAIR, ROPE: session 10; WPV: session 15) as Lb0E/Lb1E
ATT_USED = [(r"attn_kernelILi128ELi16ELi64ELi2ELi4ELi2ELi4E6__halfLb0ELb0ELb0ELb0EE", "attention decode (f16 cache)"),
            # the 32-key tile counted without PF (the same instructions a tile; PF
            # moves the loads a phase early, and its split load/store path is not
            # the loop shape hot_path follows)
            (r"attn_kernelILi128ELi16ELi32ELi2ELi2ELi2ELi4E6__halfLb0ELb0ELb0ELb0EE", "attention decode 32 keys (f16 cache)"),
            (r"attn_kernelILi128ELi32ELi32ELi2ELi4ELi4ELi3E6__halfLb0ELb1ELb0ELb0EE", "attention prefill (f16 cache)")]


# decode v4 (variants 8, 9), reported beside the tile (bench/NOTES.md, session 12)
ATT_V4_USED = [(r"attn_decode_kernelILi128ELi8ELi4E6__halfE", "attention decode v4 8 rows (f16 cache)"),
               (r"attn_decode_kernelILi128ELi4ELi4E6__halfE", "attention decode v4 4 rows (f16 cache)"),
               (r"attn_decode_kernelILi128ELi8ELi1E6__halfE", "attention decode v3 8 rows (f16 cache)")]
ATT_V6_USED = [(r"attn_decode_v6ILi8ELb1E", "attention decode v6 8 rows (f16 cache, RoPE fused)"),
               (r"attn_decode_v6ILi4ELb1E", "attention decode v6 4 rows (f16 cache, RoPE fused)")]
# decode v5 under a key bound (lib/ops/attention.c attn_bound): its ways row 8,
# (16, 1), the rule's; its splits (W 1), knob 0's
ATT_V5_USED = [(r"attn_decode_v5I6__halfLb1ELi16ELi1EE", "attention decode v5 ways 16x1 (f16 cache, RoPE fused)"),
               (r"attn_decode_v5I6__halfLb1ELi1ELi16EE", "attention decode v5 splits (f16 cache, RoPE fused)")]


def analyse(text):
    """-> (rows, attention rows, the checked ops whose loop was not found)"""
    funcs = list(functions(text))
    rows, att, missing = [], [], []
    for rx, spec in SPECS:
        r = None
        for name, body in funcs:
            if re.search(rx, name):
                r = loop_rows(name, body, spec)
                break
        if r:
            rows.append(r)
        else:
            missing.append(spec[0])
    for rx, label, fn in ([u + (attention_row,) for u in ATT_USED] + [u + (attention_v4_row,) for u in ATT_V4_USED] +
                          [u + (attention_v6_row,) for u in ATT_V6_USED] +
                          [u + (attention_v5_row,) for u in ATT_V5_USED]):
        att += [a for a in (fn(name, body, label) for name, body in funcs if re.search(rx, name)) if a]
    for name, body in funcs:
        if "sample_kernel" in name:
            rows += sample_rows(name, body)
    return rows, att, missing


# ---- projection (docs/projections.md): ChatGLM2-6B on an M40 ------------------
# PROJECTION, not a measurement. Per kernel: bytes at 288.4 GB/s against
# weighted instructions at 3.42e12/s (scaled to the SMs the grid occupies),
# the larger wins; the prefill GEMMs at their FFMA bound over an assumed
# efficiency; plus a fixed cost per launch, added serially.
GLM = dict(L=28, C=4096, H=32, G=2, D=128, F=13696, V=65024)
SMS = 24
# GEMV instructions per weight at batch 1 (scripts/sass_quant_ipw.py on the
# sm_52 build of 2026-12-01; docs/quant.md) for the variant
# m40k_quant_gemv_choose picks on 24 SMs: K = 4096: v3 whole (R = 2, D = 4;
# group scales R = 4); K = 13696 (x does not fit 48 KB): int8 split-K (R = 2,
# D = 2, 2 splits + a sum kernel), int4 and int4g128 v2 (R = 2). fp16: v2
# R = 2, whose one F2F per weight issues at a quarter rate (+3 slots).
IPW = {"fp16": {4096: 3.75 + 3, 13696: 3.75 + 3},
       "int8": {4096: 2.83, 13696: 2.88},
       "int4": {4096: 2.61, 13696: 4.16},
       "int4g128": {4096: 2.78, 13696: 5.42}}
# int4g128 since 2026-12-05 (session 22): the group scales' dtype a template
# argument (f16: one LDG.U16 a row and vector, not two predicated loads):
# v3 R 4 D 4 2.88 -> 2.78, v2 chunked 5.55 -> 5.42 (5.70 was an older
# build's), v2 whole EZ 3.13 -> 3.03
# int4 and int4g128 at N <= 8192 (query_key_value, dense) run v2 too since
# session 9: its K = 13696 count stands for it (the same inner loop)
# Since session 13 the small shapes (N <= 8192, K 4096: query_key_value,
# dense) of int8, int4 and int4g128 run v2 with x staged whole and the
# exponent-zero decode (EZ): sass_quant_ipw.py's v2wez / v2nwez loop (int4
# 2.73, g128 3.13, int8 3.08) plus its staging, ~65 instructions a float4 of
# x (load, norm, the lane vector's max, sum and power of two, store) for
# the 16 rows x 4 columns a block's item feeds: +1.0 a weight. (Before: int4
# chunked 4.16 with the staging inside the loop; int8 4.67, a chunked
# loop's count where the whole loop's 3.92 + ~0.25 staging applied.)
IPW_SMALL = {"int8": 3.08 + 1.0, "int4": 2.73 + 1.0, "int4g128": 3.03 + 1.0}
BPW = {"fp16": 2.0, "int8": 1.0, "int4": 0.5, "int4g128": 0.5}
FORMATS = ("fp16", "int8", "int4", "int4g128")
GEMM_EFF = 0.75  # of 6.84 TFLOP/s; an assumption, docs/projections.md says why
PEAK = 2 * M40_ISSUE  # FLOP/s (an FFMA is 2)


class Item:
    """One kernel of a step, `n` times (layers): bytes, weighted instructions,
    FFMA, the SMs its grid keeps busy (blocks / the most blocks one SM runs),
    launches per instance; t_fixed: a time given directly (the prefill GEMMs)."""
    def __init__(self, name, n, bytes_=0.0, instr=0.0, ffma=0.0, sms=SMS, launches=1, t_fixed=None,
                 note="", smem=0.0):
        self.name, self.n, self.bytes, self.instr, self.ffma = name, n, bytes_, instr, ffma
        self.sms, self.launches, self.t_fixed, self.note = sms, launches, t_fixed, note
        self.smem = smem  # SM-cycles of shared-memory return, the whole kernel

    def times(self):
        tb = self.bytes / M40_BW
        ti = self.instr / (M40_ISSUE * self.sms / SMS)
        tf = self.ffma / (M40_ISSUE * self.sms / SMS)
        ts = self.smem / (M40_CLOCK * self.sms)
        if self.t_fixed is not None:
            return self.t_fixed, "FFMA/eff", tb, ti, tf, ts
        t = max(tb, ti, ts)
        return t, ("bytes" if t == tb else "issue" if t == ti else "smem"), tb, ti, tf, ts


def gemv(name, fmt, N, K, bias, n):
    b = N * K * BPW[fmt] + K * 4 + N * 4 + (N * 4 if bias else 0)
    if fmt != "fp16":
        b += N * 2 * (-(-K // 128) if fmt == "int4g128" else 1)  # f16 scales
    launches = 1
    if fmt == "int8" and K == 13696:  # split-K: 2 partial rows written, summed
        b += 2 * N * 4 * 2
        launches = 2
    ipw = IPW[fmt][K]
    if fmt in ("int4", "int4g128") and N <= 8192:  # v2 at R = 2 (session 9), as at K = 13696
        ipw = IPW[fmt][13696]
    if fmt != "fp16" and N <= 8192 and K <= 4096:  # v2 whole, EZ (session 13)
        ipw = IPW_SMALL[fmt]
    return Item(name, n, b, N * K * ipw, N * K, launches=launches,
                note=f"{fmt} GEMV {N}x{K}" + (" (v2)" if ipw != IPW[fmt][K] else ""))


def gemm(name, fmt, M, N, K, n):
    """the quant GEMM (128x128 tiles, 2 blocks per M40 SM; kernels/quant_gemm.cu's
    split-K rule, a memset before a split), wave quantization included"""
    gx, gy, nk = -(-N // 128), -(-M // 128), -(-K // 16)
    splits = 1
    while splits < 8 and gx * gy * splits < 2 * SMS and nk // (splits * 2) >= 16:
        splits *= 2
    blocks, slots = gx * gy * splits, 2 * SMS
    fill = blocks / (-(-blocks // slots) * slots)
    t = 2.0 * M * N * K / (PEAK * GEMM_EFF * fill)
    return Item(name, n, N * K * BPW[fmt] + M * K * 4 + M * N * 4, 0, M * N * K, t_fixed=t,
                launches=1 + (splits > 1), note=f"GEMM {M}x{N}x{K}, {blocks} blocks, fill {fill:.2f}")


def kernel_ipe(rows, att):
    k = {r.op: r.as_dict()["weighted_ipe"] for r in rows if not r.op.startswith("sample")}
    st = collections.defaultdict(list)
    for r in rows:
        if r.op.startswith("sample"):
            st[r.op.split(" @")[0]].append(r.static / r.elems)
    k["rmsnorm"] = k["rmsnorm pass 1 (x += r)"] + k["rmsnorm pass 2 (y = x*inv*w)"]
    # sampling: the static loop bodies (provisional: kernels/sample.cu is being rewritten)
    k["sample pass 1"] = max(st.get("sample pass 1 (z, max)", [30.0]))
    k["sample digit"] = max(st.get("sample select digit", [36.0]))
    for key, pre in (("att_pre", "attention prefill"), ("att_v6_8", "attention decode v6 8"),
                     ("att_v6_4", "attention decode v6 4"), ("att_v5w", "attention decode v5 ways"),
                     ("att_v5s", "attention decode v5 splits")):
        k[key] = next((a for a in att if a["op"].startswith(pre)), None)
        if k[key] is None:  # a renamed instance or a new loop shape: say so, not a traceback
            sys.exit(f"--project: no '{pre}...' attention instance found in the sm_52 SASS")
    return k


def small_items(k, T, n):
    C, H, G, D, F = (GLM[x] for x in "CHGDF")
    pairs = (H + G) * (D // 4)  # rope_dims = D/2: D/4 pairs per head
    return [Item("rmsnorm (+ residual)", 2 * n, T * C * 16 + 2 * C, T * C * k["rmsnorm"]),
            Item("rope", n, T * pairs * 16, T * pairs * k["rope (shared table)"]),
            Item("kv_append (K, V; one launch)", n, T * G * D * 6, T * G * D * k["kv_append (f16 cache)"]),
            Item("swiglu", n, T * F * 12, T * F * k["swiglu"])]


# decode v5 under a key bound <= ATTN_SHORT_KEYS (lib/ops/attention.c
# attn_bound): its ways, (16, 1) (sessions 29-30), up to ATTN_V5_WAYS_KEYS;
# past it decode v6. The H100's rule: 512. On a Maxwell card (cc 5.x) the
# node keeps v5 to ATTN_SHORT_KEYS_MAXWELL (128) keys: v5 reads and converts
# each key once a query row (16 a KV group), ~5x v6's instructions a key
# (docs/projections.md, "The short-context decode attention on an M40")
V5_KEYS = {"h100": 512, "m40": 128}


def attn_kind(ctx, rule):
    """the decode attention the node runs at ctx keys under a bound of ctx
    (the chat's ladder and m40-bench give one): 'ways', or 'v6'"""
    return "ways" if ctx <= V5_KEYS[rule] else "v6"


def attn_items(k, ctx, kind, cache=8192):
    """The decode attention node at ctx keys under a bound of ctx in a cache
    of `cache` keys, its RoPE and K/V append fused (sessions 10, 18, 19), as
    kind runs it: 'ways' (v5 (16, 1): a block a query row, no partials, no
    combine), 'splits' (v5, ceil(ctx / 16) splits a KV group, at most 32
    and a wave of 2 blocks an SM, + attn_combine), 'v6' (8 rows a lane from
    256 key-groups an SM, else 4; its splits, a wave of one block an SM,
    from the cache length, every one launched and folded (session 28), the
    blocks with keys ceil(ctx / 32) a group; + attn_combine)"""
    H, G, D, L = (GLM[x] for x in "HGDL")
    hpg = H // G
    pairs = (H + G) * (D // 4)  # q and K turned; rope_dims = D/2: D/4 pairs a head
    # the new position's RoPE and K/V append, inside the attention kernel:
    # counted, no launch (its qkv read is the attention's q read below)
    it = [Item("rope + K/V append (in the attention kernel)", L, 2 * G * D * 2,
               pairs * k["rope (shared table)"] + G * D * 2 * k["kv_append (f16 cache)"], launches=0)]
    if kind == "v6":
        ad = k["att_v6_8"] if ctx * G >= 256 * SMS else k["att_v6_4"]
        s = max(1, min(-(-SMS // G), -(-cache // 32)))  # launched and folded
        busy = max(1, min(s, -(-ctx // 32)))            # with keys
    else:
        ad = k["att_v5w"] if kind == "ways" else k["att_v5s"]
        s = busy = 1 if kind == "ways" else max(1, min(32, -(-2 * SMS // G), -(-ctx // 16)))
    blocks = G * hpg if kind == "ways" else G * busy  # ways: a block a query row
    part = 0 if s == 1 else H * s * (D + 2) * 4  # the partials (m, l, out[D]) a head and split
    it.append(Item("attention decode", L, ctx * G * 2 * D * 2 + (H + 2 * G) * D * 4 + (H * D * 4 if s == 1 else part),
                   ctx * G * ad["per_key_per_group_weighted"], ctx * G * ad["ffma_per_row_key"] * hpg,
                   sms=blocks / -(-blocks // SMS), note=f"{ad['kernel']}, {s} splits, {blocks} blocks with keys"))
    if s > 1:
        it.append(Item("attention combine", L, part + H * D * 4, H * s * D * k["attention combine"], sms=min(SMS, H)))
    return it


def decode_items(k, fmt, ctx, sampling="top-p", rule="m40"):
    """The fused graph lib/models/chatglm2.c builds on one GPU (sessions 8-30):
    RMSNorm inside the int8/int4 linears after it (fp16: its own kernel),
    the residual in the epilogues of dense and dense_4h_to_h, RoPE and the
    K/V append inside the decode attention (attn_items), SwiGLU in h_to_4h's
    store (session 16); a layer 5-6 launches for int4 (the combine after
    v6), one more for int8 on 24 SMs (v3's split-K sum), fp16 two more (its
    norms). rule: whose key bound for v5 (V5_KEYS)."""
    C, H, G, D, F, V, L = (GLM[x] for x in "CHGDFVL")
    kind = attn_kind(ctx, rule)
    norm_fused = fmt != "fp16"
    it = [Item("embedding (1 row)", 1, C * 6, C * k["embedding (f16 table)"])]
    norms = [] if norm_fused else [Item("rmsnorm (fp16: its own kernel)", 2 * L, C * 8 + 2 * C, C * k["rmsnorm"])]
    qkv = gemv("qkv (bias, norm fused)" if norm_fused else "qkv (bias)", fmt, (H + 2 * G) * D, C, True, L)
    h4h = gemv("h_to_4h (norm fused)" if norm_fused else "h_to_4h", fmt, 2 * F, C, False, L)
    if norm_fused:
        qkv.bytes += 2 * C
        h4h.bytes += 2 * C
    dense = gemv("dense (+ residual)", fmt, C, H * D, False, L)
    down = gemv("4h_to_h (+ residual)", fmt, C, F, False, L)
    dense.bytes += 4 * C
    down.bytes += 4 * C
    it += [qkv, dense, h4h, down] + norms
    # SwiGLU in h_to_4h's GEMV store (session 16, every format of the fused
    # graph): no launch; its bytes and instructions still counted
    it.append(Item("swiglu (in h_to_4h's store)", L, F * 12, F * k["swiglu"], launches=0))
    it += attn_items(k, ctx, kind)
    it.append(Item("final rmsnorm (the fp16 output layer: its own kernel)", 1, C * 8 + 2 * C, C * k["rmsnorm"]))
    it.append(gemv("lm head (fp16)", "fp16", V, C, False, 1))
    passes = 6 if sampling == "top-p" else 1
    it.append(Item(f"sampling ({sampling}, 1 block)", 1, V * 4 * 2,
                   V * (k["sample pass 1"] + passes * k["sample digit"]), sms=1,
                   note="provisional"))
    return it


def prefill_items(k, fmt, T):
    C, H, G, D, F, V, L = (GLM[x] for x in "CHGDFVL")
    ap = k["att_pre"]
    it = [Item("embedding", 1, T * C * 6, T * C * k["embedding (f16 table)"])]
    it += [gemm("qkv (bias)", fmt, T, (H + 2 * G) * D, C, L), gemm("dense", fmt, T, C, H * D, L),
           gemm("h_to_4h", fmt, T, 2 * F, C, L), gemm("4h_to_h", fmt, T, C, F, L)]
    it += small_items(k, T, L)
    # causal tiles: a block holds BM = 32 rows = 2 tokens x 16 heads, keys
    # [0, 2i + 2) in tiles of BN = 32 (kernels/attention.cu)
    pairs = G * sum(32 * (-(-(2 * i + 2) // 32)) * 32 for i in range(T // 2))
    it.append(Item("attention prefill", L, T * G * 2 * D * 2 + 2 * T * H * D * 4,
                   pairs * ap["per_row_key_weighted"], pairs * ap["ffma_per_row_key"],
                   smem=pairs * ap["smem_per_row_key"], note=f"{pairs} (row, key) pairs per layer"))
    it.append(Item("final rmsnorm", 1, T * C * 16, T * C * k["rmsnorm"]))
    it.append(Item("take_last (memcpy2D)", 1, C * 8, 0))
    it.append(gemv("lm head (fp16)", "fp16", V, C, False, 1))
    return it


def total(items, launch_us):
    t = sum(i.n * i.times()[0] for i in items)
    nl = sum(i.n * i.launches for i in items)
    return t, nl, t + nl * launch_us * 1e-6


def md_items(items, title):
    print(f"\n{title}\n")
    print("| op | x | bytes | instructions | t bytes µs | t issue µs | t FFMA µs | t smem µs | projected µs | bound | launches | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i in items:
        t, bound, tb, ti, tf, ts = i.times()
        print(f"| {i.name} | {i.n} | {i.bytes:.3g} | {i.instr:.3g} | {tb * 1e6:.2f} | {ti * 1e6:.2f} | "
              f"{tf * 1e6:.2f} | {ts * 1e6:.2f} | {t * 1e6:.2f} | {bound} | {i.launches} | {i.note} |")


def print_projection(rows, att, launch_us, markdown, rule="m40"):
    k = kernel_ipe(rows, att)
    print(f"\nPROJECTION, not a measurement: ChatGLM2-6B on an M40 (288.4 GB/s, 3.42e12 "
          f"instructions/s, {launch_us:g} µs per launch, GEMM at {GEMM_EFF:.0%} of 6.84 TFLOP/s)")
    print(f"\ndecode tok/s with the launch cost (kernels only in brackets); top-p sampling included; "
          f"a key bound of ctx (the chat's ladder and m40-bench give one), v5 to {V5_KEYS[rule]} keys\n")
    print("| format | ctx 128 | ctx 1024 | ctx 8192 | launches (128 / 1024 / 8192) |")
    print("|---|---|---|---|---|")
    for fmt in FORMATS:
        cells, ls = [], []
        for ctx in (128, 1024, 8192):
            t, nl, tt = total(decode_items(k, fmt, ctx, rule=rule), launch_us)
            cells.append(f"{1 / tt:.1f} ({1 / t:.1f})")
            ls.append(str(nl))
        print(f"| {fmt} | " + " | ".join(cells) + " | " + " / ".join(ls) + " |")
    # the rule's question on an M40 (lib/ops/attention.c attn_bound): the
    # decode attention node a layer under a key bound, each way it can run
    print(f"\ndecode attention node a layer under a key bound, µs ({launch_us:g} µs a launch included; "
          "the RoPE and append inside)\n")
    sizes = (128, 256, 512, 1024)
    print("| kernel | " + " | ".join(f"ctx {c}" for c in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for kind, what in (("ways", "v5 ways (16, 1)"), ("splits", "v5 splits + combine"), ("v6", "v6 + combine")):
        cells = []
        for c in sizes:
            t, nl, tt = total(attn_items(k, c, kind), launch_us)
            cells.append(f"{tt / GLM['L'] * 1e6:.1f}")
        print(f"| {what} | " + " | ".join(cells) + " |")
    print("\nprefill tok/s (P tokens in one graph run; kernels only in brackets)\n")
    print("| format | P 128 | P 512 | P 2048 | launches (P 128 / 512 / 2048) |")
    print("|---|---|---|---|---|")
    for fmt in FORMATS:
        cells, ls = [], []
        for T in (128, 512, 2048):
            t, nl, tt = total(prefill_items(k, fmt, T), launch_us)
            cells.append(f"{T / tt:.0f} ({T / t:.0f})")
            ls.append(str(nl))
        print(f"| {fmt} | " + " | ".join(cells) + " | " + " / ".join(ls) + " |")
    if markdown:
        for fmt, ctx in (("int4", 8192), ("int8", 1024), ("fp16", 128)):
            md_items(decode_items(k, fmt, ctx, rule=rule), f"decode step, {fmt}, ctx {ctx} (per instance; x = instances per step)")
        md_items(prefill_items(k, "int4", 512), "prefill, P 512 (int4; the GEMMs are the same FFMA for every format)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--budget", type=float, default=BUDGET_IPB,
                    help="--check's weighted instructions per DRAM byte (default 6)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--project", action="store_true", help="print the ChatGLM2-6B M40 projection")
    ap.add_argument("--rule", choices=sorted(V5_KEYS), default="m40",
                    help="--project's key bound for decode v5: the M40's (128, the library's on cc 5.x) or the H100's (512)")
    ap.add_argument("--markdown", action="store_true", help="with --project: per-op tables")
    ap.add_argument("--launch-us", type=float, default=3.0, help="fixed cost per launch (projection)")
    args = ap.parse_args()
    paths = [p for arg in args.paths for p in arg.split(";") if p]  # CMake lists arrive joined
    fam = ("norm", "rope", "swiglu", "embedding", "attention", "sample")
    if len(paths) > 1:
        paths = [p for p in paths if any(re.search(rf"(^|/){f}\.cu", p) for f in fam) or
                 p.endswith(".sass")]
    text = "\n".join(sass_text(p, args.cuobjdump) for p in paths)
    rows, att, missing = analyse(text)
    if not rows and not att:
        sys.exit("no transformer kernel found (sm_52 SASS of kernels/{norm,rope,...}.cu expected)")
    if args.json:
        print(json.dumps({"ops": [r.as_dict() for r in rows], "attention": att}, indent=1))
        return 0
    failures = 0
    print(f"{'op':34s} {'unit':12s} {'/iter':>5s} {'static':>7s} {'hot':>6s} {'weighted':>8s} "
          f"{'B/unit':>6s} {'ipb':>5s}  (instructions per unit; ipb = weighted per DRAM byte)")
    for r in rows:
        d = r.as_dict()
        ipb = d.get("weighted_ipb")
        over = r.checked and ipb is not None and ipb > args.budget
        failures += over
        print(f"{r.op:34s} {r.unit:12s} {r.elems:5d} {d['static_ipe']:7.2f} {d['hot_ipe']:6.2f} "
              f"{d['weighted_ipe']:8.2f} {r.bpe or 0:6d} {ipb if ipb else 0:5.2f}"
              f"{'  OVER' if over else ''}{'' if r.checked else '  (not checked)'}")
    for a in att:
        print(f"{a['op']:34s} {a['kernel']}: tile loop {a['tile_static']:.0f} static, "
              f"{a['tile_hot']:.0f} hot ({a['tile_quarter']:.0f} F2F/MUFU) per thread per tile")
        print(f"{'':34s} per key per KV group {a['per_key_per_group']:.0f} "
              f"(weighted {a['per_key_per_group_weighted']:.0f}) for {a['bytes_per_key_per_group']} B: "
              f"{a['per_key_per_group_weighted'] / a['bytes_per_key_per_group']:.1f} per byte; "
              f"per (query row, key) {a['per_row_key']:.1f} (weighted "
              f"{a['per_row_key_weighted']:.1f}; FFMA {a['ffma_per_row_key']:.1f})")
    for m in missing:  # a renamed kernel or a new loop shape: the check must not pass silently
        print(f"{m}: its kernel or loop was not found")
    failures += len(missing)
    print(f"M40: {M40_ISSUE / M40_BW:.1f} instructions per byte at 100% issue; budget for the "
          f"checked ops {args.budget:g}; {failures} over or not found")
    if args.project:
        print_projection(rows, att, args.launch_us, args.markdown, args.rule)
    return 1 if (args.check and failures) else 0


if __name__ == "__main__":
    sys.exit(main())
