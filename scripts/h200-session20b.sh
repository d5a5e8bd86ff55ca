#!/usr/bin/env bash
# Session 20, call 2 (carry [".debs"]): the rule after call 1: prefill slots =
# the BM-64 kernel's resident blocks (H200 3 an SM), shares = the fewest
# that make one wave (at most 4), the BM-64 kernel from one wave without
# shares (was: the BM-32 tile below 1.5 waves of the tile kernel's slots).
#  1. test_attention_gpu (quick), test_chatglm2 --gpu, test_graph_errors (arch 90);
#  2. m40-bench attention prefill T 384 / 512 / 768 / 1024 / 1536 / 2048 with
#     M40_ATTN_AB=1 (the shares rows now forced on the BM-64 kernel);
#  3. ChatGLM2-6B int4 prefill 128 / 512 / 2048, the rule / none, alternating.
#   OUT=DIR scripts/h200-session20b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session20b 420 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_graph_errors
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
M40_ATTN_AB=1 M40_ATTN_AB_ONLY="none" M40_BENCH_ATTN_PREFILL=384,512,768,1024,1536,2048 \
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
