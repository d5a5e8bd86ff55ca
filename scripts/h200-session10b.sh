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
glm_run fuse1 M40_BENCH_GLM_FUSE_ROPE=1 int4,int8,fp16 128,8192
glm_run fuse0 M40_BENCH_GLM_FUSE_ROPE=0 int4,int8,fp16 128,8192
glm_run fuse1b M40_BENCH_GLM_FUSE_ROPE=1 int4,int8,fp16 128,8192
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
grep -E "FAIL" "$O"/test_attention_gpu.log | head -5
