#!/usr/bin/env bash
# Session 39, first of two calls: x double-buffered in the passes GEMV
# (m40k_quant_gemv_v2_pass_db, knob M40_BENCH_GLM_PASSDB: 0 the rule, int4's
# ring; 1 never; 2 every passes form), the merged tree's tests on arch 90,
# and issue 17's decode rows:
#  0. on an H200: the floor chain first (owed since session 33; this
#     m40-bench has it, so no other carry is needed);
#  1. decode at ctx 128, ROUNDS times (2): the rule (int4, int8, int4g128),
#     never (int4: the ring with one buffer), everywhere (int8, int4g128:
#     one chunk ahead, double-buffered);
#  2. test_qlinear_fused --gpu, test_quant_gpu (quick 1), test_chatglm2
#     --gpu, arch 90;
#  3. with 200 s left: m40-bench chatglm2 at ctx 128 / 1K / 8K with
#     prefill 128 / 512 / 2048 and bench_torch.py chatglm2, TF32 off.
# The sm_52 build's tests through PTX JIT are the second call
# (scripts/h200-session39b.sh).
# Carry [".carry/s39.tar.xz"] (.s39: arch-90 m40-bench, test_qlinear_fused,
# test_quant_gpu, test_chatglm2 of wip/s39; .jit52c: its CUDA 11.8 sm_52
# test_qlinear_fused and test_quant_gpu).
#   OUT=DIR BUDGET=560 scripts/h200-session39.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session39 560 .s39
carry_start .carry/s39.tar.xz
floor_on_h200 .s39
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $(left) -gt 400 ] || break
    M40_BENCH_GLM_PASSDB=0 glm_ab rule-$i .s39 int4,int8,int4g128 128 60
    M40_BENCH_GLM_PASSDB=1 glm_ab never-$i .s39 int4 128 30
    M40_BENCH_GLM_PASSDB=2 glm_ab all-$i .s39 int8,int4g128 128 50
done
TEST_TIMEOUT=160 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=70 gpu_tests "test_quant_gpu" | tee -a "$SUM"
TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" | tee -a "$SUM"
if [ $(left) -gt 200 ]; then
    env M40_BENCH_GLM_NO_CHAIN=1 timeout $(($(left) - 100)) .s39/m40-bench chatglm2 --warmup 1 --repeats 7 \
        --sizes 128,1024,8192 > "$O/glm.txt" 2>&1
    note "table rc=$?"
    grep -E 'tokens/s|device copy|copy ' "$O/glm.txt" | sed -E 's/ +/ /g; s/M40 projection.*//' >> "$SUM"
    timeout $(($(left) - 5)) python3 bench/bench_torch.py chatglm2 --warmup 3 --repeats 20 \
        --sizes-chatglm2 128,1024,8192 > "$O/torch.txt" 2>&1
    note "torch rc=$?"
    grep -E 'tokens/s' "$O/torch.txt" >> "$SUM"
fi
carry_end
