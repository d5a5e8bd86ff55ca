#!/usr/bin/env bash
# Tenth session, a last short call (arch 90): the attention tests after the
# turn_pairs4 refactor (the fused tile and rope_kv_vec_kernel share it).
#   OUT=DIR scripts/h200-session10e.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session10e 230 "$@"
build_arch90 test_attention_gpu test_transformer_ops_gpu
TEST_TIMEOUT=$(($(left) - 5)) gpu_tests "test_attention_gpu" | tee -a "$SUM"
echo "=== SUMMARY"; cat "$SUM"
