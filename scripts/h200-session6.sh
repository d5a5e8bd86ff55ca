#!/usr/bin/env bash
# One device call (2026-12-02, sixth session): the short prefill graphs on
# the GPU and what they do to m40-server (issue 19), then where a ChatGLM2-6B
# decode step's time goes (issue 17):
#   1. build (arch 90, -Werror) m40-server, m40-bench, m40-chat and the model
#      tests (scripts/h200-transformer.sh, STEPS=none); test_glm_parallel
#      --gpu (the ladder against full chunks) and test_chatglm2 --gpu
#   2. the server's load test at 1/4/8/16 clients, --turns 3, a short soak
#      (scripts/h200-server.sh)
#   3. ncu (clock control off, caches not flushed) over ONE replay of the
#      captured decode step at context 128 for int4, int8 and fp16
#      (M40_BENCH_GLM_PROFILE=1): every kernel's own duration; the sum next
#      to the event-timed step gives the launch gaps
#   4. m40-bench chatglm2 (all formats, ctx 128 and 8192, prefill 128/512/2048)
#   OUT=DIR scripts/h200-session6.sh [BUILD_DIR]     (run with carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session6 580 "$@"
OUT=$O/t STEPS="none" EXTRA_TARGETS="m40-server test_glm_parallel ${EXTRA_TARGETS:-}" \
    timeout 300 scripts/h200-transformer.sh "$B" | grep -vE "^(name|NVIDIA)" | tail -4
for t in "test_glm_parallel --gpu" "test_chatglm2 --gpu"; do
    set -- $t
    s=$SECONDS
    timeout 120 "$B/$1" "${@:2}" > "$O/$1.log" 2>&1; rc=$?
    echo "$t rc=$rc ($((SECONDS - s)) s): $(grep -E "ladder|checks" "$O/$1.log" | tail -3 | tr '\n' ' ')"
done
if [ -n "${SERVER:-1}" ] && [ -x "$B/m40-server" ]; then
    BUDGET=$(($(left) - ${AFTER_S:-200})) OUT=$O/server CLIENTS=${CLIENTS:-1,4,8,16} SOAK=${SOAK:-60} \
        NO_BUILD=1 SKIP_CHAT=1 scripts/h200-server.sh "$B"
fi
if command -v ncu >/dev/null && [ -x "$B/m40-bench" ] && [ "$(left)" -gt 120 ]; then
    stamp "ncu: one decode step (ctx 128) of int4, int8, fp16, every kernel"
    M40_BENCH_GLM_FORMATS=${PROFILE_FORMATS:-int4,int8,fp16} M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        timeout $(($(left) - 90)) ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 2 --repeats 5 \
        --sizes 128 > "$O/ncu-decode.csv" 2> "$O/ncu-decode.err"
    echo "rc=$?"; python3 scripts/ncu_step_table.py "$O/ncu-decode.csv" | tee "$O/ncu-decode.txt" | head -60
fi
if [ -x "$B/m40-bench" ] && [ "$(left)" -gt 30 ]; then
    stamp "m40-bench chatglm2 (6B shape, repeats 5)"
    timeout $(($(left) - 5)) "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128,8192 \
        --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
    echo "rc=$?"; grep -E "^chatglm2|launches|tokens/s|taken" "$O/m40-chatglm2.txt" | cut -c1-150
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,memory.used --format=csv,noheader
stamp done
