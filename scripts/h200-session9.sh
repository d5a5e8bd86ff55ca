#!/usr/bin/env bash
# Ninth session, call 1 (arch 90): decode attention with the first K tile
# fetched before Q (variant 7) and RoPE over several blocks a row at few
# rows: the GPU tests of both, the decode attention A/B, the norm bench,
# and the ChatGLM2-6B decode step with variant 7 against the default.
#   OUT=DIR scripts/h200-session9.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session9 560 "$@"
build_arch90 m40-bench test_attention_gpu test_transformer_ops_gpu
TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_transformer_ops_gpu" | tee -a "$SUM"
M40_BENCH_ATTN_PREFILL=0 M40_ATTN_AB=1 timeout 120 "$B/m40-bench" attention --sizes 128,1024,8192,32768 \
    --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
note "attention rc=$?"
grep -E "^attn|decode" "$O/m40-attention.txt" | grep -E "median" | sed -E 's/ +/ /g; s/\(min.*\)//' | cut -c1-120 | tee -a "$SUM"
timeout 60 "$B/m40-bench" norm --json="$O/m40-norm.json" > "$O/m40-norm.txt" 2>&1
note "norm rc=$?"
grep -E "rope|copy" "$O/m40-norm.txt" | grep median | sed -E 's/ +/ /g; s/\(min.*\)//' | cut -c1-110 | tee -a "$SUM"
glm() { # label decode-variant formats
    M40_ATTN_DECODE_VARIANT=$2 M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 100 "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes 128,8192 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$?"
    grep -E "tokens/s" "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(min.*//' |
        sed "s/^/$1: /" | cut -c1-110 | tee -a "$SUM"
}
[ "$(left)" -gt 130 ] && glm v0 0 fp16,int4
[ "$(left)" -gt 110 ] && glm v7 7 fp16,int4
[ "$(left)" -gt 90 ] && glm v0b 0 int4
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
