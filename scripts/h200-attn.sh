#!/usr/bin/env bash
# Decode attention on the GPU machine in one short call: build the attention
# test and m40-bench (arch 90), run test_attention_gpu (every decode kernel),
# m40-bench attention with the A/B of the decode kernels (M40_ATTN_AB=1),
# then ncu (clock control off) on the default decode kernel and the combine
# at 8K and 32K. Logs in $OUT.
#   OUT=DIR scripts/h200-attn.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${1:-build-gpu}
O=${OUT:-/tmp/h200-attn}
mkdir -p "$O"
t0=$SECONDS
stamp() { echo "==== [$((SECONDS - t0)) s] $*"; }
export NVIDIA_TF32_OVERRIDE=0
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DM40_CUDA=ON -DM40_WERROR=ON -DCMAKE_BUILD_TYPE=Release > "$O/configure.log" 2>&1 || exit 1
cmake --build "$B" -j"$(nproc)" --target test_attention_gpu m40-bench ${EXTRA_TARGETS:-} > "$O/build.log" 2>&1 \
    || { grep -E "error" "$O/build.log" | head; exit 1; }
stamp built
timeout 120 "$B/test_attention_gpu" > "$O/test_attention_gpu.log" 2>&1
echo "test_attention_gpu rc=$? $(tail -1 "$O/test_attention_gpu.log")"
grep -E "FAIL" "$O/test_attention_gpu.log" | head -10
stamp "m40-bench attention (A/B)"
M40_ATTN_AB=1 timeout 150 "$B/m40-bench" attention --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
echo "rc=$?"; grep -E "^attention|target" "$O/m40-attention.txt" | cut -c1-175
if command -v ncu >/dev/null; then
    stamp "ncu decode"
    timeout 90 ncu --clock-control none -k regex:"attn_decode|attn_combine" --launch-count 8 \
        --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
        "$B/m40-bench" attention --warmup 1 --repeats 1 --sizes 8192,32768 > "$O/ncu-attn.txt" 2>&1
    grep -E "attn_|Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" \
        "$O/ncu-attn.txt" | sed 's/(<unnamed>::Params)//' | cut -c1-120 | head -60
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
