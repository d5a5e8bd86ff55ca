#!/usr/bin/env bash
# Second device call of 2026-12-02's sixth session (issue 17's decode step):
#   1. build (arch 90, -Werror; scripts/h200-transformer.sh STEPS=none)
#   2. GPU tests of what changed: test_attention_gpu (decode variants 0, 2-6),
#      test_transformer_ops_gpu (RMSNorm and RoPE at few rows: 1024 threads a
#      row), test_graph_ops --gpu, test_chatglm2 --gpu, test_glm_parallel --gpu
#   3. m40-bench attention with M40_ATTN_AB=1 (every decode kernel) and
#      m40-bench norm
#   4. m40-bench chatglm2, decode only, at ctx 128 and 8192, once per decode
#      attention variant in DECODE_VARIANTS (default "0 5 6")
#   OUT=DIR scripts/h200-session6b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session6b 580 "$@"
OUT=$O/t STEPS="none" EXTRA_TARGETS="test_glm_parallel ${EXTRA_TARGETS:-}" \
    timeout 300 scripts/h200-transformer.sh "$B" | grep -vE "^(name|NVIDIA)" | tail -4
gpu_tests "test_transformer_ops_gpu" "test_attention_gpu" "test_graph_ops --gpu" "test_chatglm2 --gpu" \
    "test_glm_parallel --gpu"
stamp "m40-bench attention (M40_ATTN_AB=1), decode only"
M40_BENCH_ATTN_PREFILL=0 M40_ATTN_AB=1 timeout 150 "$B/m40-bench" attention --sizes 128,1024,8192,32768 \
    --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
echo "rc=$?"; grep -E "^attention.*decode|m40_attention" "$O/m40-attention.txt" | grep -v prefill | cut -c1-150 | head -40
stamp "m40-bench norm"
timeout 90 "$B/m40-bench" norm --json="$O/m40-norm.json" > "$O/m40-norm.txt" 2>&1
echo "rc=$?"; grep -E "^(norm|rope|rmsnorm|swiglu|embedding)|copy" "$O/m40-norm.txt" | cut -c1-150 | head -30
for v in ${DECODE_VARIANTS:-0 5 6}; do
    [ "$(left)" -gt 40 ] || break
    stamp "m40-bench chatglm2 decode, attention variant $v"
    M40_ATTN_DECODE_VARIANT=$v M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_FORMATS=${FORMATS:-int4,fp16,int8} \
        timeout $(($(left) - 10)) "$B/m40-bench" chatglm2 --warmup 2 --repeats 7 --sizes 128,8192 \
        --json="$O/m40-chatglm2-v$v.json" > "$O/m40-chatglm2-v$v.txt" 2>&1
    echo "rc=$?"; grep -E "tokens/s|launches" "$O/m40-chatglm2-v$v.txt" | cut -c1-110
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
