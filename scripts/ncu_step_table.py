#!/usr/bin/env python3
"""Summarize `ncu --csv --metrics gpu__time_duration.sum` over profiled decode
steps (scripts/h200-session6.sh): the kernels are split into steps where the
embedding kernel starts one (one step per profiled range), and per step it
prints the kernel count, the sum of the kernels' own durations, and the time
per kernel family (name without template arguments), largest first.
    python3 scripts/ncu_step_table.py ncu.csv"""
import csv
import re
import sys
from collections import OrderedDict

UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
        "second": 1e6}


def base(name):
    n = name.replace("(anonymous namespace)::", "")
    n = re.sub(r"\(.*$", "", n)             # arguments
    depth, out = 0, []
    for ch in n:                             # template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    n = "".join(out).strip()
    return re.sub(r"^void ", "", n)


def main(path):
    rows = []
    with open(path, newline="", errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    rd = csv.reader(lines)
    head = None
    for r in rd:
        if head is None:
            if r and r[0] == "ID":
                head = {k: i for i, k in enumerate(r)}
            continue
        if len(r) < len(head) or r[head["Metric Name"]] != "gpu__time_duration.sum":
            continue
        v = float(r[head["Metric Value"]].replace(",", "")) * UNIT.get(r[head["Metric Unit"]], 1.0)
        rows.append((r[head["Kernel Name"]], r[head["Grid Size"]], v))
    if not rows:
        print("no kernels in", path)
        return 1
    steps, cur = [], []
    for k in rows:
        if "embedding" in k[0].lower() and cur:
            steps.append(cur)
            cur = []
        cur.append(k)
    steps.append(cur)
    for i, st in enumerate(steps):
        tot = sum(v for _, _, v in st)
        print("step %d: %d kernels, sum of their durations %.1f us" % (i + 1, len(st), tot))
        fam = OrderedDict()
        for n, g, v in st:
            b = base(n)
            c, s, mx = fam.get(b, (0, 0.0, 0.0))
            fam[b] = (c + 1, s + v, max(mx, v))
        for b, (c, s, mx) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
            print("  %-48s %4d x  %8.1f us  (%5.1f%%, mean %.2f, max %.2f)" % (
                b[:48], c, s, 100 * s / tot, s / c, mx))
        # the GEMVs by grid (one shape per grid within a step)
        by = OrderedDict()
        for n, g, v in st:
            if "gemv" in n.lower() or "quant" in n.lower() or "sgemm" in n.lower() or "linear" in n.lower():
                key = (base(n), g)
                c, s = by.get(key, (0, 0.0))
                by[key] = (c + 1, s + v)
        for (b, g), (c, s) in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
            print("    %-40s grid %-16s %4d x mean %.2f us" % (b[:40], g, c, s / c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
