#!/usr/bin/env bash
# Fourteenth session, call 2: the fused combine with its fold's loads in
# flight (call 1's fold was a chain of L2 round trips): test_attention_gpu,
# m40-bench attention's decode A/B (fused / launched), the decode step A/B.
#   OUT=DIR scripts/h200-session14b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session14b 330 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
stamp "m40-bench attention (A/B)"
M40_BENCH_ATTN_PREFILL=0 M40_ATTN_AB=1 timeout 100 "$B/m40-bench" attention --sizes 128,1024,8192,32768 \
    --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
note "attention rc=$?"
grep -E "decode ctx" "$O/m40-attention.txt" | grep -vE "v3|v4|loads early|16 keys|64 keys|K first|32 keys" |
    sed -E 's/ +/ /g; s/\(min.*\)//' | cut -c1-150 >> "$SUM"
GLM_TIMEOUT=70
glm_run f1 "M40_BENCH_GLM_FUSE_COMBINE=1" int4,int8,fp16 128,8192
glm_run f0 "M40_BENCH_GLM_FUSE_COMBINE=0" int4,int8,fp16 128,8192
[ "$(left)" -gt 60 ] && glm_run f1b "M40_BENCH_GLM_FUSE_COMBINE=1" int4,int8,fp16 128,8192
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
