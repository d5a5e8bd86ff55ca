#!/usr/bin/env python3
"""FFMA share of the main SGEMM kernel's inner loop, from Maxwell SASS.

Reads `cuobjdump -sass` of the sm_52 build of kernels/sgemm.cu, finds the
main kernel (128x128 tile, Linear layout, F32 B, 16-byte loads by default),
takes its inner loop -- the backward branch whose body holds the most FFMAs --
and counts FFMA against every instruction in that body (NOPs excluded: they
are scheduling padding, not issued work). Fails (exit 1) under --min (90%).

  scripts/sass_ffma_ratio.py [OBJECT...] [--only NAME] [--kernel REGEX] [--min 0.90]
OBJECT defaults to build-sgemm52/CMakeFiles/m40_obj.dir/kernels/sgemm.cu.o.
Several objects (a CMake list: $<TARGET_OBJECTS:m40_obj>) with --only
sgemm.cu: only those whose file name holds NAME are read (cuobjdump over the
whole library disassembles every GEMV instance too: ~90 s against ~8 s).
Exit 77 (skip) if cuobjdump is missing.
"""
import argparse, os, re, shutil, subprocess, sys

DEFAULT_OBJ = "build-sgemm52/CMakeFiles/m40_obj.dir/kernels/sgemm.cu.o"
# sgemm_tile_kernel<128,128,B_NK=true,B_F16=false,VEC=true,CONV=false,BQ=0>
DEFAULT_KERNEL = r"sgemm_tile_kernelILi128ELi128ELb1ELb0ELb1ELb0ELi0E"

ap = argparse.ArgumentParser()
ap.add_argument("obj", nargs="*", default=[DEFAULT_OBJ])
ap.add_argument("--only", default=None, help="read only the objects whose file name holds this")
ap.add_argument("--kernel", default=DEFAULT_KERNEL)
ap.add_argument("--min", type=float, default=0.90)
ap.add_argument("--cuobjdump", default=None)
args = ap.parse_args()

tool = args.cuobjdump or ("/usr/bin/cuobjdump" if os.path.exists("/usr/bin/cuobjdump")
                          else shutil.which("cuobjdump"))
if not tool:
    print("sass_ffma_ratio: no cuobjdump: skipped")
    sys.exit(77)
objs = [o for arg in args.obj for o in arg.split(";") if o]  # CMake lists arrive joined
objs = [o for o in objs if args.only is None or args.only in os.path.basename(o)]
if not objs:
    sys.exit("sass_ffma_ratio: no object named like %r among %d" % (args.only, len(args.obj)))
out = subprocess.run([tool, "-sass", "-arch", "sm_52"] + objs, capture_output=True, text=True)
if out.returncode != 0:
    sys.exit("sass_ffma_ratio: cuobjdump failed: " + out.stderr.strip())

# Split into functions.
funcs, cur = {}, None
for line in out.stdout.splitlines():
    m = re.match(r"\s*Function : (\S+)", line)
    if m:
        cur = m.group(1)
        funcs[cur] = []
    elif cur:
        funcs[cur].append(line)
names = [n for n in funcs if re.search(args.kernel, n)]
if len(names) != 1:
    sys.exit("sass_ffma_ratio: %d functions match %r in %s (sm_52 SASS present?)"
             % (len(names), args.kernel, " ".join(objs)))
name = names[0]

# Instructions: "/*0a48*/   @!P0 FFMA R1, R2, R3, R4 ;"
ins = []
for line in funcs[name]:
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+([^;}]*)", line)
    if not m:
        continue
    addr, text = int(m.group(1), 16), m.group(2).strip()
    text = re.sub(r"^\{?\s*", "", text)
    op = re.sub(r"^@!?P\w+\s+", "", text).split()[0].split(".")[0] if text else ""
    ins.append((addr, op, text))

# Backward branches: BRA to an earlier address = a loop.
best = None
for i, (addr, op, text) in enumerate(ins):
    if op != "BRA":
        continue
    m = re.search(r"0x([0-9a-f]+)", text)
    if not m:
        continue
    tgt = int(m.group(1), 16)
    if tgt >= addr:
        continue
    # Maxwell packs 3 instructions behind a control word; a branch may
    # target the control word's address: start at the next instruction.
    start = next((j for j, (a, _, _) in enumerate(ins) if a >= tgt), None)
    if start is None:
        continue
    body = ins[start:i + 1]
    nffma = sum(1 for _, o, _ in body if o == "FFMA")
    if best is None or nffma > best[0]:
        best = (nffma, body, tgt, addr)
if best is None or best[0] == 0:
    sys.exit("sass_ffma_ratio: no loop with FFMA found in " + name)
nffma, body, tgt, end = best
counted = [o for _, o, _ in body if o != "NOP"]
ratio = nffma / len(counted)
hist = {}
for o in counted:
    hist[o] = hist.get(o, 0) + 1
print("kernel   %s" % name)
print("loop     0x%04x..0x%04x: %d instructions (%d NOPs not counted)"
      % (tgt, end, len(counted), len(body) - len(counted)))
print("mix      " + ", ".join("%s %d" % kv for kv in sorted(hist.items(), key=lambda kv: -kv[1])))
print("FFMA     %d / %d = %.1f%% (minimum %.0f%%)" % (nffma, len(counted), 100 * ratio,
                                                   100 * args.min))
sys.exit(0 if ratio >= args.min else 1)
