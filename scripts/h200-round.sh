#!/usr/bin/env bash
# One 10-minute device call for a round of transformer work (issues 15-17),
# in the order that matters if the time runs out:
#   1. build (arch 90, -Werror): the transformer targets + the tests the
#      sanitizers and the soak need            (scripts/h200-transformer.sh)
#   2. the GPU tests of the transformer ops and the model, m40-chat on the GPU
#   3. benches on a quiet GPU: m40-bench copy|attention|norm|sample, the
#      attention versions                       (same script, STEPS/BENCHES)
#      and a short m40-bench chatglm2 (GLM=0: not)
#   4. the decode soak, alone on the GPU (device memory is board-wide)
#   5. compute-sanitizer: memcheck, racecheck, initcheck, synccheck over the
#      transformer's GPU tests and the fault test; initcheck over
#      test_gpu_conv_engine                     (scripts/gpu-sanitize.sh)
# Everything lands in $OUT/round.tgz (logs, JSON, CSV) and the summary on stdout.
#   OUT=DIR scripts/h200-round.sh [BUILD_DIR]
# Environment: BUDGET=570 (seconds for everything), SOAK="..." (the soak's
# command line after m40-soak, default ChatGLM2 mid shape 10,000 steps;
# empty: no soak), SAN_ONLY (regex of the tests).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
T0=$SECONDS
B=${1:-build-gpu}
OUTDIR=${OUT:-/tmp/h200-round}
W=/tmp/h200-round.work
rm -rf "$W"; mkdir -p "$W" "$OUTDIR"
BUDGET=${BUDGET:-570}
SAN_ONLY=${SAN_ONLY:-^(test_attention_gpu|test_transformer_ops_gpu|test_sample_gpu|test_gpu_chatglm2|test_graph_ops_gpu|test_gpu_fault|test_gpu_glm_parallel)$}
stamp() { echo "==== [$((SECONDS - T0)) s] $*"; }
left() { echo $((T0 + BUDGET - SECONDS)); }
pack() { tar czf "$OUTDIR/round.tgz" -C "$W" . 2>/dev/null; }
trap pack EXIT

# 1-3: build, tests, m40-chat, benches, versions
OUT=$W/t STEPS="test chat bench versions" EXTRA_TESTS="${EXTRA_TESTS-test_fault --gpu;test_glm_parallel --gpu;test_comm --gpu;test_chatglm2_tp --gpu}" BENCHES="${BENCHES:-copy attention norm sample}" \
    EXTRA_TARGETS="test_gpu_conv_engine test_fault test_glm_parallel test_comm test_chatglm2_tp m40-soak ${EXTRA_TARGETS:-}" \
    timeout $(($(left) - 60)) scripts/h200-transformer.sh "$B"
pack

# 3b: the 6B-shaped model, short (launches per token, memory vs plan, decode)
if [ -x "$B/m40-bench" ] && [ "$(left)" -gt 330 ] && [ "${GLM:-1}" = 1 ]; then
    stamp "m40-bench chatglm2 (repeats 5)"
    timeout 100 "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128,8192 \
        --json="$W/m40-chatglm2.json" > "$W/m40-chatglm2.txt" 2>&1
    echo "rc=$?"; grep -E "^chatglm2|launches|device memory|tokens/s" "$W/m40-chatglm2.txt" | cut -c1-150
    pack
fi

# 4: the soak, alone
SOAK=${SOAK-"--model chatglm2 --shape mid --dtype fp16 --steps 10000 --round 200 --every 100"}
if [ -n "$SOAK" ] && [ -x "$B/m40-soak" ] && [ "$(left)" -gt 200 ]; then
    stamp "m40-soak $SOAK"
    # shellcheck disable=SC2086
    timeout 150 "$B/m40-soak" $SOAK --csv "$W/soak_chatglm2.csv" > "$W/soak_chatglm2.txt" 2>&1
    echo "soak rc=$?"; tail -6 "$W/soak_chatglm2.txt"
    pack
fi

# 5: the sanitizers, with what is left (the two sets side by side)
if [ "$(left)" -gt 60 ]; then
    stamp "sanitizers ($(left) s left)"
    b=$(($(left) - 10))
    OUT=$W/san1 NO_BUILD=1 ONLY="$SAN_ONLY" TOOLS="memcheck racecheck initcheck synccheck" \
        JOBS=10 BUDGET=$b RUN_LIMIT=$b scripts/gpu-sanitize.sh 90 "$B" > "$W/san1.txt" 2>&1 &
    OUT=$W/san2 NO_BUILD=1 ONLY='^test_gpu_conv_engine$' TOOLS="initcheck" \
        JOBS=1 BUDGET=$b RUN_LIMIT=$b scripts/gpu-sanitize.sh 90 "$B" > "$W/san2.txt" 2>&1 &
    wait
    sed -n '/^test  /,$p' "$W/san1.txt"; sed -n '/^test  /,$p' "$W/san2.txt"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,memory.used --format=csv,noheader
stamp done
