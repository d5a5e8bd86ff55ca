#!/usr/bin/env bash
# Session 17, call 5: decode v5 with at most 32 splits a (b, g) (its empty
# blocks in a long cache were its whole cost, call 4's ncu): test_attention_gpu
# (quick), the attention rows, and the int4 step at ctx 128..8192 in an
# 8192-token cache against the default.   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session17e 330 "$@"
build_arch90 m40-bench test_attention_gpu
M40_ATTN_QUICK=1 TEST_TIMEOUT=120 gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
S=128,1024,2048,4096,8192
glm_run v10 "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
glm_run v0 "" int4 $S
glm_run v0r "M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
[ $(left) -gt 20 ] && glm_run v10b "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
