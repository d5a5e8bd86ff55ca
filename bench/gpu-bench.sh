#!/usr/bin/env bash
# One GPU call for issue 8: m40-doctor (text + JSON), m40-bench copy and gemm,
# the PyTorch side, and compare.py; everything lands in $OUT/results.tar.gz
# and the console log in $OUT/run.log.
#   bench/gpu-bench.sh [build-dir]     (a build with m40-doctor and m40-bench)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
O=${OUT:-/tmp/m40-bench-out}
R=$O/r
mkdir -p "$R"
exec > >(tee "$O/run.log") 2>&1
export PYTHONUNBUFFERED=1 NVIDIA_TF32_OVERRIDE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
    --format=csv | tee "$R/nvidia-smi.csv"
echo "==== m40-doctor"
"$B/m40-doctor" | tee "$R/doctor.txt"; echo "m40-doctor exit ${PIPESTATUS[0]}"
"$B/m40-doctor" --json > "$R/doctor.json"; echo "m40-doctor --json exit $?"
echo "==== m40-bench copy"
"$B/m40-bench" copy --json="$R/m40-copy.json" | tee "$R/m40-copy.txt"; echo "exit ${PIPESTATUS[0]}"
echo "==== m40-bench gemm"
"$B/m40-bench" gemm --json="$R/m40-gemm.json" | tee "$R/m40-gemm.txt"; echo "exit ${PIPESTATUS[0]}"
echo "==== m40-bench gemv"
"$B/m40-bench" gemv --json="$R/m40-gemv.json" | tee "$R/m40-gemv.txt"; echo "exit ${PIPESTATUS[0]}"
echo "==== m40-bench conv"
"$B/m40-bench" conv --json="$R/m40-conv.json" | tee "$R/m40-conv.txt"; echo "exit ${PIPESTATUS[0]}"
echo "==== m40-bench resnet50"
"$B/m40-bench" resnet50 --repeats 10 --json="$R/m40-resnet50.json" | tee "$R/m40-resnet50.txt"; echo "exit ${PIPESTATUS[0]}"
echo "==== PyTorch"
python3 bench/bench_torch.py copy,gemm,conv,resnet50 --json "$R/torch.json"; echo "exit $?"
echo "==== compare"
python3 bench/compare.py "$R/m40-copy.json" "$R/m40-gemm.json" "$R/m40-gemv.json" "$R/m40-conv.json" \
    "$R/m40-resnet50.json" "$R/torch.json" --out "$R"
tar czf "$O/results.tar.gz" -C "$O" r
