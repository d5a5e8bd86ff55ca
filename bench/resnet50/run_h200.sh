#!/usr/bin/env bash
# ResNet-50 on the GPU machine: our logits vs PyTorch FP32 on seeded random
# torchvision weights, then images/s of ours (CUDA graph replay) and of
# PyTorch eager (TF32 off, cudnn.benchmark) at a few batch sizes.
#   bench/resnet50/run_h200.sh BUILD_DIR     (after scripts/gpu-check.sh BUILD_DIR)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
O=${OUT:-/tmp}
T=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
python3 examples/resnet50/export_torchvision.py --random --seed 0 "$T/rn50.safetensors"
python3 bench/resnet50/torch_resnet50.py --weights "$T/rn50.safetensors" --batch 16 \
    --save-input "$T/in.safetensors" --save-logits "$T/ref.bin"
"$B/resnet50" --weights "$T/rn50.safetensors" --input-tensor "$T/in.safetensors" --save-logits "$T/ours.bin"
python3 bench/resnet50/compare_logits.py "$T/ours.bin" "$T/ref.bin"
for b in 1 8 64; do
    "$B/resnet50" --random-weights --batch $b --bench $([ $b -ge 64 ] && echo 5 || echo 20) | grep bench:
done
python3 bench/resnet50/torch_resnet50.py --bench 1,8,64
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
rm -rf "$T"
