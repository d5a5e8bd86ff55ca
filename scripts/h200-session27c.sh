#!/usr/bin/env bash
# Session 27, third call: v2's exponent-zero staging on shared helpers
# (kernels/quant_gemv_common.cuh ez_vec_*: ez_item and its VT form, and the
# pattern bench's "+ez+red", now write the S / scale / factor arithmetic
# once; sm_52 SASS: 64 of 323 GEMV kernels reordered in the factors'
# epilogue, the same instruction counts), tested and timed against the tree
# before it; and test_attention_gpu of this tree (arch 90).
# Carry [".carry/s27c.tar.xz", ".carry/jit52.tar.xz"]: .s27c/new (arch 90:
# m40-bench, test_quant_gpu, test_qlinear_fused, test_attention_gpu),
# .s27c/old/m40-bench (the tree before the helpers), .jit52/ (sm_52 build of
# this tree: test_quant_gpu, test_qlinear_fused).
#  1. test_quant_gpu (quick), test_qlinear_fused --gpu; 2. int4,int8 decode
#  ctx 128 new / old / old / new; 3. test_attention_gpu (quick); 4. the sm_52
#  JIT test_quant_gpu.
#   OUT=DIR BUDGET=420 scripts/h200-session27c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session27c 420 .s27c/new
carry_start .carry/s27c.tar.xz
M40_QUANT_QUICK=1 TEST_TIMEOUT=100 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
glm_run new1 "" int4,int8 128
B=.s27c/old glm_run old1 "" int4,int8 128
B=.s27c/old glm_run old2 "" int4,int8 128
glm_run new2 "" int4,int8 128
[ "$(left)" -gt 110 ] && M40_ATTN_QUICK=1 TEST_TIMEOUT=100 gpu_tests "test_attention_gpu" | tee -a "$SUM"
[ "$(left)" -gt 90 ] && JIT_TIMEOUT=90 jit52_tests "test_quant_gpu"
carry_end
