#!/usr/bin/env bash
# Session 19, call 2 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = the
# CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2 from this
# tree): decode v6 with K first and its fused RoPE form, chosen by the key
# bound past 512 keys (4 rows a lane to 8192 keys, 8 beyond).
#  1. test_attention_gpu (quick; variants 11 and 12, the key bounds 1024
#     and 16384), test_chatglm2 --gpu, test_graph_errors: arch 90 and (the
#     first two) the sm_52 build through PTX JIT;
#  2. m40-bench attention 128 / 512 / 1K / 8K / 32K: the default, v5, v6;
#  3. the int4 and int8 steps (8192-token cache, ctx 128 / 1024 / 4096 /
#     8192): the bound with v6 (default) against M40_BENCH_GLM_BOUND_V6=0.
# (The knob is now M40_BENCH_GLM_V6, and v6 also runs without a bound.)
#   OUT=DIR scripts/h200-session19b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session19b 560 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_graph_errors
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
wait $JITPID
M40_ATTN_AB=1 M40_ATTN_AB_ONLY="v6|v5 a warp" timeout 200 "$B/m40-bench" attention --sizes 128,512,1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "graph x20" "$O/attention.txt" | grep -v prefill | sed -E 's/ +/ /g; s/\(min.*//' >> "$SUM"
S=128,1024,4096,8192
glm_run v6 "" int4,int8 $S
glm_run tile "M40_BENCH_GLM_BOUND_V6=0" int4,int8 $S
[ $(left) -gt 80 ] && glm_run v6b "" int4,int8 $S
[ $(left) -gt 60 ] && glm_run tileb "M40_BENCH_GLM_BOUND_V6=0" int4 $S
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
echo "=== SUMMARY"; cat "$SUM"
