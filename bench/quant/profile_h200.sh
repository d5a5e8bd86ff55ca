#!/usr/bin/env bash
# Nsight Compute on the two GEMV cases issue 6 still misses (H200): int4 at
# batch 1 on 27392x4096 (v3, R = 2, D = 4, the default) and int8 at batch 8
# on 65024x4096 (split-K, R = 8, D = 1, the default since run 11): speed of light, occupancy, warp
# stall reasons, memory workload. One kernel launch each, after warm-up.
#   OUT=DIR bench/quant/profile_h200.sh [build-dir]
set -uo pipefail
B=${1:-/tmp/build-qprof}
O=${OUT:-$B}
mkdir -p "$B" "$O"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
{ cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON &&
  cmake --build "$B" --target m40-bench-quant; } > "$O/prof-build.log" 2>&1 || { tail -20 "$O/prof-build.log"; exit 1; }
sec=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
     --section SchedulerStats --section MemoryWorkloadAnalysis)
prof() { # name, kernel regex, shape index
    timeout 240 "$NCU" "${sec[@]}" --kernel-name-base demangled -k "regex:$2" --launch-skip 3 --launch-count 1 \
        --kill yes "$B/m40-bench-quant" --gemv --quick --shape "$3" > "$O/ncu-$1.txt" 2>&1
    echo "$1: rc $?"
    grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|No Eligible|Active Warps Per" "$O/ncu-$1.txt" | head -24
}
# ncu's demangled names read gemv_kernel<(int)65, (int)1, ..., (bool)0, ...>
prof int4-b1 "gemv_kernel<.int.65, .int.1, .int.2, .bool.0, .bool.0, .int.4>" 2
prof int8-b8 "gemv_kernel<.int.64, .int.8, .int.8, .bool.0, .bool.0, .int.1>" 4
