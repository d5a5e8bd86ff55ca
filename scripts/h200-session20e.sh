#!/usr/bin/env bash
# Session 20, call 5 (carry [".debs"]): a prefill key bound (the chunk's
# last position + 1 on ChatGLM2's prefill graphs capping the key shares;
# tried and dropped after the warm re-run, bench/NOTES.md session 20):
# test_attention_gpu (quick 2; the key-bound loop has a prefill node now),
# test_chatglm2 --gpu and test_chatglm2_tp --gpu (their prefill goes
# through glm_seq_prefill's bound), arch 90. Sized for ~6 device minutes.
#   OUT=DIR scripts/h200-session20e.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session20e 300 "$@"
build_arch90 test_attention_gpu test_chatglm2 test_chatglm2_tp
M40_ATTN_QUICK=2 TEST_TIMEOUT=120 gpu_tests "test_chatglm2 --gpu" "test_chatglm2_tp --gpu" "test_attention_gpu" | tee -a "$SUM" >/dev/null
for f in "$O"/test_*.log; do [ -f "$f" ] && tail -12 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
