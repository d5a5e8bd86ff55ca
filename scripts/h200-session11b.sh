#!/usr/bin/env bash
# Eleventh session, call 2 (arch 90): batch-1 v2-whole GEMVs with a row's K
# over 2 or 4 warps of the block (KS) -- the fused-norm GEMV tests, the
# ChatGLM2-6B decode step at KS 1 / 2 / 4 in the same call, ncu's warp
# states over the first int4 v2 GEMVs of one step, then every variant.
#   OUT=DIR scripts/h200-session11b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session11b 500 "$@"
build_arch90 m40-bench test_quant_gpu test_qlinear_fused
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=110 glm_run ks1 M40_BENCH_GLM_V2KS=1 int4,int8 128
GLM_TIMEOUT=110 glm_run ks2 M40_BENCH_GLM_V2KS=2 int4,int8 128
GLM_TIMEOUT=110 glm_run ks4 M40_BENCH_GLM_V2KS=4 int4,int8 128
GLM_TIMEOUT=110 glm_run ks1b M40_BENCH_GLM_V2KS=1 int4,int8 128
GLM_TIMEOUT=110 glm_run ks2b M40_BENCH_GLM_V2KS=2 int4,int8 128
GLM_TIMEOUT=110 glm_run ks4b M40_BENCH_GLM_V2KS=4 int4,int8 128
if command -v ncu >/dev/null && [ "$(left)" -gt 150 ]; then
    for ks in 1 4; do
        M40_BENCH_GLM_V2KS=$ks M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
            M40_BENCH_GLM_NO_CHAIN=1 timeout 60 ncu --profile-from-start off --clock-control none \
            --cache-control none --kernel-name regex:gemv_v2 --launch-count 3 --section SpeedOfLight \
            --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
            "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-v2-ks$ks.txt" 2> "$O/ncu-v2-ks$ks.err"
        note "ncu ks$ks rc=$?"
    done
fi
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_quant_gpu" | tee -a "$SUM" >/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
