#!/bin/sh
# Runs bench/attention/rope_ways_emu.cpp: decode v5's ways (kernels/attention.cu
# attn_decode_v5, W > 1) with the fused RoPE + append and splits of the keys,
# emulated on the host, the new cache row poisoned (NaN) before each block, so
# a block that reads it without having written it fails; against a double
# reference; no GPU needed. The kernel's source extracted as decode_v4_emu.sh does.
#   bench/attention/rope_ways_emu.sh   (from the repository root; ~3 min on 2 cores)
exec sh bench/attention/decode_v4_emu.sh rope_ways_emu
