#!/usr/bin/env bash
# Session 21, call 4 (carry [".debs", ".carry"]: the CUDA 11.8 sm_52 build of
# test_quant_gpu, test_qlinear_fused, test_attention_gpu in .carry/jit52.tar.xz):
#  1. m40-gemv-boundary chain: the chained launch at R 4 as well (half the
#     blocks a phase, so the next phase's blocks are resident and have their
#     weights in flight while this phase runs), twice;
#  2. the sm_52 build through PTX JIT: GEMV v2's body as a __device__
#     function, the attention clean-ups (quick modes).
#   OUT=DIR scripts/h200-session21c.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session21c 420 "$@"
build_arch90 m40-gemv-boundary
for i in 1 2; do
    timeout 60 "$B/m40-gemv-boundary" chain > "$O/boundary$i.txt" 2>&1
    note "boundary $i rc=$?"
    sed -n '/^chain/,$p' "$O/boundary$i.txt" >> "$SUM"
done
jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_attention_gpu"
for f in "$O"/jit52-*.log; do [ -f "$f" ] && tail -20 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log "$O"/*.err
echo "=== SUMMARY"; cat "$SUM"
