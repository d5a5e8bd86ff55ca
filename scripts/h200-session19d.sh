#!/usr/bin/env bash
# Session 19, call 4 (carry [".debs"]): the review fixes (v6's rescale only
# when a row's max moved; attn_bound's conditions): test_attention_gpu
# (M40_ATTN_QUICK=2, the smallest set: every variant, 11 and 12 included)
# on the arch-90 build. Sized for the session's last ~5 device minutes.
#   OUT=DIR scripts/h200-session19d.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session19d 240 "$@"
build_arch90 test_attention_gpu
M40_ATTN_QUICK=2 TEST_TIMEOUT=100 gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
tail -3 "$O/test_attention_gpu.log" >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
