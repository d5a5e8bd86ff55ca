#!/usr/bin/env bash
# Session 21, call 2 (carry [".debs"]): the chained GEMV prototype
# (bench/quant/boundary_cost.cu: NPH dependent GEMVs in one launch, blocks
# by ticket, weights asked for before the wait) against the same GEMVs as
# separate launches; GEMV v2's body as a __device__ function (the library's
# kernels unchanged in what they compute): its tests and the decode step.
#   OUT=DIR scripts/h200-session21b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session21b 420 "$@"
build_arch90 m40-gemv-boundary m40-bench test_quant_gpu test_qlinear_fused test_chatglm2
for i in 1 2; do
    timeout 60 "$B/m40-gemv-boundary" chain > "$O/boundary$i.txt" 2>&1
    note "boundary $i rc=$?"
    sed -n '/^chain/,$p' "$O/boundary$i.txt" >> "$SUM"
done
[ "${TESTS:-1}" = 1 ] && M40_QUANT_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
[ $(left) -gt 60 ] && glm_run step "" int4,int8 128
for f in "$O"/test_*.log; do [ -f "$f" ] && tail -20 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log "$O"/*.err
echo "=== SUMMARY"; cat "$SUM"
