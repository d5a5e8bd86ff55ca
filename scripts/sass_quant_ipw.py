#!/usr/bin/env python3
"""Instructions per weight in the inner loop of the quantized GEMV kernels,
from the sm_52 SASS (cuobjdump -sass, CUDA 11.8).

    scripts/sass_quant_ipw.py OBJ_OR_SASS... [--check] [--batch 1] [--cuobjdump PATH]

OBJ_OR_SASS: kernels/quant_gemv.cu's object file (cuobjdump runs on it) or
a saved `cuobjdump -sass` listing. v2's kind names its form: n the norm
fused, w x staged whole, pP P chunks in flight, kKS a row's K over KS warps,
ez the exponent-zero decode. scale: row, g16 / g32 (group scales in fp16 /
fp32: GROUPED 2 / 1 since 2026-12-05), grt (GROUPED 3: the dtype taken at
run time, v3's int8), group (an older build's bool GROUPED: the same). For
each gemv_kernel<WT, B, R, GROUPED, SEG, D> (v3, int8/int4) and
gemv_v2_kernel<WT, B, R, GROUPED> (fp16; int8/int4 at batch 1 and 8 for
comparison) the script finds the loop over K-chunks (the
innermost backward branch whose body holds at least one chunk's FFMA (int8,
int4: B per weight) or F2F (fp16: one per weight)), counts the static
instructions of that body, including the x-staging code inside it, and
divides by the weights each thread handles per iteration (R rows x 32
columns for int4, 16 for int8, 8 for fp16, times the unroll factor, read
off the number of FFMA / F2F). --check fails (exit 1) if a
batch-1 kernel exceeds the budget: 7 per int4 weight, 12 per int8 weight.
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_common  # noqa: E402
from sass_common import sass_text  # noqa: E402

WT_NAME = {1: "f16", 64: "int8", 65: "int4"}
VEC_COLS = {1: 8, 64: 16, 65: 32}
BUDGET = {65: 7.0, 64: 12.0}

# v3 (int8/int4): gemv_kernel<WT, B, R, GROUPED, SEG, D, MINB>; v2 (fp16, and the
# int8/int4 kernel before v3): gemv_v2_kernel<WT, B, R, GROUPED>
KERNEL = re.compile(r"gemv(_v2)?_kernelILi(\d+)ELi(\d+)ELi(\d+)EL([bi])([0-3])E(?:Lb([01])ELi(\d+)E(?:Li(\d+)E)?)?")
# v2's tail: <..., GROUPED, NORM, WHOLE, P, KS, EZ>
V2_TAIL = re.compile(r"gemv_v2_kernelILi\d+ELi\d+ELi\d+EL[bi][0-3]ELb([01])ELb([01])ELi(\d+)ELi(\d+)ELb([01])E")


def functions(text):
    """(name, arch, [(addr, op, args)]) per function."""
    for name, arch, body in sass_common.functions(text):
        yield name, arch, [(a, op, args) for a, _, op, args in body]


def inner_loop(body, marker, min_marks):
    """(start, end) of the innermost backward-branch loop holding at least
    min_marks marker insns (one chunk's dequantization); v3's row-group loop
    encloses its chunk loop, and the innermost one is the steady state."""
    best, best_len = None, None
    for addr, op, args in body:
        if op.startswith("BRA"):
            m = re.search(r"0x([0-9a-f]+)", args)
            if not m:
                continue
            tgt = int(m.group(1), 16)
            if tgt >= addr:
                continue
            n = sum(1 for a, o, _ in body if tgt <= a <= addr and o.startswith(marker))
            if n >= min_marks and (best_len is None or addr - tgt < best_len):
                best, best_len = (tgt, addr), addr - tgt
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="object files or SASS listings; with several, "
                    "those named *quant_gemv* are read")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--batch", type=int, default=0, help="only this batch size (0 = all)")
    args = ap.parse_args()
    paths = [p for arg in args.paths for p in arg.split(";") if p]  # CMake lists arrive joined
    paths = paths if len(paths) == 1 else [p for p in paths if "quant_gemv" in p]
    text = "\n".join(sass_text(p, args.cuobjdump) for p in paths)
    rows, failures = [], 0
    for name, arch, body in functions(text):
        m = KERNEL.search(name)
        if not m or (arch and arch != "sm_52"):
            continue
        v2 = m.group(1) is not None
        wt, b, r = (int(g) for g in m.groups()[1:4])
        gk = int(m.group(6))
        grouped = "row" if gk == 0 else "group" if m.group(5) == "b" else ("g32", "g16", "grt")[gk - 1]
        seg = int(m.group(7) or 0)
        depth = int(m.group(8) or 0)  # v3: chunks in flight per warp
        if args.batch and b != args.batch:
            continue
        minb = int(m.group(9) or 1)
        # one F2F per fp16 weight; B FFMA per int8/int4 weight (v3's decode
        # has no per-weight PRMT any more; group scales add R*B FFMA per
        # chunk, which the rounding absorbs)
        marker, per_w = ("F2F", 1) if wt == 1 else ("FFMA", b)
        loop = inner_loop(body, marker, r * VEC_COLS[wt] * per_w)
        if not loop:
            continue
        ins = [(a, o) for a, o, _ in body if loop[0] <= a <= loop[1]]
        # their count tells how many chunks the compiler unrolled into one
        # loop body
        nmark = sum(1 for _, o in ins if o.startswith(marker))
        unroll = max(1, round(nmark / (r * VEC_COLS[wt] * per_w)))
        weights = r * VEC_COLS[wt] * unroll
        ipw = len(ins) / weights
        ops = collections.Counter(o.split(".")[0] for _, o in ins)
        top = " ".join(f"{k}:{v}" for k, v in ops.most_common(7))
        budget = BUDGET.get(wt) if b == 1 else None
        ok = budget is None or ipw <= budget
        failures += not ok
        t = V2_TAIL.search(name) if v2 else None
        v2kind = "v2" if not t else "v2" + ("n" if t.group(1) == "1" else "") + ("w" if t.group(2) == "1" else "") + \
            (f"p{t.group(3)}" if t.group(3) != "1" else "") + (f"k{t.group(4)}" if t.group(4) != "1" else "") + \
            ("ez" if t.group(5) == "1" else "")
        kind = v2kind if v2 else ("v3seg" if seg else "v3") + (f"D{depth}" if depth else "") + \
            ("m2" if minb == 2 else "")
        rows.append((wt, b, r, grouped, kind, len(ins), weights, ipw, budget, ok, top))
    if not rows:
        sys.exit("no gemv_kernel found (sm_52 SASS expected)")
    rows.sort(key=lambda t: (t[0], t[1], t[2], t[3] != "row", t[3], t[4:]))
    print(f"{'format':6s} {'B':>2s} {'R':>2s} {'scale':5s} {'kernel':8s} {'insns':>6s} {'w/thr':>6s} "
          f"{'ipw':>6s} {'budget':>6s}  top opcodes")
    for wt, b, r, g, kind, n, w, ipw, budget, ok, top in rows:
        bud = f"{budget:.0f}" if budget else "-"
        print(f"{WT_NAME[wt]:6s} {b:2d} {r:2d} {g:5s} {kind:8s} {n:6d} {w:6d} "
              f"{ipw:6.2f} {bud:>6s}{'' if ok else ' OVER'}  {top}")
    print(f"per-weight FFMA floor is B (batch rows); {failures} batch-1 kernels over budget")
    return 1 if (args.check and failures) else 0


if __name__ == "__main__":
    sys.exit(main())
