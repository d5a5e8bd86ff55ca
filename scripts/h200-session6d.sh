#!/usr/bin/env bash
# Last device call of 2026-12-02's sixth session: the quant linear's 8-row
# GEMV slices (9..64 rows), K and V appended in one launch, RoPE's 1024-thread
# rows up to 127, verified and measured: build; GPU tests; the server's load
# test at 1/4/8/16 clients; ChatGLM2 decode; m40-bench norm. The summary is
# printed last (the device tool returns the output's tail).
#   OUT=DIR scripts/h200-session6d.sh [BUILD_DIR]      (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session6d 380 "$@"
SUM=$O/summary.txt
note() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$SUM"; }
OUT=$O/t STEPS="none" EXTRA_TARGETS="m40-server test_glm_parallel test_quant_gpu test_fault" \
    timeout 240 scripts/h200-transformer.sh "$B" > "$O/build.txt" 2>&1
note "built: $(grep -c 'BUILD FAILED' "$O/build.txt") failures"
for t in "test_quant_gpu" "test_glm_parallel --gpu" "test_chatglm2 --gpu" "test_graph_ops --gpu" \
         "test_transformer_ops_gpu" "test_attention_gpu" "test_fault --gpu"; do
    set -- $t
    M40_QUANT_QUICK=1 M40_ATTN_QUICK=1 timeout 90 "$B/$1" "${@:2}" > "$O/$1.log" 2>&1; rc=$?
    note "$t rc=$rc $(grep -E 'checks' "$O/$1.log" | tail -1)"
    [ $rc = 0 ] || grep -E "FAIL|CHECK failed" "$O/$1.log" | head -5 | tee -a "$SUM"
done
if [ "$(left)" -gt 110 ]; then
    BUDGET=$(($(left) - 60)) OUT=$O/server CLIENTS=1,4,8,16 SOAK=20 NO_BUILD=1 SKIP_CHAT=1 \
        scripts/h200-server.sh "$B" > "$O/server.txt" 2>&1
    grep -E '^\{"clients|^\{"cache' "$O/server.txt" | cut -c1-200 | tee -a "$SUM"
fi
if [ "$(left)" -gt 45 ]; then
    M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_FORMATS=int4,int8,fp16 timeout $(($(left) - 15)) \
        "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128 --json="$O/m40-chatglm2.json" \
        > "$O/m40-chatglm2.txt" 2>&1
    note "chatglm2 rc=$?"; grep -E "tokens/s|launches" "$O/m40-chatglm2.txt" | cut -c1-100 | tee -a "$SUM"
fi
if [ "$(left)" -gt 12 ]; then
    timeout $(($(left) - 3)) "$B/m40-bench" norm > "$O/m40-norm.txt" 2>&1
    grep -E "rope|rmsnorm" "$O/m40-norm.txt" | grep -v "device copy" | sed -E 's/ +/ /g' | cut -c1-100 | tee -a "$SUM"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
