#!/usr/bin/env bash
# Session 27, second call: decode v5 with a 16-key chunk's K and V asked for
# at once (kernels/attention.cu attn_decode_v5<.., PRE>, knob
# m40k_attn_v5_pre / M40_BENCH_GLM_V5PRE), tested and timed; and the sm_52
# PTX-JIT runs owed since session 26 (VT staging) plus this change's.
# Carry [".carry/s27b.tar.xz", ".carry/jit52.tar.xz"]: .s27/ (arch 90, CUDA 13:
# m40-bench, test_attention_gpu) and .jit52/ (CUDA 11.8 sm_52: test_quant_gpu,
# test_qlinear_fused, test_attention_gpu).
#  1. A/B int4,int8 decode ctx 128 and 512: V5PRE 0 / 1 / 1 / 0;
#  2. test_attention_gpu (arch 90, quick);  3. the sm_52 JIT tests;
#  4. the A/B again at ctx 128.
# The PRE form and its knob were reverted after this call (no change in the
# step: bench/NOTES.md, "Session 27"); the script stays as the trail.
#   OUT=DIR BUDGET=420 scripts/h200-session27b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session27b 420 .s27
carry_start .carry/s27b.tar.xz
GLM_TIMEOUT=60
glm_run pre0a "M40_BENCH_GLM_V5PRE=0" int4,int8 128,512
glm_run pre1a "M40_BENCH_GLM_V5PRE=1" int4,int8 128,512
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" | tee -a "$SUM"
[ "$(left)" -gt 200 ] && jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu"
[ "$(left)" -gt 150 ] && M40_ATTN_QUICK=2 jit52_tests "test_attention_gpu"
if [ "$(left)" -gt 60 ]; then
    glm_run pre1b "M40_BENCH_GLM_V5PRE=1" int4,int8 128
    glm_run pre0b "M40_BENCH_GLM_V5PRE=0" int4,int8 128
fi
carry_end
