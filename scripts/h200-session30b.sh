#!/usr/bin/env bash
# Session 30, last call: the node's rule now takes decode v5's ways row 8,
# (16, 1), under every key bound <= 512 (lib/ops/attention.c).
#  1. test_glm_parallel --gpu (the chat's bound ladder 128 -> 256 -> 512
#     against a CPU model, now all of it in the ways), test_chatglm2 --gpu;
#  2. test_attention_gpu (quick 1: the ways rows forced, also over 8K and
#     32K keys, and the ways past 512 keys through m40__attn_v5_ways_keys);
#  3. int4,int8 decode at 128, 256, 512: the rule / V5WAYS=1 (session 29's
#     row) / V5WAYS=0 (v5's splits) / the rule;
#  4. int4,int8 decode at 1K, 2K, 4K: the rule (v6) / the ways there
#     (V5WAYS_KEYS=4096) / the rule / the ways.
# Carry [".carry/s30b.tar.xz"]: .s30b (arch 90: m40-bench, test_attention_gpu,
# test_chatglm2, test_glm_parallel).
#   OUT=DIR BUDGET=480 scripts/h200-session30b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session30b 480 .s30b
carry_start .carry/s30b.tar.xz
TEST_TIMEOUT=60 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" | tee -a "$SUM"
GLM_TIMEOUT=45
glm_run rule1 "" int4,int8 128,256,512
glm_run row1 "M40_BENCH_GLM_V5WAYS=1" int4,int8 128,256,512
glm_run splits "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256,512
glm_run rule2 "" int4,int8 128,256,512
glm_run long1 "" int4,int8 1024,2048,4096
glm_run wlong1 "M40_BENCH_GLM_V5WAYS_KEYS=4096" int4,int8 1024,2048,4096
glm_run long2 "" int4,int8 1024,2048,4096
glm_run wlong2 "M40_BENCH_GLM_V5WAYS_KEYS=4096" int4,int8 1024,2048,4096
carry_end
