#!/usr/bin/env bash
# Session 26, sixth call: the exponent-zero staging of x a lane vector's
# share a thread (kernels/quant_gemv_v2.cuh, VT), tested and timed against
# the tree before it. Carry [".carry/s26e.tar.xz"]: .s26e/new (this tree:
# m40-bench, test_quant_gpu, test_qlinear_fused, test_chatglm2,
# m40-gemv-pattern; arch 90, CUDA 13, -DM40_CUBLAS=OFF -DM40_CUDNN=OFF) and
# .s26e/old/m40-bench (the tree before VT). In order of need:
#  1. test_quant_gpu (quick); 2. int4,int8 decode ctx 128 new / old;
#  3. test_qlinear_fused --gpu (the fused norm rides on the staging),
#     test_chatglm2 --gpu; 4. old / new again; 5. the pattern (chosen).
#   OUT=DIR BUDGET=200 scripts/h200-session26e.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26e 200 .s26e/new
carry_start .carry/s26e.tar.xz
M40_QUANT_QUICK=1 TEST_TIMEOUT=70 gpu_tests "test_quant_gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
glm_run new1 "" int4,int8 128
B=.s26e/old glm_run old1 "" int4,int8 128
[ "$(left)" -gt 70 ] && TEST_TIMEOUT=70 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
if [ "$(left)" -gt 35 ]; then
    B=.s26e/old glm_run old2 "" int4,int8 128
    glm_run new2 "" int4,int8 128
fi
if [ "$(left)" -gt 8 ]; then
    timeout 20 "$B/m40-gemv-pattern" > "$O/pattern.txt" 2>&1
    note "pattern rc=$?"
    grep -E "rows|chosen|ez\+red|xs\+red|^ok|FAIL" "$O/pattern.txt" >> "$SUM"
fi
carry_end
