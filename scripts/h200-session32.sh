#!/usr/bin/env bash
# Prepared in session 31 for the next device call: decode v5's key loop with
# its rows advanced a step at a time, no 64-bit product a load (branch
# wip/s31-v5-rows, 3dc934f, merged with main e57c628; bench/NOTES.md session
# 31 item 5) against main (e57c628), in one call:
#  1. the branch's test_attention_gpu (quick 2: every v5 form forced, the
#     graph nodes under key bounds, bound_nodes);
#  2. int4,int8 decode at 128 / 256 / 512: main / branch / main / branch;
#  3. the branch's test_attention_gpu at quick 1 with what is left (8K and
#     32K keys; not run since session 29).
# Carry [".carry/s32ab.tar.xz"]: .s32m (main's arch-90 m40-bench and
# test_attention_gpu), .s32w (the branch's); rebuild both from build-90 if
# the checkout is new.
#   OUT=DIR BUDGET=480 scripts/h200-session32.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session32 480 .s32w
carry_start .carry/s32ab.tar.xz
M40_ATTN_QUICK=2 TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" | tee -a "$SUM"
GLM_TIMEOUT=45
for i in 1 2; do
    B=.s32m glm_run main$i "" int4,int8 128,256,512
    B=.s32w glm_run rows$i "" int4,int8 128,256,512
done
T=$(($(left) - 20))
[ $T -gt 60 ] && M40_ATTN_QUICK=1 TEST_TIMEOUT=$T gpu_tests "test_attention_gpu" | tee -a "$SUM"
carry_end
