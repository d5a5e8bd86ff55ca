#!/usr/bin/env bash
# Tenth session, the closing call: the sm_52 build of the session's new
# kernels through the driver's PTX JIT (the fused RoPE + attention tile, v2
# with x staged whole; carried as .carry/jit52.tar.xz, built by
# `scripts/jit52-check.sh build`), then the arch-90 m40-bench chatglm2 over
# the four formats (decode at ctx 128 and 8192, prefill 512, the read
# chain) -- scripts/h200-session9d.sh with SKIP_TORCH.
#   OUT=DIR scripts/h200-session10d.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session10d 560 "$@"
if [ -f .carry/jit52.tar.xz ]; then
    tar xJf .carry/jit52.tar.xz
    CUDA_MODULE_LOADING=LAZY timeout 250 scripts/jit52-check.sh run > "$O/jit52.txt" 2>&1
    note "jit52 rc=$?"
    grep -vE "not carried" "$O/jit52.txt" | head -12 >> "$SUM"
fi
OUT=$O/glm BUDGET=$(($(left) - 10)) SKIP_TORCH=1 scripts/h200-session9d.sh "$B" > "$O/glm.txt" 2>&1
note "glm rc=$?"
cat "$O/glm/summary.txt" >> "$SUM" 2>/dev/null
echo "=== SUMMARY"; cat "$SUM"
