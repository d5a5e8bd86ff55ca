#!/usr/bin/env bash
# Session 30, last call: the node's rule now takes decode v5's ways row 8,
# (16, 1), under every key bound <= 512 (lib/ops/attention.c).
#  1. test_glm_parallel --gpu (the chat's bound ladder 128 -> 256 -> 512
#     against a CPU model, now all of it in the ways), test_chatglm2 --gpu;
#  2. int4,int8 decode at 128, 256, 512: the rule / V5WAYS=1 (session 29's
#     row) / V5WAYS=0 (v5's splits) / the rule.
# Carry [".carry/s30b.tar.xz"]: .s30b (arch 90: m40-bench, test_chatglm2,
# test_glm_parallel).
#   OUT=DIR BUDGET=200 scripts/h200-session30b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session30b 200 .s30b
carry_start .carry/s30b.tar.xz
TEST_TIMEOUT=60 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
GLM_TIMEOUT=45
glm_run rule1 "" int4,int8 128,256,512
glm_run row1 "M40_BENCH_GLM_V5WAYS=1" int4,int8 128,256,512
glm_run splits "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256,512
glm_run rule2 "" int4,int8 128,256,512
carry_end
