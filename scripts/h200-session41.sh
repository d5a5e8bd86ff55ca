#!/usr/bin/env bash
# Session 41: (1) decode v5's ways with splits of the keys as the rule for
# one sequence under key bounds 513..1024 (lib/ops/attention.c
# ATTN_V5_WAYS_KEYS 1024; session 40 measured +2.2% / +2.8% int8 / int4 at
# 1K on an H100 with the knob); (2) quant GEMV v3's per-row lane pointers
# (kernels/quant_gemv_v3.cuh: int4's row group 818 -> 769 sm_90 SASS
# instructions, predicted 0 to +2.7% int4 on an H200, nothing on an H100).
# In order: on an H200 the floor chain (owed since session 33); int4 and
# int8 decode after the tests below, alternated (a second round with time): .s41 (main 9469824, the rule, old v3)
# against .s41v (+ v3's lane pointers) at ctx 128, and .s41v's old rule
# (M40_BENCH_GLM_V5WAYS_KEYS=512) against its new at ctx 768 and 1K;
# .s41v's test_quant_gpu (quick), test_qlinear_fused --gpu, test_chatglm2
# --gpu and test_attention_gpu (quick 2) at arch 90; the sm_52 builds
# through PTX JIT (.jit52: test_quant_gpu, test_qlinear_fused,
# test_attention_gpu quick 2, test_chatglm2); then test_attention_gpu at
# quick 1 with the time left.
# Carry [".carry/s41.tar.xz", ".carry/s41v.tar.xz", ".carry/s41j.tar.xz"]
# (stripped; .s41/m40-bench from 9469824, .s41v/ and .jit52/ from b6a953c).
#   OUT=DIR BUDGET=560 scripts/h200-session41.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session41 560 .s41v
carry_start .carry/s41v.tar.xz
tar xJf .carry/s41.tar.xz || note "no .carry/s41.tar.xz"
[ $(left) -gt 400 ] && floor_on_h200 .s41v # owed; skipped where time is short
ab_round() {
    glm_ab v3old-$1 .s41 int4,int8 128 35
    glm_ab v3new-$1 .s41v int4,int8 128 35
    M40_BENCH_GLM_V5WAYS_KEYS=512 glm_ab rule-old-$1 .s41v int4,int8 768,1024 50
    glm_ab rule-new-$1 .s41v int4,int8 768,1024 50
}
M40_QUANT_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_quant_gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
TEST_TIMEOUT=110 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
M40_ATTN_QUICK=2 TEST_TIMEOUT=120 gpu_tests "test_attention_gpu" | tee -a "$SUM"
mv "$O/test_attention_gpu.log" "$O/test_attention_gpu-q2.log"
[ $(left) -gt 100 ] && ab_round 1
[ $(left) -gt 200 ] && ab_round 2
if [ $(left) -gt 100 ] && tar xJf .carry/s41j.tar.xz; then
    JIT_TIMEOUT=60 jit52_tests "test_quant_gpu"
    [ $(left) -gt 100 ] && M40_ATTN_QUICK=2 JIT_TIMEOUT=$(( $(left) > 200 ? 150 : $(left) / 2 )) jit52_tests "test_attention_gpu"
    [ $(left) -gt 60 ] && JIT_TIMEOUT=50 jit52_tests "test_chatglm2 --gpu"
    [ $(left) -gt 150 ] && JIT_TIMEOUT=$(( $(left) - 30 )) jit52_tests "test_qlinear_fused --gpu"
fi
T=$(($(left) - 15))
[ $T -gt 60 ] && M40_ATTN_QUICK=1 TEST_TIMEOUT=$T gpu_tests "test_attention_gpu" | tee -a "$SUM"
carry_end
