#!/bin/sh
# Runs bench/quant/gemv_v3_emu.cpp: the quantized GEMV v3 (kernels/quant_gemv_v3.cuh
# gemv_kernel) emulated on the host against a double reference -- whole-K
# staging with D chunks in flight and the segmented mode, row scales and group
# scales of each kind (GROUPED 1 f32, 2 f16, 3 the dtype at run time); no GPU
# needed.
#   bench/quant/gemv_v3_emu.sh   (from the repository root; ~10 s on 2 cores)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
: > "$dir/cuda_fp16.h"
: > "$dir/cuda_runtime.h"
v3=kernels/quant_gemv_v3.cuh
# the device code: V3 .. gemv_kernel (not split_sum_kernel and the launchers);
# the dynamic shared memory is the emulation's buffer
sed -n '/^template <int WT, int R> struct V3 {/,/^\/\* Sums the nsplit partials/p' "$v3" | sed '$d' |
    sed 's/extern __shared__ float4 sm4\[\];/float4 *sm4 = emu_smem;/' > "$dir/v3kernel.inc"
grep -q 'gemv_kernel(m40k_qlinear_args a, int nch_pad, int cps, int nsplit)' "$dir/v3kernel.inc" &&
    grep -q 'float4 \*sm4 = emu_smem;' "$dir/v3kernel.inc" ||
    { echo "gemv_v3_emu: the kernel was not found in $v3" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention -Ikernels -Iinclude \
    bench/quant/gemv_v3_emu.cpp -o "$dir/emu"
"$dir/emu"
