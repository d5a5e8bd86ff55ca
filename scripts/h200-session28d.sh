#!/usr/bin/env bash
# Session 28, fourth call: decode v5's splits from the key bound (at most
# ceil(bound / 16); lib/ops/attention.c attn_bound) and the chat's bound
# ladder from 128 (examples/chatglm2 glm_step_batch), after call 3 (SPLITS=8
# at ctx 128: int4 +1.2%, 16 at 256 +0.6%). Tests, then the step against
# call 2's binary.
# Carry [".carry/s28d.tar.xz"]: .s28d/new (arch 90: m40-bench,
# test_attention_gpu, test_chatglm2, test_glm_parallel), .s28d/old/m40-bench
# (call 2's, 7dd42f6).
#  1. test_attention_gpu (quick), test_chatglm2 --gpu, test_glm_parallel
#  --gpu; 2. int4,int8 decode at 128, 256, 512, 1024: new / old / old / new.
#   OUT=DIR BUDGET=330 scripts/h200-session28d.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28d 330 .s28d/new
carry_start .carry/s28d.tar.xz
M40_ATTN_QUICK=1 TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" "test_glm_parallel --gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
S=128,256,512,1024
glm_run new1 "" int4,int8 $S
B=.s28d/old glm_run old1 "" int4,int8 $S
B=.s28d/old glm_run old2 "" int4,int8 $S
glm_run new2 "" int4,int8 $S
carry_end
