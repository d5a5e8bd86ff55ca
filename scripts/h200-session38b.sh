#!/usr/bin/env bash
# Session 38, second call: the ring as landed (int4 only, the default with
# row scales: m40k_quant_gemv_v2_pass_depth 0) checked and its sm_52 form
# run through PTX JIT:
#  0. on an H200 (with .carry/s34.tar.xz carried too): the floor chain first
#     (owed since session 33);
#  1. int4,int4g128,int8 decode at ctx 128: the default / depth 1 / the
#     default with v2's own decode in the passes (M40_BENCH_GLM_V2PASS=1: the
#     ring without EZ's staging), ROUNDS times (default 1);
#  2. test_qlinear_fused --gpu, test_quant_gpu (quick 1), test_chatglm2 --gpu
#     on the new build, arch 90;
#  3. the sm_52 build's test_qlinear_fused --gpu through PTX JIT with the
#     time left (it needs > 85 s: its JIT compile of the GEMV file), then
#     test_quant_gpu (quick 1) if time remains.
# Carry [".carry/s38b.tar.xz"] (.s38: arch 90 m40-bench, test_qlinear_fused,
# test_quant_gpu, test_chatglm2; .jit52b: CUDA 11.8 sm_52 test_qlinear_fused,
# test_quant_gpu), and on an H200 [".carry/s34.tar.xz"] too.
#   OUT=DIR BUDGET=480 scripts/h200-session38b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session38b 480 .s38
carry_start .carry/s38b.tar.xz
floor_first
for i in $(seq 1 ${ROUNDS:-1}); do
    glm_ab rule-$i .s38 int4,int4g128,int8 128 60
    M40_BENCH_GLM_PASSDEPTH=1 glm_ab d1-$i .s38 int4,int4g128,int8 128 60
    M40_BENCH_GLM_V2PASS=1 glm_ab pass1-$i .s38 int4,int4g128 128 60
done
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_quant_gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
rm -rf .jit52 && mv .jit52b .jit52
T=$(($(left) - 10))
[ $T -gt 60 ] && JIT_TIMEOUT=$T jit52_tests "test_qlinear_fused --gpu"
T=$(($(left) - 5))
[ $T -gt 30 ] && JIT_TIMEOUT=$T jit52_tests "test_quant_gpu"
carry_end
