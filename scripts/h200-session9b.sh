#!/usr/bin/env bash
# Ninth session, call 2 (arch 90): the GPU tests of call 1's kernels (decode
# attention variant 7 now the default, RoPE over several blocks a row), then
# Nsight Compute's warp-state, scheduler and memory sections over the four
# GEMVs of one int4 ChatGLM2-6B decode layer (qkv with the fused norm, dense,
# dense_h_to_4h, dense_4h_to_h): where a small GEMV's time goes.
#   OUT=DIR scripts/h200-session9b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session9b 500 "$@"
build_arch90 m40-bench test_attention_gpu test_transformer_ops_gpu
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
    timeout 240 "$NCU" --profile-from-start off --clock-control none --cache-control none \
    --kernel-name regex:gemv --launch-count 4 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis \
    "$B/m40-bench" chatglm2 --warmup 1 --repeats 1 --sizes 128 > "$O/ncu-gemv.txt" 2> "$O/ncu-gemv.err"
note "ncu rc=$?"
grep -E "gemv|Duration|Elapsed Cycles|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Block Limit|Waves Per SM|Grid Size|stalled|scoreboard|barrier|Mem Busy|L2 Hit|L1/TEX Hit" \
    "$O/ncu-gemv.txt" | sed -E 's/ +/ /g' | cut -c1-240 > "$O/ncu-brief.txt"
TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_transformer_ops_gpu" | tee -a "$SUM"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== NCU"; cat "$O/ncu-brief.txt"
echo "=== SUMMARY"; cat "$SUM"
