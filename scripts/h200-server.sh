#!/usr/bin/env bash
# m40-server on the GPU machine in one call (issue 19): build m40-server and
# the model API's test (arch 90, through scripts/h200-transformer.sh, which
# unpacks the carried .debs: jansson, libmicrohttpd), run
# `test_glm_parallel --gpu` (conversations joining and leaving a batched
# decode get what they get alone), then tests/server/load_test.py on seeded
# random ChatGLM2-6B weights (m40-server --random-weights 6b: no 12.5 GB
# checkpoint to write or read) with make_chat_model.py's tokenizer:
# aggregate tok/s, TTFT and inter-token latency at 1/4/8/16 clients,
# --parallel 16, prefix reuse (--turns 3), then a soak of 8 clients with
# device memory sampled. Before the load test: m40-chat's terminal test
# (chat_test.py pty) on random ChatGLM2-6B weights in fp16 (issue 18).
#   OUT=DIR scripts/h200-server.sh [BUILD_DIR]        (run with carry [".debs"])
# Environment: DTYPE (int8), CLIENTS (1,4,8,16), SOAK (seconds, 120), BUDGET (570),
# SKIP_CHAT=1 (no m40-chat pty test).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-server 570 "$@"
if [ -z "${NO_BUILD:-}" ]; then # NO_BUILD=1: built already (scripts/h200-verify.sh)
    OUT=$O/build STEPS=none EXTRA_TARGETS="m40-server test_glm_parallel" \
        timeout $(($(left) - 300)) scripts/h200-transformer.sh "$B" | grep -vE "^(name|NVIDIA)" | tail -5
fi
[ -x "$B/m40-server" ] || { echo "no m40-server (libmicrohttpd? carry .debs)"; exit 1; }
if [ -z "${NO_BUILD:-}" ]; then
    stamp "test_glm_parallel --gpu"
    timeout 120 "$B/test_glm_parallel" --gpu > "$O/test_glm_parallel.log" 2>&1
    echo "rc=$? $(tail -5 "$O/test_glm_parallel.log" | tr '\n' ' ')"
fi
stamp "tokenizer (make_chat_model.py)"
python3 tests/chatglm2/make_chat_model.py /tmp/h200-server-tok > /dev/null || exit 1
if [ -x "$B/m40-chat" ] && [ -z "${SKIP_CHAT:-}" ]; then # issue 18: the terminal chat at ChatGLM2-6B's size
    stamp "m40-chat pty on random 6B weights (fp16)"
    M40_CHAT_ARGS="--dtype fp16 --random-weights 6b" timeout 150 python3 tests/chatglm2/chat_test.py \
        "$B/m40-chat" /tmp/h200-server-tok pty > "$O/chat_pty_6b.log" 2>&1
    echo "rc=$? $(tail -1 "$O/chat_pty_6b.log")"; grep -E "^FAIL" "$O/chat_pty_6b.log" | head -5
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.used --format=csv \
    | tee "$O/nvidia-smi.csv"
SOAK=${SOAK:-120}
[ "$(left)" -lt $((SOAK + 200)) ] && SOAK=$(($(left) - 200))
[ "$SOAK" -lt 0 ] && SOAK=0
stamp "load test: ${DTYPE:-int8}, clients ${CLIENTS:-1,4,8,16}, --parallel 16, --turns 3, soak $SOAK s"
timeout $(($(left) - 10)) python3 tests/server/load_test.py --server "$B/m40-server" \
    --random-weights 6b --tokenizer /tmp/h200-server-tok/tokenizer.model \
    --dtype "${DTYPE:-int8}" --ctx 2048 --clients "${CLIENTS:-1,4,8,16}" --requests-per-client 4 \
    --max-tokens 128 --parallel 16 --turns 3 --soak "$SOAK" --json "$O/load.json" \
    > "$O/load.txt" 2> "$O/load.err"
echo "load rc=$?"; grep -E '^\{' "$O/load.txt" | cut -c1-400
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,memory.used --format=csv | tail -1
stamp done
