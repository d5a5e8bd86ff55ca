#!/usr/bin/env bash
# Sixteenth session, call 1: SwiGLU inside dense_h_to_4h's GEMV store
# (LINEAR_Q glu), sampling variant 4 (the narrowest window), and decode
# variant 6 as the K-first 16-key tile with the fused RoPE.
#  1. test_qlinear_fused --gpu (glu cases: paired store and the fallbacks),
#     test_chatglm2 --gpu, test_sample_gpu (variant 4 vs 0 bit for bit),
#     test_quant_gpu (v2/v3's row mapping changed);
#  2. the decode step, glu on / off / on (int4, int8, fp16, int4g128, ctx 128);
#  3. the int4 step at ctx 128 and 8192 with decode variant 6 and 0;
#  4. M40_SAMPLE_AB=1 m40-bench sample --sizes 1,8 (v4, v3, v1, v0);
#  5. test_attention_gpu (quick: variant 6's new kernels among all).
#   OUT=DIR scripts/h200-session16.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session16 560 "$@"
build_arch90 m40-bench test_qlinear_fused test_quant_gpu test_sample_gpu test_chatglm2 test_attention_gpu
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_sample_gpu" "test_quant_gpu" |
    tee -a "$SUM" >/dev/null
ALL=int4,int8,fp16,int4g128
glm_run glu1 "" $ALL 128
glm_run glu0 "M40_BENCH_GLM_FUSE=3" $ALL 128
glm_run glu1b "" $ALL 128
[ $(left) -gt 150 ] && glm_run v6 "M40_ATTN_DECODE_VARIANT=6" int4 128,8192
[ $(left) -gt 120 ] && glm_run v0 "" int4 128,8192
if [ $(left) -gt 90 ]; then
    M40_SAMPLE_AB=1 timeout 60 "$B/m40-bench" sample --sizes 1,8 > "$O/sample.txt" 2>&1
    note "sample AB rc=$?"
    grep -E "^sample|us per call" "$O/sample.txt" | grep -v "device copy" | sed -E 's/ +/ /g; s/ target.*//; s/median.*//' |
        paste - - | cut -c1-170 >> "$SUM"
fi
[ $(left) -gt 40 ] && M40_ATTN_QUICK=1 TEST_TIMEOUT=$(( $(left) - 15 )) gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
