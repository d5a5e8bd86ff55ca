#!/usr/bin/env bash
# Session 29, first call: decode v5's ways (m40k_attn_shape::v5_ways: W
# warps a row over shares of all the keys, folded in the block, so no
# partials and no attn_combine launch at short contexts), and session 28's
# owed GPU run of test_glm_parallel's bound_ladder.
#  1. test_glm_parallel --gpu, test_chatglm2 --gpu;
#  2. m40-bench chatglm2 decode int4,int8 at 128, 256, 512 (v5 under the
#     key bound): the rule, M40_BENCH_GLM_V5WAYS=1..6, the rule;
#  3. test_attention_gpu (quick; its new ways section), then, with the time
#     left, the sm_52 build's (CUDA 11.8) through PTX JIT.
# Carry [".carry/s29.tar.xz", ".carry/jit52.tar.xz"]: .s29 (arch 90:
# m40-bench, test_attention_gpu, test_chatglm2, test_glm_parallel), .jit52
# (test_attention_gpu).
#   OUT=DIR BUDGET=420 scripts/h200-session29.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session29 420 .s29
carry_start .carry/s29.tar.xz
TEST_TIMEOUT=120 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
S=128,256,512
glm_run rule1 "" int4,int8 $S
for w in 1 2 3 4 5 6; do glm_run ways$w "M40_BENCH_GLM_V5WAYS=$w" int4,int8 $S; done
glm_run rule2 "" int4,int8 $S
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" | tee -a "$SUM"
[ "$(left)" -gt 60 ] && M40_ATTN_QUICK=2 JIT_TIMEOUT=$(( $(left) - 10 )) jit52_tests "test_attention_gpu"
carry_end
