#!/usr/bin/env bash
# GPU verification in one command, for a machine with a GPU and CUDA 12/13
# (e.g. the H200 test machine): builds for the GPU's architecture (default
# 90; override with ARCH=...), runs every test (the `gpu` ones must pass, not
# skip), runs compute-sanitizer on the GPU op test when it is installed, and
# prints one summary.
#   scripts/gpu-check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
ARCH=${ARCH:-90}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
LOG=${OUT:-$BUILD}/gpu-check.log
mkdir -p "$BUILD" "$(dirname "$LOG")"
: > "$LOG"
summary=()
step() { # name, command...
    local name=$1; shift
    local t0=$SECONDS
    if "$@" >> "$LOG" 2>&1; then summary+=("PASS  $name ($((SECONDS - t0)) s)"); return 0
    else summary+=("FAIL  $name ($((SECONDS - t0)) s): see $LOG"); return 1; fi
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv 2>&1 | tee -a "$LOG"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
step "configure (CUDA arch $ARCH, $NVCC)" cmake -S . -B "$BUILD" "${gen[@]}" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DM40_CUDA=ON -DM40_WERROR=ON &&
step "build" cmake --build "$BUILD" -j"$(nproc)" &&
gpu_tests() { # every gpu-labelled test must pass; a skip is a failure here
    local out; out=$(ctest --test-dir "$BUILD" -L gpu --output-on-failure 2>&1); local rc=$?
    echo "$out"
    [ $rc -eq 0 ] && ! grep -q "Skipped" <<<"$out" && grep -q "tests passed" <<<"$out"
}
step "ctest -L gpu (must run, not skip)" gpu_tests
step "ctest (all tests)" ctest --test-dir "$BUILD" --output-on-failure
if command -v compute-sanitizer >/dev/null; then
    step "compute-sanitizer memcheck test_gpu_ops" compute-sanitizer --error-exitcode 1 "$BUILD/test_gpu_ops"
fi
step "m40-demo" "$BUILD/m40-demo"
"$BUILD/test_gpu_errors" 2>&1 | tee -a "$LOG" | tail -6
grep -E "^(ok|FAIL) |checks,|GPU |matmul|softmax \[|check:" "$LOG" | grep -v "^ok " | tail -30
grep -cE "^ok " "$LOG" | sed 's/^/comparisons ok: /'
grep -E "^FAIL " "$LOG" | head -20
echo "==== gpu-check summary ===="
printf '%s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q '^FAIL'
