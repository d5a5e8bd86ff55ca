#!/usr/bin/env bash
# Tenth session, call 2 (arch 90): the attention node's RoPE + append fused
# into the decode attention kernel (kernels/attention.h's
# m40k_rope_attention) -- its tests (test_attention_gpu: the node against
# the CPU with the caches compared, fused and not, the guard), the models'
# GPU tests, then the ChatGLM2-6B decode step fused / not / fused in the
# same call (M40_BENCH_GLM_FUSE_ROPE).
#   OUT=DIR scripts/h200-session10b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session10b 560 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_glm_parallel test_transformer_ops_gpu test_fault
TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_glm_parallel --gpu" \
    "test_transformer_ops_gpu" "test_fault --gpu" | tee -a "$SUM" >/dev/null
glm() { # label fuse formats sizes
    M40_BENCH_GLM_FUSE_ROPE=$2 M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 120 "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes $4 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$? $(grep -E 'tokens/s' "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(median.*//' | tr '\n' ' ')"
}
glm fuse1 1 int4,int8,fp16 128,8192
glm fuse0 0 int4,int8,fp16 128,8192
glm fuse1b 1 int4,int8,fp16 128,8192
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
grep -E "FAIL" "$O"/test_attention_gpu.log | head -5
