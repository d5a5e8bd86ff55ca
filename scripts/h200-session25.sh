#!/usr/bin/env bash
# Session 25: session 23's experiment (scripts/h200-session23.sh) on a short
# lease, no build on the device (carry [".carry"]; none of the programs links
# jansson or libmicrohttpd, so no .debs): .carry/s25.tar.xz
# holds arch-90 binaries built on the CPU machine with CUDA 13.0,
# -DM40_CUBLAS=OFF -DM40_CUDNN=OFF: .s25/new/ (this tree) m40-gemv-pattern,
# test_quant_gpu, test_gpu_limits, test_chatglm2, test_qlinear_fused,
# m40-bench; .s25/old/m40-bench (781a2d2, before session 22's group-scale
# template) where it was built. In order of what matters if the lease ends:
#  1. m40-gemv-pattern (bench/NOTES.md "Session 23": is the int4 GEMV's
#     address pattern, or its issue between loads, what holds it at ~0.5 of
#     the copy rate?);
#  2. correctness: test_quant_gpu (quick), test_gpu_limits (session 23's
#     64-bit limits), test_chatglm2 --gpu, test_qlinear_fused --gpu;
#  3. the sm_52 JIT tests where .carry/jit52.tar.xz is carried;
#  4. ChatGLM2-6B int4g128 / int4 decode at ctx 128, old / new (session 22's
#     prediction: int4g128 a few % faster, int4 unchanged), then the pattern
#     again.
# The carry (CUDA 13 at /usr/local/cuda):
#   PATH=/usr/local/cuda/bin:$PATH cmake -S . -B build-90 -G Ninja \
#     -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON \
#     -DM40_CUBLAS=OFF -DM40_CUDNN=OFF -DCMAKE_BUILD_TYPE=Release   (the same for a 781a2d2 worktree)
#   cmake --build build-90 --target m40-bench test_quant_gpu test_qlinear_fused test_chatglm2 \
#     m40-gemv-pattern test_gpu_limits
#   mkdir -p .s25/new .s25/old; cp build-90/{those} .s25/new; cp OLD/build-90/m40-bench .s25/old
#   strip .s25/*/*; tar cf - .s25 | xz -T2 -9 > .carry/s25.tar.xz
#   OUT=DIR scripts/h200-session25.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session25 300 .s25/new
carry_start .carry/s25.tar.xz
timeout 60 "$B/m40-gemv-pattern" > "$O/pattern1.txt" 2>&1
note "pattern 1 rc=$?"
cat "$O/pattern1.txt" >> "$SUM"
M40_QUANT_QUICK=1 TEST_TIMEOUT=70 gpu_tests "test_quant_gpu" | tee -a "$SUM"
TEST_TIMEOUT=60 gpu_tests "test_gpu_limits" "test_chatglm2 --gpu" "test_qlinear_fused --gpu" | tee -a "$SUM"
# the sm_52 build (CUDA 11.8) through PTX JIT where carried: session 22's
# template as an M40 would run it (.carry/jit52.tar.xz: scripts/jit52-check.sh
# build's test_quant_gpu, test_qlinear_fused, test_gpu_limits)
[ -f .carry/jit52.tar.xz ] && [ "$(left)" -gt 100 ] &&
    jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_gpu_limits"
GLM_TIMEOUT=40
for i in 1 2; do
    [ "$(left)" -gt 50 ] || break
    [ -x .s25/old/m40-bench ] && B=.s25/old glm_run "old$i" "" int4g128,int4 128
    glm_run "new$i" "" int4g128,int4 128
done
if [ "$(left)" -gt 40 ]; then
    timeout 40 "$B/m40-gemv-pattern" > "$O/pattern2.txt" 2>&1
    note "pattern 2 rc=$?"
    cat "$O/pattern2.txt" >> "$SUM"
fi
carry_end
