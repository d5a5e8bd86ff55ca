#!/usr/bin/env bash
# Eighth session's verification call (one device call, arch 90): build; the
# GPU tests of what changed (RoPE fused into the attention node's append,
# RMSNorm and the residual add fused into LINEAR_Q); then the ChatGLM2-6B
# decode step fused (the default) and unfused (M40_BENCH_GLM_FUSE=0) in the
# same run, every format, contexts 128 / 1024 / 8192, and the prefill of
# 512 tokens both ways. The summary comes last (the device tool returns the
# tail).
#   OUT=DIR scripts/h200-session8.sh [BUILD_DIR]      (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session8 585 "$@"
build_arch90 m40-bench test_attention_gpu test_qlinear_fused test_chatglm2 test_glm_parallel \
    test_graph_ops test_quant_gpu test_transformer_ops_gpu
TEST_TIMEOUT=120 M40_ATTN_QUICK=1 M40_QUANT_QUICK=1 gpu_tests "test_qlinear_fused --gpu" \
    "test_chatglm2 --gpu" "test_attention_gpu" "test_glm_parallel --gpu" "test_graph_ops --gpu" \
    "test_transformer_ops_gpu" | tee -a "$SUM"
if [ "${S8_QUANT:-1}" = 1 ] && [ "$(left)" -gt 420 ]; then
    TEST_TIMEOUT=90 M40_QUANT_QUICK=1 gpu_tests "test_quant_gpu" | tee -a "$SUM"
fi
glm() { # label fuse-mask prefill-list sizes
    local label=$1
    M40_BENCH_GLM_FUSE=$2 M40_BENCH_GLM_PREFILL=$3 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout $(($(left) - 30)) "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes "$4" \
        --json="$O/m40-chatglm2-$label.json" > "$O/m40-chatglm2-$label.txt" 2>&1
    note "chatglm2 $label rc=$?"
    grep -E "tokens/s|launches per" "$O/m40-chatglm2-$label.txt" | sed -E 's/ +/ /g' |
        sed -E 's/M40 projection.*//' | sed "s/^/$label: /" | cut -c1-120 | tee -a "$SUM"
}
[ "$(left)" -gt 200 ] && glm fused 3 512 128,1024,8192
[ "$(left)" -gt 150 ] && glm unfused 0 512 128,1024,8192
[ "$(left)" -gt 90 ] && glm rope-only 1 0 128
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
