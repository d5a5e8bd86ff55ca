#!/usr/bin/env bash
# Session 38, one call: dense_4h_to_h's weights in a ring of four chunks (the
# passes GEMV at depth 4: m40k_quant_gemv_v2_pass_depth, knob
# M40_BENCH_GLM_PASSDEPTH; kernels/quant_gemv_v2.cuh) against one chunk
# ahead (depth 1, main's kernels; the same binary):
#  0. on an H200 (with .carry/s34.tar.xz carried too): the floor chain first
#     (owed since session 33);
#  1. int4,int8,int4g128 decode at ctx 128 / 1024: depth 1 / depth 4,
#     ROUNDS times (default 3);
#  2. ncu over one int4 and one int8 step at each depth (the 4h_to_h
#     kernels' time, instructions and DRAM bytes), with 150 s left;
#  3. test_qlinear_fused --gpu (its passes section runs the ring) and
#     test_quant_gpu (quick 1: the ring's variants) on the new build, arch
#     90; then the sm_52 build's test_qlinear_fused --gpu and test_quant_gpu
#     through PTX JIT with the time left.
# Carry [".carry/s38.tar.xz"] (.s38: arch 90 m40-bench, test_qlinear_fused,
# test_quant_gpu; .jit52b: CUDA 11.8 sm_52 test_qlinear_fused,
# test_quant_gpu), and on an H200 [".carry/s34.tar.xz"] too.
#   OUT=DIR BUDGET=520 scripts/h200-session38.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session38 520 .s38
carry_start .carry/s38.tar.xz
floor_first
ab() { glm_ab "$1" .s38 "${FORMATS:-int4,int8,int4g128}" "${SIZES:-128,1024}" 90; }
for i in $(seq 1 ${ROUNDS:-3}); do
    [ $(left) -gt 200 ] || break
    M40_BENCH_GLM_PASSDEPTH=1 ab d1-$i
    M40_BENCH_GLM_PASSDEPTH=4 ab d4-$i
done
# the 4h_to_h kernels under ncu (one step each; --profile-from-start off)
if [ $(left) -gt 150 ]; then
    for f in int4 int8; do
        for d in 1 4; do
            env M40_BENCH_GLM_PASSDEPTH=$d M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_NO_CHAIN=1 M40_BENCH_GLM_PREFILL=0 \
                M40_BENCH_GLM_PROFILE=1 timeout 60 ncu --profile-from-start off --graph-profiling node \
                --kernel-name regex:'gemv_v2_kernel' --launch-count 120 --csv --metrics \
                gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum .s38/m40-bench chatglm2 \
                --warmup 1 --repeats 2 --sizes 128 2> "$O/ncu-$f-d$d.err" | xz > "$O/ncu-$f-d$d.csv.xz"
            note "ncu $f d$d rc=$?"
        done
    done
fi
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_quant_gpu" | tee -a "$SUM"
T=$(($(left) - 10))
if [ $T -gt 60 ]; then
    rm -rf .jit52 && mv .jit52b .jit52 &&
        JIT_TIMEOUT=$((T / 2)) jit52_tests "test_qlinear_fused --gpu" "test_quant_gpu"
fi
carry_end
