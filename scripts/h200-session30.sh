#!/usr/bin/env bash
# Session 30, first call: what session 29's last call owed (refused for
# time). The node's rule takes decode v5's ways under key bounds <= 256.
#  1. test_glm_parallel --gpu (the chat's bound ladder 128 -> 256 -> 512
#     against a CPU model), test_chatglm2 --gpu, under the rule;
#  2. test_attention_gpu (quick: every ways row 1..8 forced, with c9d9279's
#     table-driven launch_v5);
#  3. int4,int8 decode at 128, 256: the rule / V5WAYS=0 / V5WAYS=0 / the
#     rule, then ways rows 7 and 8 (one row a block; knobs);
#  4. a probe (not committed; its diff in bench/NOTES.md, session 30):
#     .s30/m40-bench-probe, where M40_GEMV_PROBE=1 stages dense's x (the
#     attention's output) and 2 qkv's x as if another kernel had scaled it
#     for the exponent-zero decode (no max, sum, S, scaling, norm weights:
#     wrong results, time only), int4,int8 at 128 between baselines;
#  5. the sm_52 build's (CUDA 11.8) test_attention_gpu through PTX JIT.
# Carry [".carry/s30.tar.xz"]: .s30 (arch 90: m40-bench, test_attention_gpu,
# test_chatglm2, test_glm_parallel) and .jit52 (test_attention_gpu);
# ".carry/s30p.tar.xz" (.s30/m40-bench-probe) if the probe is to run.
#   OUT=DIR BUDGET=300 scripts/h200-session30.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session30 300 .s30
carry_start .carry/s30.tar.xz
TEST_TIMEOUT=90 gpu_tests "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
M40_ATTN_QUICK=1 TEST_TIMEOUT=120 gpu_tests "test_attention_gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
glm_run new1 "" int4,int8 128,256
glm_run old1 "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256
glm_run old2 "M40_BENCH_GLM_V5WAYS=0" int4,int8 128,256
glm_run new2 "" int4,int8 128,256
glm_run ways7 "M40_BENCH_GLM_V5WAYS=7" int4,int8 128,256
glm_run ways8 "M40_BENCH_GLM_V5WAYS=8" int4,int8 128,256
tar xJf .carry/s30p.tar.xz 2>/dev/null
if [ -x .s30/m40-bench-probe ]; then
    cp .s30/m40-bench .s30/m40-bench-base
    for p in base1 0 1 2 3 base2; do
        case $p in base*) cp .s30/m40-bench-base .s30/m40-bench; e="" ;;
                   *) cp .s30/m40-bench-probe .s30/m40-bench; e="M40_GEMV_PROBE=$p" ;; esac
        glm_run probe$p "$e" int4,int8 128
    done
    cp .s30/m40-bench-base .s30/m40-bench
fi
[ "$(left)" -gt 40 ] && M40_ATTN_QUICK=2 JIT_TIMEOUT=$(( $(left) - 10 )) jit52_tests "test_attention_gpu"
carry_end
