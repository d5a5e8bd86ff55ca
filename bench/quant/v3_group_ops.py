#!/usr/bin/env python3
"""Per-opcode counts of v3's row group (gemv_kernel<WT, 1, R, G, false, 4,
true>, the norm instance dense_h_to_4h runs) in cuobjdump -sass listings,
before and after a change (session 41, bench/NOTES.md).

    bench/quant/v3_group_ops.py BEFORE.sass AFTER.sass [WT R G]   (default 65 2 0: int4, R 2, row scales)

The group loop is the largest backward-branch loop holding FFMA; its chunk
loop (the inner one) and the chunk loop's preheader (from the forward branch
over it to its target) are left out: at K 4096 int4 (4 chunks, D 4) a group
never enters them. Both store paths (SwiGLU pairs or not) are counted, as a
static count does. The chunk loop's own size is printed beside (int8 at
K 4096, 8 chunks, runs it once a group)."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import sass_common  # noqa: E402


def region(path, key):
    for name, arch, body in sass_common.functions(open(path).read()):
        if key not in name:
            continue
        loops = []
        for a, _, o, args in body:
            m = re.search(r"0x([0-9a-f]+)", args) if o.startswith("BRA") else None
            if m and int(m.group(1), 16) < a:
                t = int(m.group(1), 16)
                loops.append((t, a, sum(1 for b, _, p, _ in body if t <= b <= a and p.startswith("FFMA"))))
        fl = [lp for lp in loops if lp[2] > 0]
        g = max(fl, key=lambda lp: lp[1] - lp[0])
        inner = [lp for lp in fl if lp is not g and g[0] <= lp[0] and lp[1] <= g[1]][0]
        skip = (inner[0], inner[1])
        for a, _, o, args in body:
            if g[0] <= a < inner[0] and o.startswith("BRA"):
                t = int(re.search(r"0x([0-9a-f]+)", args).group(1), 16)
                if t > inner[1]:
                    skip = (a + 1, t - 1)
        ops = collections.Counter(o.split(".")[0] for a, _, o, _ in body
                                  if g[0] <= a <= g[1] and not skip[0] <= a <= skip[1])
        n_inner = sum(1 for a, _, _, _ in body if inner[0] <= a <= inner[1])
        return arch, ops, n_inner
    sys.exit(f"{path}: no function matching {key}")


def main():
    wt, r, gs = (sys.argv[3:6] if len(sys.argv) >= 6 else ("65", "2", "0"))
    key = f"gemv_kernelILi{wt}ELi1ELi{r}ELi{gs}ELb0ELi4ELb1E"
    arch, b, bi = region(sys.argv[1], key)
    _, a, ai = region(sys.argv[2], key)
    print(f"{arch} {key}: a row group {sum(b.values())} -> {sum(a.values())}; the chunk loop {bi} -> {ai}")
    for k in sorted(set(b) | set(a), key=lambda k: -(b[k] + a[k])):
        d = a[k] - b[k]
        print(f"  {k:8s} {b[k]:4d} {a[k]:4d}" + (f" {d:+4d}" if d else ""))


if __name__ == "__main__":
    main()
