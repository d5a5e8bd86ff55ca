#!/usr/bin/env bash
# Issue 6 on the GPU machine in one call: build (CUDA 12/13, arch 90 by
# default), run the quantization tests (the GPU one must run, not skip) and
# the numbered GEMV versions' check (m40-quant-versions), the
# bench (GEMV, then prefill in its own process), then compute-sanitizer
# memcheck over test_quant_gpu (odd shapes: M40_QUANT_QUICK=1; SANITIZE=0
# skips it; PREFILL=0 skips the prefill bench). Logs go to $OUT (or the build
# dir); a summary prints last.
#   bench/quant/run_h200.sh [source-dir] [build-dir]
# WERROR=OFF builds without -Werror (another part's work in progress).
set -uo pipefail
SRC=${1:-.}
BUILD=${2:-/tmp/build-quant-gpu}
ARCH=${ARCH:-90}
LOGDIR=${OUT:-$BUILD}
mkdir -p "$BUILD" "$LOGDIR"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SAN=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv 2>&1 | tee "$LOGDIR/gpu.txt"
t0=$SECONDS
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if ! { cmake -S "$SRC" -B "$BUILD" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" \
         -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DM40_CUDA=ON -DM40_WERROR="${WERROR:-ON}" -DM40_PTXAS_VERBOSE=ON &&
       cmake --build "$BUILD" -j"$(nproc)" --target test_quant_cpu test_quant_gpu m40-bench-quant m40-quant-versions; } \
       > "$LOGDIR/build.log" 2>&1; then
    tail -40 "$LOGDIR/build.log"; echo "BUILD FAILED"; exit 1
fi
echo "build: $((SECONDS - t0)) s"
( cd "$SRC" && "$BUILD/test_quant_cpu" tests/quant/quant.golden ) > "$LOGDIR/test_quant_cpu.log" 2>&1
cpu_rc=$?
t1=$SECONDS
( cd "$SRC" && timeout 240 "$BUILD/test_quant_gpu" ) > "$LOGDIR/test_quant_gpu.log" 2>&1
gpu_rc=$?
echo "test_quant_gpu: rc $gpu_rc, $((SECONDS - t1)) s"
# the teaching versions (bench/quant/gemv_versions.cu) against the same reference
timeout 240 "$BUILD/m40-quant-versions" > "$LOGDIR/versions.log" 2>&1
echo "m40-quant-versions: rc $?, $(tail -1 "$LOGDIR/versions.log")"
t2=$SECONDS
# GEMV and prefill in separate processes: a fault in one keeps the other
timeout 240 "$BUILD/m40-bench-quant" ${BENCH_ARGS:-} --gemv > "$LOGDIR/bench.log" 2>&1
bench_rc=$?
echo "bench --gemv: rc $bench_rc, $((SECONDS - t2)) s"
t2=$SECONDS
prefill_rc=0
[ "${PREFILL:-1}" = 1 ] && { timeout 200 "$BUILD/m40-bench-quant" ${BENCH_ARGS:-} --prefill > "$LOGDIR/prefill.log" 2>&1
                            prefill_rc=$?; }
echo "bench --prefill: rc $prefill_rc, $((SECONDS - t2)) s"
if [ $prefill_rc -ne 0 ]; then
    # which kernel faulted: memcheck over the first failing point, then the
    # table without our SGEMM column
    m=$(grep -oE "M=[0-9]+" "$LOGDIR/prefill.log" | tail -1 | cut -d= -f2)
    timeout 90 "$SAN" --tool memcheck --print-limit 5 "$BUILD/m40-bench-quant" --prefill --quick --shape 0         --m "${m:-256}" > "$LOGDIR/prefill_memcheck.log" 2>&1
    grep -m8 -E "Invalid|at 0x|by thread|ERROR SUMMARY|prefill" "$LOGDIR/prefill_memcheck.log"
    timeout 150 "$BUILD/m40-bench-quant" --prefill --no-ours >> "$LOGDIR/prefill.log" 2>&1
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$LOGDIR/gpu.txt" 2>&1
san_rc=0
if [ "${SANITIZE:-1}" = 1 ]; then
    t3=$SECONDS
    ( cd "$SRC" && M40_QUANT_QUICK=1 timeout "${SAN_TIMEOUT:-200}" "$SAN" --tool memcheck --error-exitcode 3 \
        "$BUILD/test_quant_gpu" ) > "$LOGDIR/memcheck.log" 2>&1
    san_rc=$?
    echo "memcheck (M40_QUANT_QUICK=1): rc $san_rc, $((SECONDS - t3)) s"; tail -3 "$LOGDIR/memcheck.log"
fi
echo "==== FAIL lines (first 25) ===="
grep -hE "^FAIL|CHECK failed|returned|error" "$LOGDIR/test_quant_cpu.log" "$LOGDIR/test_quant_gpu.log" | head -25
grep -hE "checks," "$LOGDIR/test_quant_cpu.log" "$LOGDIR/test_quant_gpu.log"
echo "ok comparisons: $(grep -c '^ok ' "$LOGDIR/test_quant_gpu.log")"
echo "==== bench ===="
cat "$LOGDIR/bench.log"
grep -v "^prefill " "$LOGDIR/prefill.log"
echo "==== summary: cpu test rc $cpu_rc, gpu test rc $gpu_rc, bench rc $bench_rc, prefill rc $prefill_rc," \
     "memcheck rc $san_rc ===="
[ $cpu_rc -eq 0 ] && [ $gpu_rc -eq 0 ] && [ $bench_rc -eq 0 ] && [ $prefill_rc -eq 0 ] && [ $san_rc -eq 0 ]
