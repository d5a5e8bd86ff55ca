#!/usr/bin/env bash
# The first device call after session 22 (whose group-scale change never ran
# on a GPU: session 22 had no device time, session 23 none lent). Builds on
# the device, no binaries carried: carry [".debs", ".carry"] with
# .carry/old-src.tar.xz, the source of the tree before the change:
#   mkdir -p .carry && git archive 781a2d2 | xz -T2 > .carry/old-src.tar.xz   (~2 MB)
# and, optionally, .carry/jit52.tar.xz (scripts/jit52-check.sh build, then
#   tar cf - .jit52/test_quant_gpu .jit52/test_qlinear_fused | xz > .carry/jit52.tar.xz)
# for the sm_52 build through PTX JIT.
#  1. build this tree (m40-bench, test_quant_gpu, test_qlinear_fused,
#     test_chatglm2) and the old tree's m40-bench, side by side, arch 90;
#  2. correctness: test_quant_gpu (quick: odd shapes, every variant and
#     format, f16 and f32 group scales), test_qlinear_fused --gpu,
#     test_chatglm2 --gpu; test_gpu_limits (new: the 32-bit limits of the
#     kernel audit, 6.5 GB), test_sgemm and test_conv --gpu (the skinny
#     kernel's 64-bit k, the conv run check); the sm_52 JIT tests where carried;
#  3. m40-gemv-pattern, twice: the int4 GEMV's address pattern read with no
#     arithmetic against the plain read and the GEMV itself (is the pattern
#     what holds the GEMVs at ~0.5 of the copy rate? bench/NOTES.md
#     "Session 23");
#  4. ChatGLM2-6B int4g128 and int4 decode at ctx 128, old / new, twice
#     (prediction, bench/NOTES.md "Session 22": int4g128 a few % faster,
#     int4 unchanged).
#   OUT=DIR scripts/h200-session23.sh [BUILD_DIR]
# OLD=0: no old tree (a short lease: this tree's tests, the pattern once,
# its int4g128 / int4 decode once, against earlier sessions' figures).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session23 480 "$@"
NEW=$B
OLD=${OLD:-1}
setup_arch90
if [ "$OLD" != 0 ]; then
mkdir -p .old && tar xJf .carry/old-src.tar.xz -C .old || { note "no .carry/old-src.tar.xz"; exit 1; }
(cd .old && O="$O/old" && mkdir -p "$O" &&
    cmake -S . -B build-90 -G Ninja -DCMAKE_CUDA_COMPILER="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$O/configure.log" 2>&1 &&
    cmake --build build-90 -j8 --target m40-bench > "$O/build.log" 2>&1) &
oldpid=$!
fi
cmake --build "$B" -j"$(nproc)" --target m40-bench test_quant_gpu test_qlinear_fused test_chatglm2 \
    m40-gemv-pattern test_gpu_limits test_sgemm test_conv > "$O/build.log" 2>&1
note "built new rc=$? $(grep -cE ' error' "$O/build.log") errors"
[ "$OLD" = 0 ] || { wait $oldpid; note "built old rc=$?"; }
M40_QUANT_QUICK=1 TEST_TIMEOUT=90 gpu_tests "test_quant_gpu" | tee -a "$SUM"
M40_SGEMM_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_gpu_limits" \
    "test_sgemm" "test_conv --gpu" | tee -a "$SUM"
[ -f .carry/jit52.tar.xz ] && jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu"
for i in $(seq 1 $((OLD == 0 ? 1 : 2))); do
    timeout 60 "$B/m40-gemv-pattern" > "$O/pattern$i.txt" 2>&1
    note "pattern $i rc=$?"
    cat "$O/pattern$i.txt" >> "$SUM"
done
GLM_TIMEOUT=60
for i in 1 2; do
    [ "$(left)" -gt 60 ] || break
    [ "$OLD" = 0 ] || B=.old/build-90 glm_run "old$i" "" int4g128,int4 128
    B=$NEW glm_run "new$i" "" int4g128,int4 128
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log "$O"/old/*.log
echo "=== SUMMARY"; cat "$SUM"
