#!/usr/bin/env python3
"""Instructions per element of the transformer kernels' hot loops, from the
sm_52 SASS (cuobjdump -sass, CUDA 11.8): the issue side of the M40
projections in docs/projections.md (issues 16, 17).

    scripts/sass_ops_ipe.py OBJ_OR_SASS... [--check] [--json] [--cuobjdump PATH]

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
The attention tile kernel is reported, not checked: at decode it shares each
K/V row among 16 heads (8 FFMA per byte before any overhead) by design.
"""
import argparse
import bisect
import collections
import json
import re
import subprocess
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s*\{?\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;}]*)[;}]")
FUNC = re.compile(r"Function : (\S+)")
QUARTER = ("F2F", "I2F", "F2I", "MUFU")
BUDGET_IPB = 6.0
M40_ISSUE = 24 * 128 * 1.114e9  # thread-instructions per second
M40_BW = 288.4e9


def sass_text(path, cuobjdump):
    if path.endswith((".o", ".obj", ".a", ".so", ".cubin")):
        out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"cuobjdump failed on {path}: {out.stderr.strip()}")
        return out.stdout
    return open(path).read()


def functions(text):
    """(name, [(addr, pred, op, args)]) per sm_52 function."""
    cur, body, arch = None, [], None
    for line in text.splitlines():
        m = re.search(r"arch = (sm_\d+)", line)
        if m:
            arch = m.group(1)
        m = FUNC.search(line)
        if m:
            if cur and arch == "sm_52":
                yield cur, body
            cur, body = m.group(1), []
            continue
        m = INSN.search(line)
        if m and cur:
            body.append((int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4)))
    if cur and arch == "sm_52":
        yield cur, body


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


ATT = re.compile(r"attn_kernelILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E(6__half|f)E")
NT = 128


