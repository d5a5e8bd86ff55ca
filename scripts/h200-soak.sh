#!/usr/bin/env bash
# Long runs on the GPU machine (issue 15): builds m40-soak for the GPU's
# architecture and runs 1,000 ResNet-50 batches (batch 32, 224x224, seeded
# random weights, CUDA graph replay), sampling device memory (cudaMemGetInfo
# and NVML), host RSS and open descriptors every 10 batches. Writes the curve
# to $OUT/soak_resnet50.csv and prints it with the verdict
# "flat within 1 MB after warm-up: yes/no"; exits 0 only when flat.
# Fits a 10-minute device call with the build.
#   OUT=DIR scripts/h200-soak.sh [ARCH] [BUILD_DIR]        (ARCH default 90)
# Environment: BATCHES=1000 BATCH=32 EVERY=10 WARMUP=50, EXTRA="--nchw" etc.
# (The transformer's 10,000 decode steps join here when it lands.)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
T0=$SECONDS
ARCH=${1:-${ARCH:-90}}
BUILD=${2:-build-gpu}
O=${OUT:-/tmp/h200-soak}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$O" "$BUILD"
stamp() { echo "==== [$((SECONDS - T0)) s] $*"; }
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
stamp "configure + build m40-soak (arch $ARCH)"
if ! cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DM40_CUDA=ON > "$O/soak-build.log" 2>&1 ||
   ! cmake --build "$BUILD" -j"$(nproc)" --target m40-soak >> "$O/soak-build.log" 2>&1; then
    tail -30 "$O/soak-build.log"; echo "h200-soak: build failed"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv 2>&1
stamp "ResNet-50, ${BATCHES:-1000} batches of ${BATCH:-32}"
# shellcheck disable=SC2086
timeout 480 "$BUILD/m40-soak" --batches "${BATCHES:-1000}" --batch "${BATCH:-32}" \
    --every "${EVERY:-10}" --warmup "${WARMUP:-50}" --csv "$O/soak_resnet50.csv" ${EXTRA:-} \
    2>&1 | tee "$O/soak_resnet50.log"
rc=${PIPESTATUS[0]}
stamp "done: rc=$rc, curve in $O/soak_resnet50.csv ($(wc -l < "$O/soak_resnet50.csv" 2>/dev/null || echo 0) lines)"
exit "$rc"
