#!/usr/bin/env bash
# Session 31, one call: the checks session 30 owed, under the (16, 1) rule,
# and the new Maxwell edge (lib/ops/attention.c: on a cc 5.x card decode v5
# only under key bounds <= 128, v6 from 129):
#  1. test_glm_parallel --gpu, test_chatglm2 --gpu (the model under the rule);
#  2. test_attention_gpu (quick 2: every ways row forced, the graph nodes
#     under key bounds, and the new case: m40__attn_short_keys 128 under
#     bounds 64-512);
#  3. int4,int8 decode at 128 / 256 / 512: the rule / the Maxwell edge on
#     this GPU (M40_BENCH_GLM_SHORT_KEYS=128: v6 at 256 and 512) / the rule;
#  4. int4,int8 decode at 1K / 2K / 4K: v6 (the rule) / the ways there
#     (M40_BENCH_GLM_V5WAYS_KEYS=4096), session 30's unmeasured knob.
# Carry [".carry/s31.tar.xz"]: .s31 (arch 90: m40-bench, test_attention_gpu,
# test_chatglm2, test_glm_parallel of b71508e + the test case).
#   OUT=DIR BUDGET=300 [PART=tests|ab] scripts/h200-session31.sh
# (PART: only 1-2, or only 3-4; default all)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
case ${PART:-all} in all | tests | ab) ;; *) echo "PART: all, tests or ab, not '$PART'" >&2; exit 2 ;; esac
. scripts/h200-common.sh h200-session31 300 .s31
carry_start .carry/s31.tar.xz
if [ "${PART:-all}" != ab ]; then
    TEST_TIMEOUT=60 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
    M40_ATTN_QUICK=2 TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" | tee -a "$SUM"
fi
if [ "${PART:-all}" != tests ]; then
    GLM_TIMEOUT=45
    glm_run rule1 "" int4,int8 128,256,512
    glm_run edge128 "M40_BENCH_GLM_SHORT_KEYS=128" int4,int8 128,256,512
    glm_run rule2 "" int4,int8 128,256,512
    glm_run long "" int4,int8 1024,2048,4096
    glm_run wlong "M40_BENCH_GLM_V5WAYS_KEYS=4096" int4,int8 1024,2048,4096
fi
carry_end
