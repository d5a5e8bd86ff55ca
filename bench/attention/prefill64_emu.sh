#!/bin/sh
# Runs bench/attention/prefill64_emu.cpp: the BM-64 prefill kernel
# (kernels/attention_prefill64.cuh) emulated on the host against a double
# reference; no GPU needed.
#   bench/attention/prefill64_emu.sh   (from the repository root; ~20 s on 2 cores)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cu=kernels/attention.cu
sed -n '/^struct Params {/,/^};/p' "$cu" > "$dir/params.inc"
{   # the helpers it calls from kernels/attention.cu, then the kernel
    sed -n '/^__device__ __forceinline__ void half8_to_float/,/^}/p' "$cu"
    sed -n '/^template <int DP, int BM, bool RAW = false>/,/^}/p' "$cu"
    sed -n '/^__device__ __forceinline__ int64_t split_share/,/^}/p' "$cu"
    sed -n '/^template <int BN>$/,/^}/p' "$cu"
    sed -n '/^template <int BM> __device__ __forceinline__ void tile_store_ml/,/^}/p' "$cu"
    cat kernels/attention_prefill64.cuh
} > "$dir/kernel.inc"
[ -s "$dir/params.inc" ] && [ -s "$dir/kernel.inc" ] || { echo "prefill64_emu: struct Params not found in $cu" >&2; exit 1; }
c++ -std=c++17 -O1 -fno-strict-aliasing -pthread -w -I"$dir" -Ibench/attention bench/attention/prefill64_emu.cpp -o "$dir/emu"
"$dir/emu"
