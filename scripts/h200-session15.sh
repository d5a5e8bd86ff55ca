#!/usr/bin/env bash
# Fifteenth session, call 1: sampling variant 3 (the grid passes,
# kernels/sample_grid.cuh) checked and timed against variants 1 and 0, and
# why the combine inside the decode tile kernel is slower (session 14's
# pending ncu).
#  1. test_sample_gpu (every check on variants 3, auto, 1, 0; 3 and 1 vs 0
#     bit for bit) and test_chatglm2 --gpu (greedy ids through the step);
#  2. M40_SAMPLE_AB=1 m40-bench sample --sizes 1,8 (per call and in a graph);
#  3. ncu: variant 3's kernels over the first calls (durations);
#  4. ncu over one int4 decode step's attention kernels (ctx 128 and 1024),
#     the combine inside (1) and launched (0).
#   OUT=DIR scripts/h200-session15.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session15 480 "$@"
build_arch90 m40-bench test_sample_gpu test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_sample_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
M40_SAMPLE_AB=1 timeout 150 "$B/m40-bench" sample --sizes 1,8 > "$O/sample.txt" 2>&1
note "sample AB rc=$?"
grep -E "^sample|us per call" "$O/sample.txt" | grep -v "device copy" | sed -E 's/ +/ /g; s/ target.*//; s/median.*//' | paste - - | cut -c1-160 >> "$SUM"
timeout 60 ncu --kernel-name regex:"grid_|sample_post" --launch-count 40 --metrics gpu__time_duration.sum \
    "$B/m40-bench" sample --sizes 1 --warmup 1 --repeats 1 --graph-calls 0 > "$O/ncu-sample.txt" 2>&1
note "ncu sample rc=$?"
grep -E "grid_|sample_post|gpu__time_duration" "$O/ncu-sample.txt" | sed -E 's/ +/ /g' | cut -c1-100 | paste - - >> "$SUM"
for ctx in 128 1024; do
for f in 1 0; do
    [ $(left) -gt 60 ] || break
    M40_BENCH_GLM_FUSE_COMBINE=$f M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        M40_BENCH_GLM_NO_CHAIN=1 timeout 50 ncu --profile-from-start off --clock-control none \
        --kernel-name regex:attn_ --launch-count 3 --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section SchedulerStats --section WarpStateStats \
        "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes $ctx \
        > "$O/ncu-attn-c$ctx-f$f.txt" 2> "$O/ncu-attn-c$ctx-f$f.err"
    note "ncu attn ctx $ctx fuse $f rc=$?"
    grep -E "attn_|Duration|Registers|Stack|Issued Warp|Achieved Occ|Warp Cycles Per Issued|Stall" \
        "$O/ncu-attn-c$ctx-f$f.txt" | sed -E 's/ +/ /g' | cut -c1-120 >> "$SUM"
done
done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
