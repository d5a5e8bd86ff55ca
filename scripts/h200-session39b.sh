#!/usr/bin/env bash
# Session 39, second call: the sm_52 build of wip/s39 (CUDA 11.8) through the
# driver's PTX JIT, as an M40 would compile it: test_qlinear_fused --gpu (its
# passes sections double-buffered or not), then test_quant_gpu (quick 1),
# each with half the time left.
# Carry [".carry/s39.tar.xz"] (its .jit52c).
#   OUT=DIR BUDGET=420 scripts/h200-session39b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session39b 420 .s39
carry_start .carry/s39.tar.xz
rm -rf .jit52 && mv .jit52c .jit52 || exit 1
T=$(($(left) - 10))
JIT_TIMEOUT=$((T * 6 / 10)) jit52_tests "test_qlinear_fused --gpu"
JIT_TIMEOUT=$(($(left) - 5)) jit52_tests "test_quant_gpu"
carry_end
