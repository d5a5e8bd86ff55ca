#!/usr/bin/env bash
# Session 39, third call: on an H200, the floor chain first (owed since
# session 33; this m40-bench has it); then the rule as landed (x double-buffered in passes for
# int4's ring and int8; m40k_quant_gemv_v2_pass_db 0) against never (1),
# int4 and int8 at ctx 128, ROUNDS times (2); then test_qlinear_fused --gpu
# (arch 90), whose main passes loop now runs int8 double-buffered; then, with
# 60 s left, ncu over the decode attention's kernels of one int4 step at ctx
# 128 and at 1K (each kernel's time, DRAM bytes and instructions): where the
# 1K step's extra 0.175 ms a token (H100, session 39: 6.2 us a layer, for
# ~1 MB of K and V a layer) goes, v6 or its combine.
# Carry [".carry/s39c.tar.xz"] (.s39: arch-90 m40-bench, test_qlinear_fused).
#   OUT=DIR BUDGET=330 scripts/h200-session39c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session39c 330 .s39
carry_start .carry/s39c.tar.xz
floor_on_h200 .s39
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $(left) -gt 180 ] || break
    M40_BENCH_GLM_PASSDB=0 glm_ab rule-$i .s39 int4,int8 128 50
    M40_BENCH_GLM_PASSDB=1 glm_ab never-$i .s39 int4,int8 128 50
done
TEST_TIMEOUT=$(($(left) - 70)) gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
if [ $(left) -gt 60 ]; then
    env M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_NO_CHAIN=1 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        timeout $(($(left) - 10)) ncu --profile-from-start off --graph-profiling node --kernel-name regex:attn \
        --launch-count 120 --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
        .s39/m40-bench chatglm2 --warmup 1 --repeats 2 --sizes 128,1024 2> "$O/ncu-attn.err" |
        xz > "$O/ncu-attn.csv.xz"
    note "ncu attention 128 / 1K rc=$?"
fi
carry_end
