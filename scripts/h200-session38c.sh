#!/usr/bin/env bash
# Session 38, third call: what the decode GEMVs wait on, read by ncu rather
# than guessed (the ring of session 38 showed that 4h_to_h is not held by its
# bytes in flight):
#  0. on an H200 (with .carry/s34.tar.xz carried too): the floor chain first
#     (owed since session 33);
#  1. int4 decode at ctx 128: the default / x double-buffered in the passes
#     GEMV (M40_BENCH_GLM_PASSDB=1: one barrier a pass, in that binary; since
#     session 39 the ring double-buffers by default and 1 means never), ROUNDS
#     times (2);
#  2. ncu's warp-state, scheduler and occupancy sections over the GEMVs of
#     one int4 step and one int8 step (the first two layers: qkv, dense,
#     h_to_4h, 4h_to_h; M40_BENCH_GLM_PROFILE=1, --profile-from-start off,
#     real clocks, caches as the step left them) with every stall reason a
#     issued instruction (session 13's metrics), CSV in $OUT;
#  3. with the time left (BUDGET=480 for all): the branch's test_qlinear_fused
#     --gpu, arch 90, then its sm_52 build through PTX JIT.
# Carry [".carry/s38c.tar.xz"] (.s38: arch-90 m40-bench and test_qlinear_fused
# of wip/s38-pass-db; .jit52b: its CUDA 11.8 sm_52 test_qlinear_fused), and
# [".carry/s34.tar.xz"].
#   OUT=DIR BUDGET=240 scripts/h200-session38c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session38c 240 .s38
carry_start .carry/s38c.tar.xz
floor_first
# x double-buffered in int4's passes (M40_BENCH_GLM_PASSDB=1; branch
# wip/s38-pass-db) against the default, ctx 128
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $(left) -gt 60 ] || break
    glm_ab def-$i .s38 int4 128 40
    M40_BENCH_GLM_PASSDB=1 glm_ab db-$i .s38 int4 128 40
done
for f in int4 int8; do
    [ $(left) -gt 40 ] || break
    env M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_NO_CHAIN=1 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        timeout $(($(left) - 20)) ncu --profile-from-start off --graph-profiling node --clock-control none \
        --cache-control none --kernel-name regex:'gemv' --launch-count 8 --section WarpStateStats \
        --section SchedulerStats --section Occupancy --section LaunchStats --section SpeedOfLight \
        --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
        --csv --page details .s38/m40-bench chatglm2 --warmup 1 \
        --repeats 2 --sizes 128 2> "$O/ncu-stall-$f.err" | xz > "$O/ncu-stall-$f.csv.xz"
    note "ncu stalls $f rc=$? $(xzcat "$O/ncu-stall-$f.csv.xz" | wc -l) lines"
done
# the branch's tests with what is left: arch 90, then the sm_52 build through
# PTX JIT (its test_qlinear_fused needs ~120 s there)
[ $(left) -gt 100 ] && TEST_TIMEOUT=$(($(left) - 10)) gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
T=$(($(left) - 10))
[ $T -gt 130 ] && rm -rf .jit52 && mv .jit52b .jit52 && JIT_TIMEOUT=$T jit52_tests "test_qlinear_fused --gpu"
carry_end
