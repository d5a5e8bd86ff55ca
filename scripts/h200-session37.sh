#!/usr/bin/env bash
# Session 37: the L2 hint asked by the grid's last warps (m40__l2_hint 3,
# M40_BENCH_GLM_L2HINT=3) against the first warps (1, the default) and none
# (0); main's m40-bench (.s36, PRE only) as the old; int4 and int8 decode
# at ctx 128, ROUNDS times (default 2); then the new build's
# test_qlinear_fused --gpu on arch 90, and the sm_52 build's through PTX JIT
# (it needs > 85 s there) with the time left.
# Carry [".carry/s38.tar.xz"]: .s38 (arch 90: m40-bench, test_qlinear_fused,
# test_quant_gpu, test_chatglm2), .s36/m40-bench, .jit52 (CUDA 11.8 sm_52: test_qlinear_fused).
# Knob 3 was taken out after this ran (2f16129): its rows need the build of
# bafd0fd; on a later build 3 is the same as 1.
#   OUT=DIR BUDGET=300 scripts/h200-session37.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session37 330 .s38
carry_start .carry/s38.tar.xz
ab() { glm_ab "$1" "$2" "${FORMATS:-int4,int8}" "${SIZES:-128}" 60; }
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $i = 1 ] && ab old-$i .s36
    M40_BENCH_GLM_L2HINT=1 ab first-$i .s38
    M40_BENCH_GLM_L2HINT=3 ab last-$i .s38
    [ $i = 1 ] && M40_BENCH_GLM_L2HINT=0 ab none-$i .s38
done
TEST_TIMEOUT=90 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
T=$(($(left) - 10))
[ $T -gt 60 ] && JIT_TIMEOUT=$T jit52_tests "test_qlinear_fused --gpu"
carry_end
