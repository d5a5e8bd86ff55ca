#!/usr/bin/env bash
# Session 32's last call, the checks of what landed and one A/B:
#  1. test_quant_gpu (every variant, the chooser under each pass knob),
#     test_qlinear_fused --gpu (the pass knob 0-3, and v3 at R 4 with row
#     scales: the new knob) and test_chatglm2 --gpu (the model under the new
#     defaults: decode v5's rows a step at a time, int4's dense_4h_to_h with
#     the exponent-zero decode in passes), arch 90;
#  2. int8,int4 decode at ctx 128: the defaults / dense_h_to_4h on v3 at R 4
#     (M40_BENCH_GLM_V3R4=1: half the row groups a warp) / the defaults / R 4.
# Carry [".carry/s32c.tar.xz"]: .s32c (arch 90: m40-bench, test_quant_gpu,
# test_qlinear_fused, test_chatglm2 of the merged tree).
#   OUT=DIR BUDGET=200 scripts/h200-session32c.sh
# (Ran once, on an H100: R 4 lost int4 5.2%, so the knob was removed after
# it, bench/NOTES.md session 32 item 6; on a later tree M40_BENCH_GLM_V3R4 is
# ignored and the two pairs of runs time the same code.)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session32c 200 .s32c
carry_start .carry/s32c.tar.xz
GLM_TIMEOUT=40
for i in 1 2; do
    glm_run base$i "" int8,int4 128
    glm_run r4-$i "M40_BENCH_GLM_V3R4=1" int8,int4 128
done
TEST_TIMEOUT=90 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
carry_end
