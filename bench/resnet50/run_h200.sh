#!/usr/bin/env bash
# ResNet-50 on the GPU machine (issue 5), one call:
#  1. correctness: our logits vs PyTorch FP32 (TF32 off) on seeded random
#     torchvision weights, 256 random normal images in 4 batches of 64
#     (compare_logits.py: worst relative error < 1e-3, top-5 identical >= 99%)
#  2. the example itself at batch 128 (planner + workspace, --bench)
#  3. images/s ours vs PyTorch eager (TF32 off, cudnn.benchmark) at batch
#     1, 8, 32, 64, 128, same process, with efficiency, clocks, temperature
#     and the projected M40 images/s (bench_h200.py)
#   OUT=DIR bench/resnet50/run_h200.sh BUILD_DIR    (a CUDA build with resnet50 and m40-bench)
# Writes DIR/resnet50_h200.md (both tables), DIR/resnet50_bench.json, DIR/run.log.
# Exit 0 only if every step ran and the correctness check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
O=${OUT:-/tmp/resnet50-h200}
mkdir -p "$O"
exec > >(tee "$O/run.log") 2>&1
export PYTHONUNBUFFERED=1 NVIDIA_TF32_OVERRIDE=0
unset M40_MATMUL  # =cublas would put cuBLAS under "ours"; the targets are for our kernels alone
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rc=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used \
    --format=csv,noheader

echo "==== 1. logits, 256 images (4 x 64)"
python3 examples/resnet50/export_torchvision.py --random --seed 0 "$T/rn50.safetensors" || exit 1
python3 bench/resnet50/torch_resnet50.py --weights "$T/rn50.safetensors" --batch 64 --chunks 4 \
    --save-input "$T/in{k}.safetensors" --save-logits "$T/ref{k}.bin" || exit 1
for k in 0 1 2 3; do
    "$B/resnet50" --weights "$T/rn50.safetensors" --input-tensor "$T/in$k.safetensors" \
        --save-logits "$T/ours$k.bin" || { echo "resnet50 chunk $k failed"; exit 1; }
done
cat "$T"/ours{0,1,2,3}.bin > "$T/ours.bin"
cat "$T"/ref{0,1,2,3}.bin > "$T/ref.bin"
python3 bench/resnet50/compare_logits.py "$T/ours.bin" "$T/ref.bin" --tol 1e-3 --min-top5 0.99 \
    --md "$T/logits.md" || rc=1

echo "==== 2. the example at batch 128"
"$B/resnet50" --random-weights --batch 128 --bench 5 || rc=1

echo "==== 3. images/s, ours vs PyTorch"
python3 bench/resnet50/bench_h200.py --build "$B" --batches 1,8,32,64,128 --out "$O" --raw-dir "$T" || rc=1
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cat "$O/resnet50_bench.md" "$T/logits.md" > "$O/resnet50_h200.md" 2>/dev/null
echo "run_h200.sh: exit $rc (results in $O/resnet50_h200.md)"
exit $rc
