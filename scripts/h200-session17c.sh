#!/usr/bin/env bash
# Session 17, call 3 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = this
# tree's CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2):
#  1. the tree as it lands (the tile kernels back to main's int64 index math,
#     decode v5 with its loads a step ahead, 16-key shares and the optional
#     fused combine): test_attention_gpu (quick) and test_chatglm2 --gpu on
#     arch 90 and through the sm_52 PTX JIT;
#  2. where decode v5 stops winning: m40-bench attention at 128..8192 (the
#     default and the v5 rows, per call and in a graph of 20);
#  3. the int4 step in an 8192-token cache at ctx 128 / 1024 / 2048 / 4096 / 8192:
#     the fused default, the tile with RoPE separate, v5 (RoPE separate).
#   OUT=DIR scripts/h200-session17c.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session17c 540 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
wait $JITPID
M40_ATTN_AB=1 M40_ATTN_AB_ONLY=v5 timeout 150 "$B/m40-bench" attention --sizes 128,512,2048,4096,8192 \
    --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "^attention.*decode" "$O/attention.txt" | grep -E "m40_attention( |,|$)|v5|device copy" |
    sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-110 >> "$SUM"
S=128,1024,2048,4096,8192
glm_run v0 "" int4 $S
glm_run v0r "M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
glm_run v10 "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
[ $(left) -gt 40 ] && glm_run v0b "" int4 $S
[ $(left) -gt 40 ] && glm_run v10b "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 $S
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
