#!/bin/sh
# Runs bench/quant/gemv_v2_emu.cpp: the batch-1 GEMV v2 (kernels/quant_gemv_v2.cuh
# gemv_v2_kernel) emulated on the host against a double reference -- x staged in
# passes (D 2), and the chunked, staged-whole and exponent-zero forms as the
# emulation's own check; no GPU needed.
#   bench/quant/gemv_v2_emu.sh   (from the repository root; ~20 s on 2 cores)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
: > "$dir/cuda_fp16.h"
: > "$dir/cuda_runtime.h"
v2=kernels/quant_gemv_v2.cuh
{
    sed -n '/^constexpr int kV2WholeK/p' "$v2"
    sed -n '/^template <int WT, int B, int R, int GROUPED, bool NORM = false, bool WHOLE = false/,/^template <int WT, int B, int R, bool NORM = false/p' "$v2" | sed '$d'
} > "$dir/v2kernel.inc"
grep -q 'gemv_v2_kernel(m40k_qlinear_args a)' "$dir/v2kernel.inc" || { echo "gemv_v2_emu: the kernel was not found in $v2" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention -Ikernels -Iinclude \
    bench/quant/gemv_v2_emu.cpp -o "$dir/emu"
"$dir/emu"
