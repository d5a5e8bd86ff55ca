#!/usr/bin/env bash
# Session 32, one call: dense_4h_to_h (K 13696) with x staged in passes and
# the exponent-zero decode (m40k_quant_gemv_v2_pass 2, the branch's default)
# against v2's own decode in passes (1, the default since session 18):
#  1. int8,int4,int4g128 decode at ctx 128 and 1024: pass 1 / 2 / 1 / 2;
#  2. ncu over one step's GEMVs under each (time, warp instructions, issue);
#  3. test_quant_gpu (the new variant on every shape), test_qlinear_fused
#     --gpu (knob 0 / 1 / 2), test_chatglm2 --gpu and test_glm_parallel --gpu
#     (the model under the new default), arch 90;
#  4. the sm_52 build's test_quant_gpu (quick 1) and test_qlinear_fused
#     through PTX JIT, with the time left.
# Carry [".carry/s32b.tar.xz"]: .s32b (arch 90: m40-bench, test_quant_gpu,
# test_qlinear_fused, test_chatglm2, test_glm_parallel), .jit52 (CUDA 11.8
# sm_52: test_quant_gpu, test_qlinear_fused).
#   OUT=DIR BUDGET=540 scripts/h200-session32b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session32b 540 .s32b
carry_start .carry/s32b.tar.xz
GLM_TIMEOUT=60
for i in 1 2; do
    glm_run pass1-$i "M40_BENCH_GLM_V2PASS=1" int8,int4,int4g128 128,1024
    glm_run pass2-$i "M40_BENCH_GLM_V2PASS=2" int8,int4,int4g128 128,1024
done
if command -v ncu >/dev/null; then
    for p in 1 2; do
        for f in int4 int8; do
            M40_BENCH_GLM_V2PASS=$p M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
                M40_BENCH_GLM_NO_CHAIN=1 timeout 60 ncu --profile-from-start off --clock-control none \
                --cache-control none --kernel-name regex:gemv --launch-count 8 --csv --page raw --metrics \
                gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_active \
                "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-pass$p-$f.csv" 2> "$O/ncu-pass$p-$f.err"
            note "ncu pass $p $f rc=$?"
        done
    done
fi
TEST_TIMEOUT=120 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" | tee -a "$SUM"
TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" "test_glm_parallel --gpu" | tee -a "$SUM"
T=$(($(left) - 10))
if [ $T -gt 60 ]; then
    JIT_TIMEOUT=$((T / 2)) M40_QUANT_QUICK=1 jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu"
fi
carry_end
