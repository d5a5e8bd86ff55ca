#!/usr/bin/env bash
# Session 36, second one-call A/B: the graph executor's L2 hint (the next
# LINEAR_Q's norm weights prefetched by the node before it, as its v2 warps
# end; lib/graph/exec.c, kernels/quant_gemv_v2.cuh) against main with PRE
# only (.s36/m40-bench, main 6b8debe):
#  0. on an H200 (with .carry/s34.tar.xz carried too): the floor chain first;
#  1. int4,int8,int4g128,fp16 decode at ctx 128: old / new, ROUNDS times
#     (default 2; fp16: RMSNORM's weights, prefetched by the fp16 GEMV
#     before each of its norm nodes);
#  2. test_chatglm2 --gpu, test_graph_ops --gpu, test_quant_gpu (quick 1) on
#     the new build, arch 90; then the sm_52 build's test_chatglm2 --gpu,
#     test_qlinear_fused --gpu and test_quant_gpu (quick 1) through PTX JIT
#     with the time left (BUDGET=400 for all of them).
# Carry [".carry/s37.tar.xz"]: .s37 (arch 90: m40-bench, test_quant_gpu,
# test_chatglm2, test_graph_ops with the hint), .s36/m40-bench (main's) and
# .jit52 (CUDA 11.8 sm_52: test_chatglm2, test_qlinear_fused, test_quant_gpu
# of the branch).
# On an H200 carry [".carry/s37.tar.xz", ".carry/s34.tar.xz"] and BUDGET=260.
# Knob 2 (the attention's K rows) was taken out after this ran (645f1b6):
# its rows need the build of d70ec6c; on a later build 2 is the same as 1.
#   OUT=DIR BUDGET=200 scripts/h200-session36b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session36b 200 .s37
carry_start .carry/s37.tar.xz
# on an H200, the floor chain first (owed since session 33; carry
# .carry/s34.tar.xz too: .s33/m40-bench)
[ -f .carry/s34.tar.xz ] && tar xJf .carry/s34.tar.xz && floor_on_h200 .s33
ab() { glm_ab "$1" "$2" "${FORMATS:-int4,int8,int4g128,fp16}" "${SIZES:-128}" 60; }
# session 37: the new build's knob M40_BENCH_GLM_L2HINT=2 too (the attention's
# K rows asked of L2 by qkv's warps), and =0 (no hint: the same binary as old)
for i in $(seq 1 ${ROUNDS:-2}); do
    ab old-$i .s36
    ab new-$i .s37
    M40_BENCH_GLM_L2HINT=2 ab kv-$i .s37
    [ $i = 1 ] && M40_BENCH_GLM_L2HINT=0 ab off-$i .s37
done
TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" "test_graph_ops --gpu" | tee -a "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_quant_gpu" | tee -a "$SUM"
# the sm_52 build's tests through PTX JIT (.jit52 in the carry), with what is left
T=$(($(left) - 10))
[ $T -gt 60 ] && JIT_TIMEOUT=$((T / 3)) jit52_tests "test_chatglm2 --gpu" "test_qlinear_fused --gpu" "test_quant_gpu"
carry_end
