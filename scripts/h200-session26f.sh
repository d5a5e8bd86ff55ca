#!/usr/bin/env bash
# Session 26, last call: the sm_52 build (CUDA 11.8) of the VT staging
# through PTX JIT, the code an M40 runs (carry [".carry/jit52.tar.xz"]:
# build-jit52's test_quant_gpu and test_qlinear_fused, `scripts/jit52-check.sh
# build`'s recipe for those two targets).   OUT=DIR scripts/h200-session26f.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26f 200 .jit52
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader >> "$SUM"
jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu"
echo "=== SUMMARY"; cat "$SUM"
