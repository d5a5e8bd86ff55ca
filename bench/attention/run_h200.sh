#!/usr/bin/env bash
# Issue 16's attention trail on the GPU machine in one call: build (arch 90
# by default; ARCH=52 for the Maxwell code through the driver's PTX JIT),
# the versions' check + timing table (m40-attn-versions), compute-sanitizer
# memcheck over the check (SANITIZE=0 skips it), m40-bench attention, and
# PyTorch's SDPA at the same shapes (TORCH=0 skips it; needs torch). Logs and
# JSON go to $OUT (or the build dir); a summary prints last.
#   bench/attention/run_h200.sh [source-dir] [build-dir]
set -uo pipefail
SRC=${1:-.}
BUILD=${2:-/tmp/build-attn-gpu}
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
       cmake --build "$BUILD" -j"$(nproc)" --target m40-attn-versions m40-bench; } \
       > "$LOGDIR/build.log" 2>&1; then
    tail -40 "$LOGDIR/build.log"; echo "BUILD FAILED"; exit 1
fi
echo "build: $((SECONDS - t0)) s"
grep -m1 "m40_attention is not in lib" "$LOGDIR/build.log"
t1=$SECONDS
timeout 400 "$BUILD/m40-attn-versions" ${VERSIONS_ARGS:-} > "$LOGDIR/versions.log" 2>&1
ver_rc=$?
echo "m40-attn-versions: rc $ver_rc, $((SECONDS - t1)) s, $(grep 'checks,' "$LOGDIR/versions.log")"
san_rc=0
if [ "${SANITIZE:-1}" = 1 ]; then
    timeout 300 "$SAN" --tool memcheck --error-exitcode 3 "$BUILD/m40-attn-versions" --check \
        > "$LOGDIR/memcheck.log" 2>&1
    san_rc=$?
    echo "memcheck m40-attn-versions --check: rc $san_rc"; grep -m3 -E "ERROR SUMMARY|Invalid" "$LOGDIR/memcheck.log"
fi
t2=$SECONDS
# M40_ATTN_AB=1 (default here): each prefill T also on both prefill kernels (docs/attention.md)
M40_ATTN_AB=${M40_ATTN_AB:-1} timeout 300 "$BUILD/m40-bench" attention \
    --json="$LOGDIR/m40-bench-attention.json" > "$LOGDIR/bench.log" 2>&1
bench_rc=$?
echo "m40-bench attention: rc $bench_rc, $((SECONDS - t2)) s"
torch_rc=skipped
if [ "${TORCH:-1}" = 1 ] && python3 -c "import torch" 2>/dev/null; then
    timeout 300 python3 "$SRC/bench/bench_torch.py" attention --json "$LOGDIR/torch-attention.json" \
        > "$LOGDIR/torch.log" 2>&1
    torch_rc=$?
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$LOGDIR/gpu.txt" 2>&1
echo "==== versions ===="; cat "$LOGDIR/versions.log"
echo "==== m40-bench attention ===="; cat "$LOGDIR/bench.log"
[ -f "$LOGDIR/torch.log" ] && { echo "==== torch ===="; cat "$LOGDIR/torch.log"; }
echo "==== summary: versions rc $ver_rc, memcheck rc $san_rc, bench rc $bench_rc, torch rc $torch_rc ===="
[ $ver_rc -eq 0 ] && [ $san_rc -eq 0 ] && [ $bench_rc -eq 0 ]
