#!/usr/bin/env python3
"""Resource table for every kernel from `ptxas -v` output (the sm_52 build log).

Usage: scripts/ptxas_table.py BUILD_LOG [--arch sm_52] [--max-smem 49152]

Prints kernel, registers, static shared memory, stack frame and spills, and
exits 1 on any spill, on shared memory over the per-block limit (48 KB on
sm_52), on more than 255 registers, or when no kernel was found (a build
without -Xptxas -v would otherwise pass silently). Dynamic shared memory is
not in ptxas's report: kernels that use it check their size at launch.
"""
import argparse
import re
import shutil
import subprocess
import sys


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                         text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--arch", default="sm_52")
    ap.add_argument("--max-smem", type=int, default=48 * 1024)
    a = ap.parse_args()
    kernels = {}  # mangled name -> dict
    cur = None
    for line in open(a.log, errors="replace"):
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            cur = m.group(1) if m.group(2) == a.arch else None
            if cur:
                kernels.setdefault(cur, {"regs": 0, "smem": 0, "stack": 0, "st": 0, "ld": 0})
            continue
        if not cur:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            k = kernels[cur]
            k["stack"], k["st"], k["ld"] = (int(x) for x in m.groups())
            continue
        m = re.search(r"Used (\d+) registers(?:, (\d+) bytes smem)?", line)
        if m:
            kernels[cur]["regs"] = int(m.group(1))
            kernels[cur]["smem"] = int(m.group(2) or 0)
            cur = None
    if not kernels:
        print(f"ptxas_table: no {a.arch} kernels in {a.log} (built without -Xptxas -v?)")
        return 1
    names = demangle(sorted(kernels))
    bad = []
    rows = []
    for mangled, k in sorted(kernels.items(), key=lambda kv: names[kv[0]]):
        name = names[mangled]
        name = re.sub(r"\(.*\)$", "", name)  # drop the parameter list
        flags = []
        if k["st"] or k["ld"]:
            flags.append("SPILLS")
        if k["smem"] > a.max_smem:
            flags.append("SMEM>48KB")
        if k["regs"] > 255:
            flags.append("REGS>255")
        if flags:
            bad.append(name)
        rows.append((name, k["regs"], k["smem"], k["stack"], k["st"], k["ld"], " ".join(flags) or "ok"))
    w = max(len(r[0]) for r in rows)
    print(f"{'kernel (' + a.arch + ')':<{w}}  regs  smem(B)  stack(B)  spill-st  spill-ld  status")
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:>4}  {r[2]:>7}  {r[3]:>8}  {r[4]:>8}  {r[5]:>8}  {r[6]}")
    print(f"ptxas_table: {len(rows)} kernels, {len(bad)} over limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
