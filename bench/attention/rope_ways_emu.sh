#!/bin/sh
# Runs bench/attention/rope_ways_emu.cpp: decode v5's ways (kernels/attention.cu
# attn_decode_v5, W > 1) with the fused RoPE + append and splits of the keys,
# emulated on the host, the new cache row poisoned (NaN) before each block, so
# a block that reads it without having written it fails; against a double
# reference; no GPU needed.
#   bench/attention/rope_ways_emu.sh   (from the repository root; ~4 min on 2 cores)
set -eu
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
grep -q attn_decode_v5 "$dir/kernel.inc" || { echo "rope_ways_emu: the kernel was not found in $cu" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention bench/attention/rope_ways_emu.cpp -o "$dir/emu"
"$dir/emu"
