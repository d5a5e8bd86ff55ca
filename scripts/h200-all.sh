#!/usr/bin/env bash
# Everything a session verifies and measures on the GPU machine, in one call
# (device time is scarce), most important first:
#   1. scripts/gpu-check.sh: build (arch 90, -Werror), every test (gpu ones
#      must run), compute-sanitizer on test_gpu_ops, m40-demo
#   2. compute-sanitizer on the conv-algorithm test
#   3. bench/resnet50/run_h200.sh: 256-image logits check + images/s table
#   4. scripts/jit52-check.sh run: the sm_52 binaries through PTX JIT (carry .jit52)
#   5. m40-bench-quant --gemv, then --prefill --quick
#   6. conv_algo_bench (implicit GEMM vs Winograd per 3x3 layer)
#   OUT=DIR scripts/h200-all.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
O=${OUT:-/tmp/h200-all}
mkdir -p "$O"
t0=$SECONDS
stamp() { echo "==== [$((SECONDS - t0)) s] $*"; }
stamp "1. gpu-check"
OUT=$O scripts/gpu-check.sh "$B" 2>&1 | tail -14
[ -x "$B/resnet50" ] || { stamp "no build: stop"; exit 1; }
stamp "2. memcheck test_conv_algo"
compute-sanitizer --error-exitcode 1 "$B/test_conv_algo" 2>&1 | tail -2
stamp "3. ResNet-50"
OUT=$O/resnet50 timeout 200 bench/resnet50/run_h200.sh "$B" > "$O/resnet50.log" 2>&1
echo "rc=$?"; grep -E "^check:|top-5 identical|worst" "$O/resnet50.log"; sed -n '/^| batch/,/^$/p' "$O/resnet50.log"
if [ -d .jit52 ]; then stamp "4. jit52"; timeout 150 scripts/jit52-check.sh run 2>&1 | tail -14; fi
stamp "5. quant bench"
timeout 120 "$B/m40-bench-quant" --gemv > "$O/quant_gemv.log" 2>&1; echo "gemv rc=$?"
grep -E "^(4608|4096|27392|65024)x" "$O/quant_gemv.log" | awk '$3==1 || $3==8' | cut -c1-75
grep -A6 PROJECTION "$O/quant_gemv.log"
timeout 90 "$B/m40-bench-quant" --prefill --quick > "$O/quant_prefill.log" 2>&1; echo "prefill rc=$?"
tail -5 "$O/quant_prefill.log"
stamp "6. conv algorithms"
timeout 60 "$B/conv_algo_bench" --repeats 10 > "$O/conv_algo.log" 2>&1; cat "$O/conv_algo.log"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
