#!/usr/bin/env bash
# Session 39, third call: on an H200, the floor chain first (owed since
# session 33; this m40-bench has it); then the rule as landed (x double-buffered in passes for
# int4's ring and int8; m40k_quant_gemv_v2_pass_db 0) against never (1),
# int4 and int8 at ctx 128, ROUNDS times (2); then test_qlinear_fused --gpu
# (arch 90), whose main passes loop now runs int8 double-buffered.
# Carry [".carry/s39c.tar.xz"] (.s39: arch-90 m40-bench, test_qlinear_fused).
#   OUT=DIR BUDGET=330 scripts/h200-session39c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session39c 330 .s39
carry_start .carry/s39c.tar.xz
floor_on_h200 .s39
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $(left) -gt 180 ] || break
    M40_BENCH_GLM_PASSDB=0 glm_ab rule-$i .s39 int4,int8 128 50
    M40_BENCH_GLM_PASSDB=1 glm_ab never-$i .s39 int4,int8 128 50
done
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
carry_end
