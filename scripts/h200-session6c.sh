#!/usr/bin/env bash
# Third device call of 2026-12-02's sixth session: the new defaults (decode
# attention's tile chosen by the wave rule, RMSNorm/RoPE at few rows, the
# short prefill graphs) verified and measured together:
#   1. build; GPU tests (attention every decode kernel, transformer ops,
#      graph ops, ChatGLM2, batched conversations with the ladder)
#   2. m40-bench attention, decode only, A/B of every decode kernel
#   3. m40-bench chatglm2: every format, decode at ctx 128 and 8192, prefill
#   4. ncu over one int4 decode step (every kernel's own time)
#   5. the server's load test at 1/4/8/16 clients (scripts/h200-server.sh)
#   OUT=DIR scripts/h200-session6c.sh [BUILD_DIR]      (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session6c 560 "$@"
OUT=$O/t STEPS="none" EXTRA_TARGETS="m40-server test_glm_parallel ${EXTRA_TARGETS:-}" \
    timeout 300 scripts/h200-transformer.sh "$B" | grep -vE "^(name|NVIDIA)" | tail -3
gpu_tests "test_transformer_ops_gpu" "test_attention_gpu" "test_graph_ops --gpu" "test_chatglm2 --gpu" \
    "test_glm_parallel --gpu"
stamp "m40-bench attention (M40_ATTN_AB=1), decode only"
M40_BENCH_ATTN_PREFILL=0 M40_ATTN_AB=1 timeout 100 "$B/m40-bench" attention --sizes 128,1024,8192,32768 \
    --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
echo "rc=$?"; grep -E "m40_attention" "$O/m40-attention.txt" | sed -E 's/ +/ /g' | cut -c1-110
stamp "m40-bench chatglm2 (every format, repeats 5)"
timeout 200 "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128,8192 \
    --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
echo "rc=$?"; grep -E "^chatglm2.*(decode|prefill)|tokens/s" "$O/m40-chatglm2.txt" | sed -E 's/ +/ /g' | cut -c1-120
if command -v ncu >/dev/null && [ "$(left)" -gt 200 ]; then
    stamp "ncu: one int4 decode step (ctx 128)"
    M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        timeout 60 ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 2 --repeats 3 \
        --sizes 128 > "$O/ncu-decode.csv" 2> "$O/ncu-decode.err"
    echo "rc=$?"; python3 scripts/ncu_step_table.py "$O/ncu-decode.csv" > "$O/ncu-decode.txt"; head -14 "$O/ncu-decode.txt"
fi
if [ -x "$B/m40-server" ] && [ "$(left)" -gt 100 ]; then
    BUDGET=$(($(left) - 5)) OUT=$O/server CLIENTS=${CLIENTS:-1,4,8,16} SOAK=${SOAK:-30} \
        NO_BUILD=1 SKIP_CHAT=1 scripts/h200-server.sh "$B" 2>&1 | grep -E '^\{"clients|^\{"cache|load rc|====' | cut -c1-330
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
