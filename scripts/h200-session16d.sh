#!/usr/bin/env bash
# Sixteenth session, call 4: the fused SwiGLU's rows past N (a v2 grid's
# last block) store nothing: test_quant_gpu's glu section (every GEMV
# variant, 64 poisoned floats past y), test_qlinear_fused --gpu,
# test_chatglm2 --gpu; then the int4 step (ctx 128) if time is left.
#   OUT=DIR scripts/h200-session16d.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session16d 300 "$@"
build_arch90 test_quant_gpu test_qlinear_fused test_chatglm2 m40-bench
TEST_TIMEOUT=90 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
grep -E "^glu:|FAIL" "$O/test_quant_gpu.log" | head -8 >> "$SUM"
[ $(left) -gt 45 ] && GLM_TIMEOUT=40 glm_run int4 "" int4 128
for f in "$O"/test_*.log; do tail -30 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