def attention_row(fname, body, label):
    m = ATT.search(fname)
    dp, bm, bn, sr, sc, orr = (int(g) for g in m.groups()[:6])
    lps = loops(body)
    inner = innermost(lps)
    big = [l for l in inner if count(ops(body, l), "FFMA") >= 64]
    tile = [l for l in lps if sum(1 for b in big if l[0] < b[0] and b[1] < l[1]) >= 2]
    if not tile:
        return None
    tl = min(tile, key=lambda l: l[1] - l[0])
    qk_ffma, pv_ffma = sr * sc * dp, orr * 8 * bn
    coll = {}
    # the Q.K^T loop comes first in the tile loop, then P.V (the source order)
    for k, b in enumerate(sorted(x for x in big if tl[0] < x[0] and x[1] < tl[1])[:2]):
        f = count(ops(body, b), "FFMA")
        trips = (qk_ffma if k == 0 else pv_ffma) / f
        coll[b[0]] = (b[1], trips * (b[1] - b[0] + 1))
    # the vector path of the tile loads; not the scalar fallback
    n, q = hot_path(body, tl, req(body, tl, r"LDG\.E\.128|STS\.128"), coll)
    static = (tl[1] - tl[0] + 1) + sum(c - (b - h + 1) for h, (b, c) in coll.items())
    keys = bn
    rows = bm
    elem = 2 if "6__half" in fname else 4
    # per key per KV group (decode: the block's 16 rows are the group's 16
    # heads at T = 1) and per (query row, key) (prefill)
    per_key = NT * n / keys
    return {"op": label, "kernel": f"attn_kernel<{dp},{bm},{bn},{sr},{sc},{orr}>",
            "tile_static": static, "tile_hot": n, "tile_quarter": q,
            "per_key_per_group": per_key, "per_key_per_group_weighted": NT * (n + 3 * q) / keys,
            "per_row_key": per_key / rows, "per_row_key_weighted": NT * (n + 3 * q) / keys / rows,
            "bytes_per_key_per_group": 2 * dp * elem,
            "ffma_per_row_key": (qk_ffma + pv_ffma) * NT / keys / rows}


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
        rows.append(Row("sample " + kind, "sample_kernel", "logit/pass", 8, lp[1] - lp[0] + 1,
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
    (r"attn_combine", ("attention combine", "split x dim",
     lambda c: count(c, "FFMA") if has(c, "LDG", "FFMA") and not count(c, "MUFU") else 0,
     r"LDG", 4, True, False)),
]
ATT_USED = [(r"attn_kernelILi128ELi16ELi64ELi2ELi4ELi2ELi4E6__half", "attention decode (f16 cache)"),
            (r"attn_kernelILi128ELi32ELi32ELi2ELi4ELi4ELi3E6__half", "attention prefill (f16 cache)")]


def analyse(text):
    funcs = list(functions(text))
    rows, att = [], []
    for rx, spec in SPECS:
        for name, body in funcs:
            if re.search(rx, name):
                r = loop_rows(name, body, spec)
                if r:
                    rows.append(r)
                break
    for rx, label in ATT_USED:
        for name, body in funcs:
            if re.search(rx, name):
                a = attention_row(name, body, label)
                if a:
                    att.append(a)
    for name, body in funcs:
        if "sample_kernel" in name:
            rows += sample_rows(name, body)
    return rows, att


# ---- projection (docs/projections.md): ChatGLM2-6B on an M40 ------------------
# Labelled a projection everywhere: bytes at 288.4 GB/s against instructions at
# 3.42e12/s, per kernel, the larger wins; plus a fixed cost per launch.
GLM = dict(L=28, C=4096, H=32, G=2, D=128, F=13696, V=65024)
SMS = 24
# GEMV instructions per weight at batch 1 (scripts/sass_quant_ipw.py on the
# sm_52 build, 2026-12-01; docs/quant.md), for the variant
# m40k_quant_gemv_choose picks on 24 SMs: K = 4096: v3 whole (R = 2, D = 4;
# group scales R = 4); K = 13696 (x does not fit 48 KB): int8 split-K (R = 2,
# D = 2, 2 splits + a sum kernel), int4 / int4g128 v2 (R = 2). fp16: v2 R = 2
# plus one F2F per weight (quarter rate: +3 issue slots).
IPW = {"fp16": {4096: 3.75 + 3, 13696: 3.75 + 3},
       "int8": {4096: 2.83, 13696: 2.88},
       "int4": {4096: 2.61, 13696: 4.16},
       "int4g128": {4096: 2.88, 13696: 5.70}}
BPW = {"fp16": 2.0, "int8": 1.0 + 2.0 / 4096, "int4": 0.5 + 2.0 / 4096, "int4g128": 0.5 + 2.0 / 128}
GEMM_EFF = 0.75  # of 6.84 TFLOP/s: assumption (docs/projections.md)
PEAK = 2 * M40_ISSUE  # FLOP/s, FFMA = 2


def t_op(bytes_, instr, sms=SMS):
    tb, ti = bytes_ / M40_BW, instr / (M40_ISSUE * sms / SMS)
    return max(tb, ti), ("bytes" if tb >= ti else "issue"), tb, ti


def gemv(fmt, N, K, bias):
    b = N * K * BPW[fmt] + K * 4 + N * 4 + (N * 4 if bias else 0)
    launches = 1
    if fmt == "int8" and K == 13696:  # split-K: partials written and summed
        b += 2 * N * 4 * 2 + N * 4
        launches = 2
    return b, N * K * IPW[fmt][K], launches


def gemm(M, N, K):
    """the quant GEMM (128x128 tiles, 2 blocks per M40 SM), split-K as the
    launcher does it (kernels/quant_gemm.cu) -> (time, launches)"""
    gx, gy, nk = -(-N // 128), -(-M // 128), -(-K // 16)
    splits = 1
    while splits < 8 and gx * gy * splits < 2 * SMS and nk // (splits * 2) >= 16:
        splits *= 2
    blocks, slots = gx * gy * splits, 2 * SMS
    waves = -(-blocks // slots)
    fill = blocks / (waves * slots)
    return 2.0 * M * N * K / (PEAK * GEMM_EFF * fill), 1 + (splits > 1)


def attn_splits(n):
    slots = 2 * SMS
    base = GLM["G"]
    s = -(-slots // base)
    return max(1, min(s, -(-n // 64), 1024))


def project(rows, att, launch_us, sample_mode="top-p"):
    k = {r.op: r.as_dict()["weighted_ipe"] for r in rows}
    k_static = {}
    for r in rows:
        k_static.setdefault(r.op, []).append(r.static / r.elems)
    dec = next(a for a in att if "decode" in a["op"])
    pre = next(a for a in att if "prefill" in a["op"])
    C, H, G, D, F, V, L = (GLM[x] for x in "CHGDFVL")
    rms_ipe = k["rmsnorm pass 1 (x += r)"] + k["rmsnorm pass 2 (y = x*inv*w)"]
    out = {}

    def small_ops(rows_):
        """norm, rope, kv_append, swiglu for `rows_` token rows: [(name, t, bound, launches)]"""
        r = []

        def add(name, n, b, i, la):
            t, bound, _, _ = t_op(b, i)
            r.append((name, n * t, bound, la))
        add("rmsnorm x2", 2, rows_ * C * 16 + 2 * C, rows_ * C * rms_ipe, 2)
        pairs = (H + G) * (D // 4)
        add("rope", 1, rows_ * pairs * 16, rows_ * pairs * k["rope (shared table)"], 1)
        add("kv_append x2", 2, rows_ * G * D * 6, rows_ * G * D * k["kv_append (f16 cache)"], 2)
        add("swiglu", 1, rows_ * F * 12, rows_ * F * k["swiglu"], 1)
        return r

    for fmt in ("fp16", "int8", "int4", "int4g128"):
        for n in (128, 1024, 8192):
            items = []  # (name, seconds per step, bound, launches)
            items.append(("embedding", t_op(C * 6, C * k["embedding (f16 table)"])[0], "bytes", 1))
            per = []
            for name, (N, K, bias) in (("qkv", ((H + 2 * G) * D, C, True)), ("dense", (C, H * D, False)),
                                       ("h_to_4h", (2 * F, C, False)), ("4h_to_h", (C, F, False))):
                b, i, la = gemv(fmt, N, K, bias)
                t, bound, _, _ = t_op(b, i)
                per.append((name, t, bound, la))
            per += small_ops(1)
            s = attn_splits(n)
            ab = n * G * 2 * D * 2 + H * D * 4 + H * s * (D + 2) * 4
            ai = n * G * dec["per_key_per_group_weighted"]
            t, bound, tb, ti = t_op(ab, ai, min(SMS, G * s))
            per.append(("attention", t, bound, 1))
            cb = 2 * H * s * (D + 2) * 4 + H * D * 4
            per.append(("combine", t_op(cb, H * s * D * k["attention combine"])[0], "bytes", 1 if s > 1 else 0))
            for name, t, bound, la in per:
                items.append((name, L * t, bound, L * la))
            items.append(("final rmsnorm", t_op(C * 16 + 2 * C, C * rms_ipe)[0], "bytes", 1))
            b, i, la = gemv("fp16", V, C, False)
            items.append(("lm head (fp16)", t_op(b, i)[0], "bytes", la))
            passes = [x for x in k_static if x.startswith("sample")]
            p1 = max(k_static.get("sample pass 1 (z, max)", [30]))
            dg = max(k_static.get("sample select digit", [36]))
            sinst = V * (p1 + 6 * dg) if sample_mode == "top-p" else V * (p1 + dg)
            items.append(("sampling (1 SM)", t_op(V * 4 * 2, sinst, 1)[0], "issue", 1))
            kern = sum(t for _, t, _, _ in items)
            nl = sum(la for _, _, _, la in items)
            out[(fmt, n)] = dict(items=items, kernels=kern, launches=nl,
                                 tok_s=1.0 / (kern + nl * launch_us * 1e-6),
                                 tok_s_0=1.0 / kern, tok_s_5=1.0 / (kern + nl * 5e-6))
    pre_out = {}
    for fmt in ("fp16", "int8", "int4", "int4g128"):
        for T in (128, 512, 2048):
            items = [("embedding", t_op(T * C * 6, T * C * k["embedding (f16 table)"])[0], "bytes", 1)]
            per = []
            for name, (N, K) in (("qkv", ((H + 2 * G) * D, C)), ("dense", (C, H * D)),
                                 ("h_to_4h", (2 * F, C)), ("4h_to_h", (C, F))):
                t, la = gemm(T, N, K)
                per.append((name, t, "FFMA", la))
            per += small_ops(T)
            # causal tiles: block i holds rows of tokens 2i, 2i+1 (BM 32 = 2 x 16
            # heads), keys [0, 2i + 2) in tiles of 32
            pairs = G * sum(32 * (-(-(2 * i + 2) // 32)) * 32 for i in range(T // 2))
            ab = T * G * 2 * D * 2 + 2 * T * H * D * 4
            t, bound, tb, ti = t_op(ab, pairs * pre["per_row_key_weighted"])
            per.append(("attention", t, bound, 1))
            for name, t, bound, la in per:
                items.append((name, L * t, bound, L * la))
            items.append(("final rmsnorm", t_op(T * C * 16, T * C * rms_ipe)[0], "bytes", 1))
            items.append(("take_last", t_op(C * 8, 0)[0], "bytes", 1))
            b, i, la = gemv("fp16", V, C, False)
            items.append(("lm head (fp16)", t_op(b, i)[0], "bytes", la))
            kern = sum(t for _, t, _, _ in items)
            nl = sum(la for _, _, _, la in items)
            pre_out[(fmt, T)] = dict(items=items, kernels=kern, launches=nl,
                                     tok_s=T / (kern + nl * launch_us * 1e-6))
    return out, pre_out


def print_projection(rows, att, launch_us):
    dec, pre = project(rows, att, launch_us)
    print(f"\nPROJECTION, not a measurement: ChatGLM2-6B on an M40 (288.4 GB/s, 3.42e12 "
          f"instructions/s, {launch_us:g} us per launch)")
    print("decode tok/s   ctx 128   ctx 1024  ctx 8192   (no launch cost / 5 us per launch at 8192)  launches")
    for fmt in ("fp16", "int8", "int4", "int4g128"):
        v = [dec[(fmt, n)] for n in (128, 1024, 8192)]
        print(f"  {fmt:9s} {v[0]['tok_s']:8.1f} {v[1]['tok_s']:9.1f} {v[2]['tok_s']:9.1f}   "
              f"({v[2]['tok_s_0']:.1f} / {v[2]['tok_s_5']:.1f}) {v[0]['launches']:5d}")
    print("prefill tok/s  P 128    P 512     P 2048")
    for fmt in ("fp16", "int8", "int4", "int4g128"):
        v = [pre[(fmt, T)] for T in (128, 512, 2048)]
        print(f"  {fmt:9s} {v[0]['tok_s']:8.0f} {v[1]['tok_s']:9.0f} {v[2]['tok_s']:9.0f}")
    for key in (("int4", 8192), ("fp16", 128)):
        print(f"decode step {key[0]} ctx {key[1]}, per op (28 layers summed), ms:")
        for name, t, bound, la in dec[key]["items"]:
            print(f"  {name:18s} {t * 1e3:8.3f}  {bound:6s} launches {la}")
    print("prefill 512 fp16, per op, ms:")
    for name, t, bound, la in pre[("fp16", 512)]["items"]:
        print(f"  {name:18s} {t * 1e3:8.3f}  {bound:6s} launches {la}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--project", action="store_true", help="print the ChatGLM2-6B M40 projection")
    ap.add_argument("--launch-us", type=float, default=3.0, help="fixed cost per launch (projection)")
    args = ap.parse_args()
    paths = [p for arg in args.paths for p in arg.split(";") if p]  # CMake lists arrive joined
    fam = ("norm", "rope", "swiglu", "embedding", "attention", "sample")
    if len(paths) > 1:
        paths = [p for p in paths if any(re.search(rf"(^|/){f}\.cu", p) for f in fam) or
                 p.endswith(".sass")]
    text = "\n".join(sass_text(p, args.cuobjdump) for p in paths)
    rows, att = analyse(text)
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
        over = r.checked and ipb is not None and ipb > BUDGET_IPB
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
    print(f"M40: {M40_ISSUE / M40_BW:.1f} instructions per byte at 100% issue; budget for the "
          f"checked ops {BUDGET_IPB:.0f}; {failures} over")
    if args.project:
        print_projection(rows, att, args.launch_us)
    return 1 if (args.check and failures) else 0


if __name__ == "__main__":
    sys.exit(main())
