#!/bin/sh
# Runs bench/attention/decode_v4_emu.cpp: decode v3/v4 (kernels/attention.cu
# attn_decode_kernel, decode variants 2, 3, 8, 9), v5 (attn_decode_v5, 10) and
# v6 (attn_decode_v6, 11 and 12) emulated on the host against a double
# reference; no GPU needed.
#   bench/attention/decode_v4_emu.sh   (from the repository root; ~3.5 min on 2 cores)
# With an argument, bench/attention/NAME.cpp on the same extracted source
# instead (rope_ways_emu.sh: rope_ways_emu).
set -eu
prog=${1:-decode_v4_emu}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cu=kernels/attention.cu
sed -n '/^struct Params {/,/^};/p' "$cu" > "$dir/params.inc"
{
    sed -n '/^__device__ __forceinline__ void half8_to_float/,/^}/p' "$cu"
    sed -n '/^__device__ __forceinline__ int64_t split_share/,/^}/p' "$cu"
    sed -n '/^__device__ __forceinline__ int decode_kend/,/^}/p' "$cu"
    sed -n '/^constexpr int DR = 16;/,/^\/\* y\[row, :\]/p' "$cu" | sed '$d'
} > "$dir/kernel.inc"
grep -q attn_decode_kernel "$dir/kernel.inc" || { echo "decode_v4_emu: the kernel was not found in $cu" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention "bench/attention/$prog.cpp" -o "$dir/emu"
"$dir/emu"
