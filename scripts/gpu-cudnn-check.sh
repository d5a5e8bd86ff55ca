#!/usr/bin/env bash
# GPU check of the conv engines (issue 5: ours / cuDNN / auto) on the H200
# test machine, in one command:
#   build (arch 90) against cuDNN: PyTorch's pip cuDNN when python3 has one
#   (site-packages/nvidia/cudnn, through M40_CUDNN_ROOT), else the system's;
#   the conv-engine tests; ResNet-50's per-conv autotune table at batch 64
#   and 1; end-to-end timings with each engine; logits of ours vs cuDNN.
# Usage: scripts/gpu-cudnn-check.sh [OUTDIR]   (the log: OUTDIR/cudnn-check.log)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-build-gpu-cudnn/out}}
mkdir -p "$out"
log=$out/cudnn-check.log
exec > >(tee "$log") 2>&1
b=build-gpu-cudnn
root=$(python3 -c "import nvidia.cudnn as m; print(list(m.__path__)[0])" 2>/dev/null)
hint=()
if [ -n "$root" ] && [ -f "$root/include/cudnn_version.h" ]; then
    hint=(-DM40_CUDNN_ROOT="$root")
    # cuDNN 9's libcudnn.so.9 loads its sub-libraries from the search path
    export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "cuDNN: PyTorch's pip cuDNN at $root"
else
    echo "cuDNN: no pip cuDNN; the system's, if any"
fi
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
t0=$SECONDS
cmake -S . -B "$b" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DM40_CUDA=ON "${hint[@]}" > "$b.configure.log" 2>&1 || { cat "$b.configure.log"; exit 1; }
grep -iE "cudnn|libm40 [0-9]" "$b.configure.log"
ninja -C "$b" test_conv_engine test_gpu_conv_engine test_graph_gpu resnet50 > "$b.build.log" 2>&1 ||
    { tail -40 "$b.build.log"; exit 1; }
echo "== built in $((SECONDS - t0)) s"
timeout 90 ctest --test-dir "$b" -R "conv_engine|test_graph_gpu" -V --timeout 80 2>&1 | grep -vE "^(UpdateCTestConfiguration|Parse|Constructing|Checking test|Test project|Add test|test [0-9]+$)"
rn=$b/resnet50
[ -x "$rn" ] || exit 1
for e in auto cudnn ours; do
    echo "== resnet50 batch 64 --conv $e"
    timeout $([ $e = auto ] && echo 60 || echo 30) "$rn" --random-weights --batch 64 --conv "$e" \
        --bench 20 --save-logits "$b/logits_b64_$e.bin"
done
echo "== resnet50 batch 1 --conv auto"
timeout 30 "$rn" --random-weights --batch 1 --conv auto --bench 50
python3 - "$b" <<'EOF'
import sys, numpy as np
b = sys.argv[1]
try:
    l = {e: np.fromfile(f"{b}/logits_b64_{e}.bin", dtype=np.float32) for e in ("ours", "cudnn", "auto")}
except OSError as err:
    sys.exit(f"logits missing: {err}")
ref = l["ours"].astype(np.float64)
for e in ("cudnn", "auto"):
    d = np.abs(l[e] - ref)
    print(f"logits b64 {e} vs ours: max |diff| {d.max():.3g}, max |diff| / max |logit| "
          f"{d.max() / np.abs(ref).max():.3g}, same top-1 {np.mean(l[e].reshape(64, -1).argmax(1) == ref.reshape(64, -1).argmax(1)):.3f}")
EOF
echo "== done in $((SECONDS - t0)) s"
