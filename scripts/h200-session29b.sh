#!/usr/bin/env bash
# Session 29, second call (little device time left): the node's rule with
# decode v5's ways under key bounds <= 256 (lib/ops/attention.c), landed from
# the first call's A/B.
#  1. test_glm_parallel --gpu (the chat's bound ladder 128 -> 256 -> 512
#     against a CPU model: the rule's ways, then v5's splits), test_chatglm2 --gpu;
#  2. int4,int8 decode at 128, 256: the rule / V5WAYS=0 (v5's splits, the
#     tree before) / V5WAYS=0 / the rule;
#  3. two more shapes of ways, one row a block (8 and 16 ways: knob rows 7
#     and 8, measured only; untested on a GPU so far, not the rule);
#  4. every format at ctx 128 (the table's row), time permitting.
# Carry [".carry/s29b.tar.xz"]: .s29 (arch 90: m40-bench, test_chatglm2,
# test_glm_parallel).
#   OUT=DIR BUDGET=200 scripts/h200-session29b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session29b 200 .s29
carry_start .carry/s29b.tar.xz
TEST_TIMEOUT=60 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
glm_run new1 "" int4,int8 128,256
glm_run old1 "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256
glm_run old2 "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256
glm_run new2 "" int4,int8 128,256
glm_run ways7 "M40_BENCH_GLM_V5WAYS=7" int4,int8 128,256
glm_run ways8 "M40_BENCH_GLM_V5WAYS=8" int4,int8 128,256
[ "$(left)" -gt 45 ] && glm_run all128 "" fp16,int8,int4,int4g128 128
carry_end
