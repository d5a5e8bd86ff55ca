#!/bin/sh
# Runs the host emulations of the quantized GEMV kernels, no GPU needed: each
# kernel's source as it is in the tree, extracted here, run on the host
# (bench/quant/gemv_emu.h) against a double reference.
#   v2: bench/quant/gemv_v2_emu.cpp, gemv_v2_kernel (kernels/quant_gemv_v2.cuh)
#       at batch 1 -- x staged in passes (D 2), and the chunked, staged-whole
#       and exponent-zero forms, row and f16/f32 group scales;
#   v3: bench/quant/gemv_v3_emu.cpp, gemv_kernel (kernels/quant_gemv_v3.cuh) --
#       whole-K staging with D chunks in flight and the segmented mode, row
#       scales and each kind of group scales (GROUPED 1 f32, 2 f16, 3 run time).
#   bench/quant/gemv_emu.sh v2|v3   (from the repository root; ~5 s each on 2 cores)
set -eu
case "${1:-}" in
v2) src=kernels/quant_gemv_v2.cuh
    # gemv_v2_body and gemv_v2_kernel (not the launcher)
    from='^template <int WT, int B, int R, int GROUPED, bool NORM = false, bool WHOLE = false'
    to='^template <int WT, int B, int R, bool NORM = false'
    want='gemv_v2_kernel(m40k_qlinear_args a)' ;;
v3) src=kernels/quant_gemv_v3.cuh
    # V3 .. gemv_kernel (not split_sum_kernel and the launchers)
    from='^template <int WT, int R> struct V3 {'
    to='^\/\* Sums the nsplit partials'
    want='gemv_kernel(m40k_qlinear_args a, int nch_pad, int cps, int nsplit)' ;;
*) echo "usage: bench/quant/gemv_emu.sh v2|v3" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
: > "$dir/cuda_fp16.h"
: > "$dir/cuda_runtime.h"
{
    [ "$1" = v2 ] && sed -n '/^constexpr int kV2WholeK/p' "$src"
    # v3's dynamic shared memory is the emulation's buffer
    sed -n "/$from/,/$to/p" "$src" | sed '$d' | sed 's/extern __shared__ float4 sm4\[\];/float4 *sm4 = emu_smem;/'
} > "$dir/kernel.inc"
grep -qF "$want" "$dir/kernel.inc" || { echo "gemv_emu $1: the kernel was not found in $src" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention -Ibench/quant -Ikernels -Iinclude \
    "bench/quant/gemv_$1_emu.cpp" -o "$dir/emu"
"$dir/emu"
