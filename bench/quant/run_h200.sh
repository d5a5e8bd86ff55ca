#!/usr/bin/env bash
# Issue 6 on the GPU machine in one call: build (CUDA 12/13, arch 90 by
# default), run the quantization tests (the GPU one must run, not skip), then
# the bench. Logs go to $OUT (or the build dir); a summary prints last.
#   bench/quant/run_h200.sh [source-dir] [build-dir]
set -uo pipefail
SRC=${1:-.}
BUILD=${2:-/tmp/build-quant-gpu}
ARCH=${ARCH:-90}
LOGDIR=${OUT:-$BUILD}
mkdir -p "$BUILD" "$LOGDIR"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv 2>&1 | tee "$LOGDIR/gpu.txt"
t0=$SECONDS
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if ! { cmake -S "$SRC" -B "$BUILD" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" \
         -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DM40_CUDA=ON -DM40_WERROR=ON -DM40_PTXAS_VERBOSE=ON &&
       cmake --build "$BUILD" -j"$(nproc)" --target test_quant_cpu test_quant_gpu m40-bench-quant; } \
       > "$LOGDIR/build.log" 2>&1; then
    tail -40 "$LOGDIR/build.log"; echo "BUILD FAILED"; exit 1
fi
echo "build: $((SECONDS - t0)) s"
( cd "$SRC" && "$BUILD/test_quant_cpu" tests/quant/quant.golden ) > "$LOGDIR/test_quant_cpu.log" 2>&1
cpu_rc=$?
t1=$SECONDS
( cd "$SRC" && "$BUILD/test_quant_gpu" ) > "$LOGDIR/test_quant_gpu.log" 2>&1
gpu_rc=$?
echo "test_quant_gpu: rc $gpu_rc, $((SECONDS - t1)) s"
t2=$SECONDS
"$BUILD/m40-bench-quant" ${BENCH_ARGS:-} > "$LOGDIR/bench.log" 2>&1
bench_rc=$?
echo "bench: rc $bench_rc, $((SECONDS - t2)) s"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$LOGDIR/gpu.txt" 2>&1
echo "==== FAIL lines (first 25) ===="
grep -hE "^FAIL|CHECK failed|returned|error" "$LOGDIR/test_quant_cpu.log" "$LOGDIR/test_quant_gpu.log" | head -25
grep -hE "checks," "$LOGDIR/test_quant_cpu.log" "$LOGDIR/test_quant_gpu.log"
echo "ok comparisons: $(grep -c '^ok ' "$LOGDIR/test_quant_gpu.log")"
echo "==== bench ===="
cat "$LOGDIR/bench.log"
echo "==== summary: cpu test rc $cpu_rc, gpu test rc $gpu_rc, bench rc $bench_rc ===="
[ $cpu_rc -eq 0 ] && [ $gpu_rc -eq 0 ] && [ $bench_rc -eq 0 ]
