#!/usr/bin/env bash
# Session 36, one call: v2's epilogue operands (row scales, bias, residual)
# asked for with the first weights (PRE, kernels/quant_gemv_v2.cuh), against
# main before it (.s33, carried in .carry/s34.tar.xz):
#  0. on an H200 only: the floor chain first (session 33's owed item), every
#     format at ctx 128;
#  1. every format's decode at ctx 128 / 1024: old / new, ROUNDS times
#     (default 2; FORMATS, default all four);
#  2. ncu over one int4 step's kernels, old and new (NCU=1, default 0);
#  3. test_qlinear_fused --gpu, test_quant_gpu (quick 1), test_chatglm2 --gpu
#     on the new build, arch 90; then the sm_52 build's test_quant_gpu
#     (quick 1) and test_chatglm2 --gpu through PTX JIT (TESTS=0: none).
# Carry [".carry/s34.tar.xz", ".carry/s36.tar.xz"]: .s33 (main 8de6c48, arch
# 90: m40-bench with the floor chain) and .s36 (arch 90: m40-bench,
# test_qlinear_fused, test_quant_gpu, test_chatglm2 with PRE; .jit52b: the
# sm_52 build's test_quant_gpu, test_chatglm2 with PRE).
#   OUT=DIR BUDGET=400 scripts/h200-session36.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session36 400 .s36
carry_start .carry/s34.tar.xz
tar xJf .carry/s36.tar.xz || { note "no .carry/s36.tar.xz"; exit 1; }
floor_on_h200 .s33
ab() { glm_ab "$1" "$2" "${FORMATS:-fp16,int8,int4,int4g128}" 128,1024 90; }
for i in $(seq 1 ${ROUNDS:-2}); do
    ab old-$i .s33
    ab new-$i .s36
done
if [ "${NCU:-0}" = 1 ]; then
    ncu_step old .s33 60
    ncu_step new .s36 60
fi
[ "${TESTS:-1}" = 1 ] || { carry_end; exit 0; }
TEST_TIMEOUT=90 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=90 gpu_tests "test_quant_gpu" | tee -a "$SUM"
TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" | tee -a "$SUM"
rm -rf .jit52 && mv .jit52b .jit52
JIT_TIMEOUT=60 jit52_tests "test_quant_gpu" "test_chatglm2 --gpu"
carry_end
