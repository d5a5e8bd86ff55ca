#!/usr/bin/env bash
# Eleventh session, call 1 (arch 90): batch-1 v2 GEMVs with a ring of four
# chunks of weights in flight (kernels/quant_gemv_v2.cuh, P = 4) -- the
# fused-norm GEMV tests with the other depth, then the ChatGLM2-6B decode
# step with the ring on and off in the same call, then every GEMV variant.
#   OUT=DIR scripts/h200-session11.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session11 560 "$@"
build_arch90 m40-bench test_quant_gpu test_qlinear_fused
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=110 glm_run d1 M40_BENCH_GLM_V2DEEP=1 int4,int8 128
GLM_TIMEOUT=110 glm_run d0 M40_BENCH_GLM_V2DEEP=0 int4,int8 128
GLM_TIMEOUT=110 glm_run d1b M40_BENCH_GLM_V2DEEP=1 int4,int8 128
GLM_TIMEOUT=110 glm_run d0b M40_BENCH_GLM_V2DEEP=0 int4,int8 128
GLM_TIMEOUT=110 glm_run h1 M40_BENCH_GLM_V2DEEP=1 fp16,int4g128 128
GLM_TIMEOUT=110 glm_run h0 M40_BENCH_GLM_V2DEEP=0 fp16,int4g128 128
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_quant_gpu" | tee -a "$SUM" >/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
