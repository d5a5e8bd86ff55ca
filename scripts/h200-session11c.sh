#!/usr/bin/env bash
# Eleventh session, call 3 (arch 90): the GEMV tests after the review's
# tidy of the batch-1 v2 forms (load_w shared, validation up front).
#   OUT=DIR scripts/h200-session11c.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session11c 300 "$@"
build_arch90 test_quant_gpu test_qlinear_fused
TEST_TIMEOUT=150 gpu_tests "test_qlinear_fused --gpu" "test_quant_gpu" | tee -a "$SUM" >/dev/null
echo "=== SUMMARY"; cat "$SUM"
