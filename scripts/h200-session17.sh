#!/usr/bin/env bash
# Prepared in session 16 for the next session with device time (on branch
# wip/s16-decode-v5; merge wip/s16-attn-int32 first if it is to be timed too):
#  1. test_attention_gpu (every decode variant, 10 = decode v5 among them) and
#     test_chatglm2 --gpu;
#  2. m40-bench attention at 128 / 1024 / 8192 with M40_ATTN_AB=1 (the v5
#     rows, per call and in a graph of 20);
#  3. the int4 step at ctx 128 and 8192 (8192-token cache): decode v5 with the
#     separate RoPE + append (M40_BENCH_GLM_FUSE_ROPE=0) against the tile
#     kernel the same way, then the fused default.
#   OUT=DIR scripts/h200-session17.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session17 560 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2
TEST_TIMEOUT=170 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
M40_ATTN_AB=1 timeout 120 "$B/m40-bench" attention --sizes 128,1024,8192 --repeats 10 > "$O/attention.txt" 2>&1
note "attention AB rc=$?"
grep -E "^attention.*decode" "$O/attention.txt" | grep -E "m40_attention( |,|$)|v5|device copy" |
    sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-120 >> "$SUM"
glm_run v10r "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 128,8192
glm_run v0r "M40_BENCH_GLM_FUSE_ROPE=0" int4 128,8192
glm_run v0 "" int4 128,8192
[ $(left) -gt 40 ] && glm_run v10rb "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 128,8192
for f in "$O"/test_*.log; do tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
