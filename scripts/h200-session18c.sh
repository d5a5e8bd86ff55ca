#!/usr/bin/env bash
# Session 18, call 3 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = the
# CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2 from this
# tree): the attention key bound (m40_graph_set_attention_keys: decode v5
# with its fused RoPE at keys <= 512).
#  1. test_attention_gpu (quick; its "attention key bound" section),
#     test_chatglm2 --gpu, test_graph_errors: arch 90 and (the first two)
#     the sm_52 build through PTX JIT;
#  2. the int4 and int8 steps (8192-token cache, ctx 128 / 512 / 1024 /
#     8192), the bench giving each context as the bound (default) against
#     M40_BENCH_GLM_KEYS=0 (none), alternating.
#   OUT=DIR scripts/h200-session18c.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session18c 500 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_graph_errors
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
grep -A3 "key bound" "$O/test_attention_gpu.log" | head -8 >> "$SUM"
wait $JITPID
S=128,512,1024,8192
glm_run kb "" int4,int8 $S
glm_run none "M40_BENCH_GLM_KEYS=0" int4,int8 $S
glm_run kb2 "" int4,int8 $S
[ $(left) -gt 40 ] && glm_run none2 "M40_BENCH_GLM_KEYS=0" int4,int8 $S
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
