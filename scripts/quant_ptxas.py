#!/usr/bin/env python3
"""Summarizes `ptxas -v` output (sm_52) for the quantized kernels: registers,
shared memory and spills per kernel, one line each; exits 1 on any spill or
stack frame, or shared memory over 48 KB. Usage: quant_ptxas.py build.log"""
import re
import subprocess
import sys


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
        return out.stdout.splitlines()
    except OSError:
        return names


def main(path):
    lines = open(path, errors="replace").read().splitlines()
    rows, cur, arch = {}, None, None
    for i, line in enumerate(lines):
        m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+)'", line)
        if m:
            cur, arch = m.group(1), m.group(2)
            continue
        if cur and "quant_" in cur and arch == "sm_52":
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                rows.setdefault(cur, {})["frame"] = tuple(int(g) for g in m.groups())
            m = re.search(r"Used (\d+) registers(?:, (\d+) bytes smem)?", line)
            if m:
                rows.setdefault(cur, {})["regs"] = int(m.group(1))
                rows[cur]["smem"] = int(m.group(2) or 0)
    if not rows:
        print("no quant kernels in", path)
        return 1
    names = list(rows)
    bad = 0
    for mangled, pretty in zip(names, demangle(names)):
        r = rows[mangled]
        frame = r.get("frame", (0, 0, 0))
        flag = ""
        if any(frame) or r.get("smem", 0) > 48 * 1024:
            flag, bad = "  <-- SPILL/STACK/SMEM", bad + 1
        short = re.sub(r"\(anonymous namespace\)::", "", pretty).replace("(m40k_qlinear_args)", "")
        print(f"{short:48s} regs {r.get('regs', 0):3d}  smem {r.get('smem', 0):6d}  "
              f"stack {frame[0]:3d}  spill {frame[1]}/{frame[2]}{flag}")
    print(f"{len(rows)} kernels, {bad} with spills/stack/smem > 48 KB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build.log"))
