#!/usr/bin/env bash
# One device call that checks, on the GPU, what was built on CPU-only
# machines since the last GPU run (issues 15-20), in the order that matters
# if the time runs out:
#   1. build (arch 90, -Werror) the transformer targets, m40-server and the
#      tests below                              (scripts/h200-transformer.sh)
#   2. the GPU tests: transformer ops, ChatGLM2, batched conversations
#      (test_glm_parallel), communicators and tensor parallelism on one GPU
#      (test_comm, test_chatglm2_tp), the fault sweep
#   3. ncu (clock control off) on the decode attention kernels at 8K and
#      32K: their own durations, without the host's launch gaps
#   4. m40-chat's terminal test on random 6B weights and the server's load
#      test                                     (the tail of scripts/h200-server.sh)
# Everything lands in $OUT (logs) and a summary on stdout.
#   OUT=DIR scripts/h200-verify.sh [BUILD_DIR]      (run with carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-verify 580 "$@"
OUT=$O/t STEPS="test chat" \
    EXTRA_TESTS="${EXTRA_TESTS-test_glm_parallel --gpu;test_comm --gpu;test_chatglm2_tp --gpu;test_fault --gpu}" \
    EXTRA_TARGETS="test_fault test_glm_parallel test_comm test_chatglm2_tp m40-server ${EXTRA_TARGETS:-}" \
    timeout $(($(left) - 200)) scripts/h200-transformer.sh "$B"
if [ -x "$B/m40-bench" ] && [ "$(left)" -gt 250 ]; then
    stamp "m40-bench attention, both decode kernels (M40_ATTN_AB=1)"
    M40_ATTN_AB=1 timeout 120 "$B/m40-bench" attention --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
    echo "rc=$?"; grep -E "^attention|target" "$O/m40-attention.txt" | cut -c1-175
fi
if command -v ncu >/dev/null && [ -x "$B/m40-bench" ] && [ "$(left)" -gt 150 ]; then
    stamp "ncu: decode attention kernels at 8K and 32K"
    timeout 90 ncu --clock-control none -k regex:attn --launch-count ${NCU_COUNT:-12} \
        --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
        "$B/m40-bench" attention --warmup 1 --repeats 1 --sizes 8192,32768 > "$O/ncu-attn.txt" 2>&1
    echo "rc=$?"; grep -E "attn_|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$O/ncu-attn.txt" | head -80
fi
[ "$(left)" -gt 120 ] && [ -x "$B/m40-server" ] && \
    BUDGET=$(($(left) - ${GLM_S:-0})) OUT=$O/server CLIENTS=${CLIENTS:-1,4,8} SOAK=${SOAK:-45} NO_BUILD=1 \
    scripts/h200-server.sh "$B"
if [ "${GLM_S:-0}" -gt 0 ] && [ -x "$B/m40-bench" ] && [ "$(left)" -gt 40 ]; then
    stamp "m40-bench chatglm2 (6B shape, repeats 5)"
    timeout $(($(left) - 5)) "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128,8192 \
        --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
    echo "rc=$?"; grep -E "^chatglm2|launches|tokens/s" "$O/m40-chatglm2.txt" | cut -c1-150
fi
tar czf "$O/verify.tgz" -C "$O" --exclude verify.tgz . 2>/dev/null
stamp done
