#!/usr/bin/env bash
# Session 20, call 4 (carry [".debs"]): the last code of the session on the
# GPU: decode v6's launch helper and predicate (host-side refactor), the
# tensor-parallel rank threads' first generation (examples/chatglm2), the
# prefill shares; then the decode step as a regression check.
#  1. test_attention_gpu (quick), test_chatglm2 --gpu, test_chatglm2_tp --gpu,
#     test_chatglm2_split --gpu, test_graph_errors (arch 90);
#  2. m40-bench chatglm2 int4, int8 decode at ctx 128 / 8192 (8192-token cache).
#   OUT=DIR scripts/h200-session20d.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session20d 360 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_chatglm2_tp test_chatglm2_split test_graph_errors
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_chatglm2_tp --gpu" \
    "test_chatglm2_split --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
[ $(left) -gt 50 ] && glm_run step "" int4,int8 128,8192
for f in "$O"/test_*.log; do [ -f "$f" ] && tail -20 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
