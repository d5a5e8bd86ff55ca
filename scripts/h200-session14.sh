#!/usr/bin/env bash
# Fourteenth session, call 1: the decode splits' combine inside the tile
# kernel (m40k_attn_fuse_combine: fused vs attn_combine launched), tested and
# timed per call, in a graph and in the whole decode step; PyTorch's SDPA with
# its default backend (on sm_80+ the memory-efficient kernel, FP32 on tensor
# cores) and with the math backend only (cuBLAS FP32 SIMT) beside our prefill.
#   OUT=DIR scripts/h200-session14.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session14 570 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=70
glm_run f1 "M40_BENCH_GLM_FUSE_COMBINE=1" int4,int8,fp16 128,8192
glm_run f0 "M40_BENCH_GLM_FUSE_COMBINE=0" int4,int8,fp16 128,8192
glm_run f1b "M40_BENCH_GLM_FUSE_COMBINE=1" int4,int8,fp16 128,8192
stamp "m40-bench attention (A/B)"
M40_ATTN_AB=1 timeout 120 "$B/m40-bench" attention --sizes 1024,8192,32768 \
    --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
note "attention rc=$?"
grep -E "decode ctx|prefill T" "$O/m40-attention.txt" | grep -vE "v3|v4|loads early|16 keys|64 keys|K first|32 keys" |
    sed -E 's/ +/ /g; s/\(min.*\)//' | cut -c1-150 >> "$SUM"
if [ "$(left)" -gt 80 ]; then
    timeout $(($(left) - 15)) python3 bench/bench_torch.py attention --json "$O/torch-attention.json" \
        > "$O/torch-attention.txt" 2>&1
    note "torch attention rc=$?"
    grep -E "prefill T|decode ctx|kernels:" "$O/torch-attention.txt" | sed -E 's/ +/ /g' | cut -c1-300 >> "$SUM"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
