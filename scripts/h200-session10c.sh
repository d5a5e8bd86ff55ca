#!/usr/bin/env bash
# Tenth session, call 3 (arch 90): v2 with x staged whole (int4's small
# GEMVs by default; int8's behind a knob) -- the quantized GEMV's tests
# (every variant, the fused norm), the models' and attention's, then the
# ChatGLM2-6B decode step with each knob on and off in the same call.
#   OUT=DIR scripts/h200-session10c.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session10c 540 "$@"
build_arch90 m40-bench test_quant_gpu test_qlinear_fused test_chatglm2 test_attention_gpu
TEST_TIMEOUT=150 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_attention_gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=100 glm_run w1 M40_BENCH_GLM_V2WHOLE=1 int4,int4g128 128
GLM_TIMEOUT=100 glm_run w0 M40_BENCH_GLM_V2WHOLE=0 int4,int4g128 128
GLM_TIMEOUT=100 glm_run w1b M40_BENCH_GLM_V2WHOLE=1 int4,int4g128 128
GLM_TIMEOUT=100 glm_run q8v3 M40_BENCH_GLM_SMALLV2_Q8=0 int8 128
GLM_TIMEOUT=100 glm_run q8v2 M40_BENCH_GLM_SMALLV2_Q8=1 int8 128
GLM_TIMEOUT=100 glm_run q8v3b M40_BENCH_GLM_SMALLV2_Q8=0 int8 128
GLM_TIMEOUT=100 glm_run q8v2b M40_BENCH_GLM_SMALLV2_Q8=1 int8 128
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_quant_gpu" | tee -a "$SUM" >/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
