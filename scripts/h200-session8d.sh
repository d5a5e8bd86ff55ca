#!/usr/bin/env bash
# Eighth session, last call (arch 90): fault injection on a GPU over the
# fused ChatGLM2 graphs (test_fault --gpu), the graph and op tests, then
# prefill 512 fused and unfused and the decode step against its read chain.
#   OUT=DIR scripts/h200-session8d.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session8d 450 "$@"
build_arch90 m40-bench test_fault test_graph_ops test_transformer_ops_gpu
TEST_TIMEOUT=150 gpu_tests "test_graph_ops --gpu" "test_transformer_ops_gpu" | tee -a "$SUM"
TEST_TIMEOUT=$(($(left) - 200)) gpu_tests "test_fault --gpu" | tee -a "$SUM"
glm() { # label fuse-mask prefill formats chain
    M40_BENCH_GLM_FUSE=$2 M40_BENCH_GLM_FORMATS=$4 M40_BENCH_GLM_PREFILL=$3 M40_BENCH_GLM_NO_CHAIN=$5 \
        timeout 80 "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$?"
    grep -E "tokens/s|read chain ctx" "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(min.*//' |
        sed "s/^/$1: /" | cut -c1-110 | tee -a "$SUM"
}
[ "$(left)" -gt 150 ] && glm fused 3 512 fp16,int8,int4 0
[ "$(left)" -gt 90 ] && glm unfused 0 512 fp16,int8,int4 1
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
