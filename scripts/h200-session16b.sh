#!/usr/bin/env bash
# Sixteenth session, call 2:
#  1. the sm_52 build (CUDA 11.8, carried as .carry/jit52.tar.xz) through
#     PTX JIT: test_qlinear_fused --gpu (glu), test_sample_gpu (variant 4),
#     test_chatglm2 --gpu, test_quant_gpu (quick), test_attention_gpu
#     (quick: the K-first 16-key tile);
#  2. (arch 90) test_sample_gpu with auto now variant 4;
#  3. ncu: one int4 decode step's first kernels (durations, ctx 128), glu on;
#  4. ncu: why the combine inside the decode tile kernel is slow (session
#     14-15): its SASS with PC-sampling stalls (SourceCounters), ctx 128.
#   OUT=DIR scripts/h200-session16b.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session16b 540 "$@"
jit52_tests "test_qlinear_fused --gpu" "test_sample_gpu" "test_chatglm2 --gpu" "test_quant_gpu" "test_attention_gpu"
B=build-gpu
build_arch90 m40-bench test_sample_gpu
TEST_TIMEOUT=90 gpu_tests "test_sample_gpu" | tee -a "$SUM" >/dev/null
M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
    timeout 60 ncu --profile-from-start off --launch-count 16 --metrics gpu__time_duration.sum \
    "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-step.txt" 2>&1
note "ncu step rc=$?"
grep -E "^  [a-zA-Z_<].*\(|gpu__time_duration" "$O/ncu-step.txt" | sed -E 's/ +/ /g' | cut -c1-90 | paste - - >> "$SUM"
M40_BENCH_GLM_FUSE_COMBINE=1 M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
    M40_BENCH_GLM_NO_CHAIN=1 timeout 90 ncu --profile-from-start off --kernel-name regex:attn_kernel \
    --launch-count 1 --section SourceCounters --section WarpStateStats --import-source no -o "$O/fused" \
    "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-fused.txt" 2>&1
note "ncu fused rc=$?"
timeout 60 ncu -i "$O/fused.ncu-rep" --page source --csv --print-source sass > "$O/fused-sass.csv" 2> "$O/fused-sass.err"
note "sass page rc=$? $(wc -l < "$O/fused-sass.csv") lines"
grep -iE "MEMBAR|FENCE|ERRBAR|CCTL" "$O/fused-sass.csv" | cut -c1-300 | head -12 >> "$SUM"
timeout 60 ncu -i "$O/fused.ncu-rep" --page details --print-details all > "$O/fused-details.txt" 2>&1
grep -E "Stall|Warp Cycles|Duration" "$O/fused-details.txt" | sed -E 's/ +/ /g' | head -30 >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.csv *.err *.ncu-rep 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
