#!/usr/bin/env bash
# Session 41: decode v5's ways with splits of the keys as the rule for one
# sequence under key bounds 513..1024 (lib/ops/attention.c ATTN_V5_WAYS_KEYS
# 1024; session 40 measured +2.2% / +2.8% int8 / int4 at 1K on an H100 with
# the knob). In order: on an H200 the floor chain (owed since session 33);
# int4 and int8 decode, the old rule (the ways to 512: M40_BENCH_GLM_V5WAYS_KEYS
# =512) against the new at ctx 768 and 1K, alternated, twice, the new also at
# 128 and 8K; test_attention_gpu (quick 2: every form once, 40 steps) and
# test_chatglm2 --gpu at arch 90; the sm_52 build's test_attention_gpu (quick
# 2), test_chatglm2 --gpu and test_quant_gpu (quick) through PTX JIT; then
# test_attention_gpu at quick 1 (300 steps, 8K and 32K keys) with the time left.
# Carry [".carry/s41.tar.xz", ".carry/s41j.tar.xz"] (.s41: stripped arch-90
# m40-bench, test_attention_gpu, test_chatglm2, test_quant_gpu; .jit52: CUDA
# 11.8 sm_52 builds of test_attention_gpu, test_quant_gpu, test_chatglm2).
#   OUT=DIR BUDGET=560 scripts/h200-session41.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session41 560 .s41
carry_start .carry/s41.tar.xz
floor_on_h200 .s41
for i in 1 2; do
    [ $(left) -gt 300 ] || break
    M40_BENCH_GLM_V5WAYS_KEYS=512 glm_ab old-$i .s41 int4,int8 768,1024 60
    glm_ab new-$i .s41 int4,int8 128,768,1024,8192 90
done
B=.s41
M40_ATTN_QUICK=2 TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" | tee -a "$SUM"
TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" | tee -a "$SUM"
mv "$O/test_attention_gpu.log" "$O/test_attention_gpu-q2.log"
if [ $(left) -gt 100 ] && tar xJf .carry/s41j.tar.xz; then
    M40_ATTN_QUICK=2 JIT_TIMEOUT=$(( $(left) > 200 ? 150 : $(left) / 2 )) jit52_tests "test_attention_gpu"
    [ $(left) -gt 60 ] && JIT_TIMEOUT=60 jit52_tests "test_chatglm2 --gpu"
    [ $(left) -gt 60 ] && JIT_TIMEOUT=60 jit52_tests "test_quant_gpu"
fi
T=$(($(left) - 15))
[ $T -gt 60 ] && M40_ATTN_QUICK=1 TEST_TIMEOUT=$T gpu_tests "test_attention_gpu" | tee -a "$SUM"
carry_end
