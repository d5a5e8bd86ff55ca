#!/usr/bin/env bash
# Session 19, call 3 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = the
# CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2 from this
# tree): decode v6 as the default at T 1, f16, D 128 (no bound: by the cache
# length; a bound <= 512 keeps v5).
#  1. test_attention_gpu (quick), test_chatglm2 --gpu, test_graph_errors:
#     arch 90 and (the first two) the sm_52 build through PTX JIT;
#  2. m40-bench attention 128 / 1K / 8K / 32K (default = v6; the 32-key
#     K-first tile as the A/B row);
#  3. the int4 step (8192-token cache, ctx 128 / 1024 / 8192): bound
#     (default), no bound (M40_BENCH_GLM_KEYS=0: v6 by the cache length),
#     the tile kernel (M40_BENCH_GLM_V6=0), alternating; int8 bound / tile.
#   OUT=DIR scripts/h200-session19c.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session19c 520 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2 test_graph_errors
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_graph_errors" | tee -a "$SUM" >/dev/null
wait $JITPID
M40_ATTN_AB=1 M40_ATTN_AB_ONLY="K first" timeout 200 "$B/m40-bench" attention --sizes 128,1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "graph x20" "$O/attention.txt" | grep -v prefill | sed -E 's/ +/ /g; s/\(min.*//' >> "$SUM"
S=128,1024,8192
glm_run kb "" int4 $S
glm_run none "M40_BENCH_GLM_KEYS=0" int4 $S
glm_run tile "M40_BENCH_GLM_V6=0" int4 $S
glm_run kb2 "" int4,int8 $S
[ $(left) -gt 60 ] && glm_run tile2 "M40_BENCH_GLM_V6=0" int4,int8 $S
[ $(left) -gt 30 ] && glm_run none2 "M40_BENCH_GLM_KEYS=0" int4 $S
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -30 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
