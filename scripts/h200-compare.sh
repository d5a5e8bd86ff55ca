#!/usr/bin/env bash
# Before/after speed check on the GPU machine, in one call: the same benches
# from two trees built for the same GPU, run interleaved (A, B, A, B) so both
# see the same clocks. Used to show a refactor kept the speed.
#   OUT=DIR scripts/h200-compare.sh BASE_TREE [BASE_BUILD] [BUILD]
# BASE_TREE: a copy of the older tree (e.g. `git archive <rev> | tar -x -C
# .base`, carried); its build goes to BASE_BUILD (default .base/build-gpu).
# BUILD (default build-gpu) is this tree's, built if missing.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BASE=${1:?usage: h200-compare.sh BASE_TREE [BASE_BUILD] [BUILD]}
BB=${2:-$BASE/build-gpu}
B=${3:-build-gpu}
O=${OUT:-/tmp/h200-compare}
ARCH=${ARCH:-90}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$O"
export NVIDIA_TF32_OVERRIDE=0
unset M40_MATMUL
T0=$SECONDS
stamp() { echo "==== [$((SECONDS - T0)) s] $*"; }
build() { # src dir
    cmake -S "$1" -B "$2" -G Ninja -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
        -DM40_CUDA=ON > "$2.configure.log" 2>&1 &&
    cmake --build "$2" -j"$(nproc)" --target m40-bench m40-bench-quant > "$2.build.log" 2>&1 ||
        { tail -20 "$2.build.log"; return 1; }
}
stamp "build (both trees, in parallel)"
mkdir -p "$BB" "$B"
build "$BASE" "$BB" & p1=$!
build . "$B" & p2=$!
wait $p1 || { echo "base build failed"; exit 1; }
wait $p2 || { echo "build failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
run() { # name, args...
    local name=$1; shift
    for side in base after; do
        local bin=$B; [ $side = base ] && bin=$BB
        "$bin/m40-bench" "$@" --json="$O/$name.$side.json" > "$O/$name.$side.txt" 2>&1
        echo "-- $name ($side): rc=$?"
        grep -E "^(gemm|conv|resnet50| +(m40_|cublas|vs|ours|NHWC|NCHW))" "$O/$name.$side.txt" | head -60
    done
}
stamp "gemm";     run gemm gemm --repeats 20
stamp "conv";     run conv conv --sizes 32 --layout nhwc --repeats 10
stamp "resnet50"; run resnet50 resnet50 --sizes 1,64 --layout nhwc --repeats 20
stamp "gemv (m40-bench-quant --gemv)"
for side in base after; do
    bin=$B; [ $side = base ] && bin=$BB
    timeout 150 "$bin/m40-bench-quant" --gemv > "$O/gemv.$side.txt" 2>&1; echo "-- gemv ($side): rc=$?"
    grep -E "^(4608|4096|27392|65024)x" "$O/gemv.$side.txt" | awk '$3==1 || $3==8' | cut -c1-90
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
