#!/usr/bin/env bash
# Session 20, call 1 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = the
# CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2 from this
# tree): prefill attention's key shares (kernels/attention.h,
# m40k_attention_prefill_splits: a grid that leaves the GPU part empty
# splits each query tile's keys in 2..4 shares, attn_combine_rows folds).
#  1. test_attention_gpu (quick; the rule, none, 2, 3 forced on both prefill
#     kernels), test_chatglm2 --gpu, test_graph_errors: arch 90, and the
#     first two from the sm_52 build through PTX JIT;
#  2. m40-bench attention prefill T 128 / 256 / 512 / 1024 / 2048 / 8192
#     with M40_ATTN_AB=1 (both kernels, paired or not, 1..4 shares), decode
#     at 8K only (the default row);
#  3. ChatGLM2-6B int4 prefill 128 / 512 / 2048 with the rule and with no
#     shares (M40_BENCH_GLM_SHARES=1), alternating.
#   OUT=DIR scripts/h200-session20.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session20 540 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_graph_errors
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
wait $JITPID
M40_ATTN_AB=1 M40_ATTN_AB_ONLY="none" M40_BENCH_ATTN_PREFILL=128,256,512,1024,2048,8192 \
    timeout 200 "$B/m40-bench" attention --sizes 8192 --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "^attention prefill" "$O/attention.txt" | sed -E 's/ +/ /g; s/\(min.*\)//; s/max_rel_err.*//' >> "$SUM"
[ $(left) -gt 100 ] && glm_prefill_run rule ""
[ $(left) -gt 80 ] && glm_prefill_run none "M40_BENCH_GLM_SHARES=1"
[ $(left) -gt 60 ] && glm_prefill_run rule2 ""
[ $(left) -gt 40 ] && glm_prefill_run none2 "M40_BENCH_GLM_SHARES=1"
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -30 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
