#!/usr/bin/env bash
# Session 19, call 1 (carry [".debs", ".carry"]: .carry/jit52.tar.xz = the
# CUDA 11.8 sm_52 build of test_attention_gpu from this tree): decode v6
# (decode_variant 11: 8 rows a lane, 12: 4 rows a lane; a key's dims over 16
# lanes, no shared-memory operands).
#  1. test_attention_gpu (quick: every variant, 11 and 12 with them), arch 90
#     and the sm_52 build through PTX JIT;
#  2. m40-bench attention at 1K / 8K / 32K: the default against v6 (per call
#     and in a graph of 20), M40_ATTN_AB=1 limited to those rows.
#   OUT=DIR scripts/h200-session19.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session19 500 "$@"
build_arch90 m40-bench test_attention_gpu
(jit52_tests "test_attention_gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=240 gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
wait $JITPID
M40_ATTN_AB=1 M40_ATTN_AB_ONLY="v6|v5 a warp" timeout 200 "$B/m40-bench" attention --sizes 1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "m40_attention|device copy|target" "$O/attention.txt" | grep -v prefill | head -60 >> "$SUM"
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
echo "=== SUMMARY"; cat "$SUM"
