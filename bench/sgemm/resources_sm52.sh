#!/usr/bin/env bash
# Regenerates bench/sgemm/resources_sm52.txt: registers / spills / shared
# memory per SGEMM kernel from CUDA 11.8's ptxas for sm_52 (the truth for an
# M40), plus the FFMA share of the main kernel's inner loop.
#   bench/sgemm/resources_sm52.sh [build-dir-with-sm52-libm40.a]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/bin:$PATH
NVCC=${NVCC:-/usr/bin/nvcc}
BUILD=${1:-build-sgemm52}
tmp=$(mktemp -d)
inc=()
[ -d "$BUILD/cuda-include-overlay" ] && inc=(-I"$BUILD/cuda-include-overlay")
"$NVCC" -arch=sm_52 -std=c++17 -O3 "${inc[@]}" -Iinclude -Xptxas -v -c kernels/sgemm.cu \
    -o "$tmp/sgemm.o" 2> "$tmp/ptxas.txt"
{
  echo "# $("$NVCC" --version | grep release), ptxas -v, sm_52; regenerate: $0"
  python3 - "$tmp/ptxas.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
lay = {"1": "x·Wᵀ", "0": "A·B"}
cur, spill = None, None
for ln in lines:
    m = re.search(r"Compiling entry function '(\S+)' for 'sm_52'", ln)
    if m:
        cur = m.group(1)
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", ln)
    if m and cur:
        spill = m.groups()
        continue
    m = re.search(r"Used (\d+) registers(?:, (\d+) bytes smem)?", ln)
    if not (m and cur and spill):
        continue
    regs, smem = m.group(1), m.group(2) or "0"
    t = re.search(r"sgemm_tile_kernelILi(\d+)ELi(\d+)ELb(\d)ELb(\d)ELb(\d)E", cur)
    k = re.search(r"sgemm_skinny_kernelILi(\d+)ELb(\d)ELb(\d)E", cur)
    if t:
        label = "tile%sx%s %s B=%s%s" % (t.group(1), t.group(2), lay[t.group(3)],
                                         "f16" if t.group(4) == "1" else "f32",
                                         "" if t.group(5) == "1" else " scalar-ld")
    elif k:
        label = "skinny MR=%s x·Wᵀ B=%s%s" % (k.group(1), "f16" if k.group(2) == "1" else "f32",
                                              "" if k.group(3) == "1" else " scalar-ld")
    elif "splitk_reduce" in cur:
        label = "split-K reduce"
    else:
        label = cur
    print("%-32s %3s regs, %s B stack, %s/%s B spill st/ld, %5s B smem"
          % (label, regs, spill[0], spill[1], spill[2], smem))
    cur, spill = None, None
PY
  /usr/bin/cuobjdump -sass -arch sm_52 "$tmp/sgemm.o" > "$tmp/sass.txt" || true
  python3 scripts/sass_ffma_ratio.py "$tmp/sgemm.o" | sed -n 's/^FFMA */inner loop FFMA share (tile128 x·Wᵀ f32): /p'
} > bench/sgemm/resources_sm52.txt
rm -rf "$tmp"
cat bench/sgemm/resources_sm52.txt
