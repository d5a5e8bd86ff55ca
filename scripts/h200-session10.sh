#!/usr/bin/env bash
# Tenth session, call 1 (arch 90): decode attention's empty splits skipped
# (kernels/attention.h's m40k_attn_skip_empty) -- the tests session 9 left
# unrun on a GPU plus test_attention_gpu's skip-off pass, the ChatGLM2-6B
# decode step with the skip on / off / on in the same call, then ncu over
# one int4 decode step at ctx 128 (every kernel's own duration).
#   OUT=DIR scripts/h200-session10.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session10 560 "$@"
build_arch90 m40-bench test_attention_gpu test_transformer_ops_gpu test_qlinear_fused test_quant_gpu test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" "test_transformer_ops_gpu" "test_qlinear_fused --gpu" \
    "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
glm_run skip1 M40_BENCH_GLM_SKIP=1 int4,int8,fp16 128,8192
glm_run skip0 M40_BENCH_GLM_SKIP=0 int4,int8,fp16 128,8192
glm_run skip1b M40_BENCH_GLM_SKIP=1 int4,int8 128
if command -v ncu >/dev/null && [ "$(left)" -gt 150 ]; then
    M40_BENCH_GLM_FORMATS=int4,int8 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout $(($(left) - 100)) ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 1 --repeats 3 \
        --sizes 128 > "$O/ncu-decode.csv" 2> "$O/ncu-decode.err"
    note "ncu rc=$?"
    python3 scripts/ncu_step_table.py "$O/ncu-decode.csv" > "$O/ncu-decode.txt" 2>&1
    gzip -f "$O/ncu-decode.csv"
fi
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_quant_gpu" | tee -a "$SUM" >/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"; head -40 "$O/ncu-decode.txt" 2>/dev/null
