#!/usr/bin/env bash
# Ninth session, call 3 (arch 90): int4's small GEMVs on v2 (the norm fused
# on its chunks) -- the tests of the fused linear, the quantized GEMV and
# the models, then the ChatGLM2-6B decode step with the new rule and the old
# (M40_BENCH_GLM_SMALLV2=0) in the same call.
#   OUT=DIR scripts/h200-session9c.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session9c 420 "$@"
build_arch90 m40-bench test_qlinear_fused test_quant_gpu test_chatglm2 test_glm_parallel
glm() { # label smallv2 formats
    M40_BENCH_GLM_SMALLV2=$2 M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 100 "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes 128 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$? $(grep -E 'tokens/s' "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(median.*//' | tr '\n' ' ')"
}
glm v2 1 int4,int4g128
glm v3 0 int4,int4g128
glm v2b 1 int4,int4g128
TEST_TIMEOUT=150 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_glm_parallel --gpu" | tee -a "$SUM" >/dev/null
TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_quant_gpu" | tee -a "$SUM" >/dev/null
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
