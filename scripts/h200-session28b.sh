#!/usr/bin/env bash
# Session 28, second call: decode v5 and v6 with their fused RoPE asking for
# qkv's q, K and V before pos (they do not depend on it), and v5 asking for
# its first step's K rows before the barrier where none is the new
# position's (v6's K-first rule); plus the empty-split skip for the tile
# kernels only (kernels/attention.h m40k_attn_skip_empty 1; call 1 of this
# session: SKIP=0 won at every context). Tested and timed against the tree
# before the session.
# Carry [".carry/s28b.tar.xz", ".carry/jit52.tar.xz"]: .s28b/new (arch 90:
# m40-bench, test_attention_gpu), .s28b/old/m40-bench (50a9dfc), .jit52/
# (sm_52 build of this tree: test_attention_gpu).
#  1. test_attention_gpu (quick); 2. int4,int8 decode at 128, 512, 1024,
#  8192: new / old / new SKIP=2 (the loads alone) / old / new; 3. the sm_52
#  JIT test_attention_gpu (quick).
#   OUT=DIR BUDGET=480 scripts/h200-session28b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28b 480 .s28b/new
carry_start .carry/s28b.tar.xz
M40_ATTN_QUICK=1 TEST_TIMEOUT=150 gpu_tests "test_attention_gpu" | tee -a "$SUM"
GLM_TIMEOUT=60
S=128,512,1024,8192
glm_run new1 "" int4,int8 $S
B=.s28b/old glm_run old1 "" int4,int8 $S
glm_run loads1 "M40_BENCH_GLM_SKIP=2" int4,int8 $S
B=.s28b/old glm_run old2 "" int4,int8 $S
glm_run new2 "" int4,int8 $S
[ "$(left)" -gt 120 ] && JIT_TIMEOUT=$(( $(left) - 20 )) jit52_tests "test_attention_gpu"
carry_end
