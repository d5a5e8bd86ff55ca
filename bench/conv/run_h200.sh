#!/usr/bin/env bash
# Conv kernels on the GPU machine in one call: build, the conv/SGEMM/graph/
# ResNet GPU tests, compute-sanitizer on the conv test, ResNet-50's convs one
# by one (m40-bench conv: m40_conv2d NHWC vs a GEMM of the same FLOPs) and
# PyTorch's cuDNN on the same convs, then whole-network images/s.
#   bench/conv/run_h200.sh [BUILD_DIR]     (outputs under $OUT, default /tmp)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
O=${OUT:-/tmp}
SIZES=${SIZES:-32,64}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=${ARCH:-90} -DM40_CUDA=ON -DM40_WERROR=ON \
    > "$O/configure.log" 2>&1 || { tail -20 "$O/configure.log"; exit 1; }
ninja -C "$B" > "$O/build.log" 2>&1 || { grep -B2 -A8 error "$O/build.log" | head -60; exit 1; }
ctest --test-dir "$B" -R "conv|sgemm|graph|resnet" --output-on-failure 2>&1 | tail -15
compute-sanitizer --error-exitcode 1 "$B/test_conv" --gpu 2>&1 | tail -3
"$B/m40-bench" conv --sizes "$SIZES" --layout nhwc --json="$O/conv.json" > "$O/conv.txt" 2>&1
python3 bench/bench_torch.py conv --sizes-conv "$SIZES" --json "$O/conv_torch.json" > "$O/conv_torch.txt" 2>&1
python3 bench/compare.py "$O/conv.json" "$O/conv_torch.json" --out "$O" 2>&1 | grep -v "^$" | head -70
# whole network, both sides, all batch sizes, plus the 256-image logits check
[ "${RESNET:-1}" = 1 ] && OUT=$O bench/resnet50/run_h200.sh "$B"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
