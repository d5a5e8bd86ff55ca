#!/usr/bin/env bash
# Session 27, first call: (1) m40-l2-prefetch, the question whether the
# decode step's idle DRAM time (the attention at ctx 128) can fetch the next
# GEMVs' weights into L2 (bench/quant/prefetch_overlap.cu); (2) the sm_52
# build through PTX JIT of session 26's VT staging and of the decode split
# cap (test_quant_gpu, test_qlinear_fused, test_attention_gpu; owed since
# session 26); (3) test_attention_gpu on arch 90; (4) the prefetch bench again
# and one int4 decode run for the step's absolute time.
# Carry [".carry/s27.tar.xz", ".carry/jit52.tar.xz"]: .s27/ (arch 90, CUDA 13:
# m40-l2-prefetch, test_attention_gpu, m40-bench) and .jit52/ (CUDA 11.8 sm_52).
#   OUT=DIR BUDGET=240 scripts/h200-session27.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session27 240 .s27
carry_start .carry/s27.tar.xz
pf() {
    timeout 60 "$B/m40-l2-prefetch" > "$O/prefetch$1.txt" 2>&1
    note "prefetch$1 rc=$?"
    cat "$O/prefetch$1.txt" >> "$SUM"
}
pf 1
jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_attention_gpu"
M40_ATTN_QUICK=1 TEST_TIMEOUT=90 gpu_tests "test_attention_gpu" | tee -a "$SUM"
[ "$(left)" -gt 40 ] && pf 2
GLM_TIMEOUT=45
[ "$(left)" -gt 50 ] && glm_run base "" int4 128
carry_end
