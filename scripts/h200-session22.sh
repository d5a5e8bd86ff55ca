#!/usr/bin/env bash
# Session 22, one call on ~4.5 minutes of device time (carry [".carry"]:
# .carry/s22.tar.xz holds arch-90 binaries built on the CPU machine with CUDA
# 13.0, -DM40_CUBLAS=OFF -DM40_CUDNN=OFF: .s22/new/ (this tree: the group-scale
# dtype as a template argument) m40-bench, test_quant_gpu, test_qlinear_fused,
# test_chatglm2; .s22/old/m40-bench (the tree before it, 781a2d2)). No build
# on the device: there was no time for one. NOT RUN in session 22: the call was
# refused (the device time had gone to the session's earlier try); the next
# session with device time builds the same binaries (or the arch-90 tree)
# and runs it.
#  1. correctness: test_quant_gpu (quick: odd shapes, every variant and
#     format, f16 and f32 group scales), test_qlinear_fused --gpu,
#     test_chatglm2 --gpu (int4g128 against its fixture logits);
#  2. ChatGLM2-6B int4g128 (and int4) decode at ctx 128, old / new / old / new.
# The carry, on the CPU machine (CUDA 13 at /usr/local/cuda; OLD: a worktree
# of the commit before the change, 781a2d2):
#   for t in . OLD; do PATH=/usr/local/cuda/bin:$PATH cmake -S $t -B $t/build-90 -G Ninja \
#     -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON \
#     -DM40_CUBLAS=OFF -DM40_CUDNN=OFF -DCMAKE_BUILD_TYPE=Release; done   (then ninja the targets)
#   mkdir -p .s22/new .s22/old .carry; cp build-90/{m40-bench,test_quant_gpu,test_qlinear_fused,test_chatglm2} .s22/new
#   cp OLD/build-90/m40-bench .s22/old; strip .s22/*/*; tar cf - .s22 | xz -T2 > .carry/s22.tar.xz
# (~46 MB; .s22/ and .carry/ in .git/info/exclude)
#   OUT=DIR scripts/h200-session22.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session22 200 .s22/new
carry_start .carry/s22.tar.xz
M40_QUANT_QUICK=1 TEST_TIMEOUT=70 gpu_tests "test_quant_gpu" | tee -a "$SUM"
TEST_TIMEOUT=40 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
GLM_TIMEOUT=40
for i in 1 2; do
    B=.s22/old glm_run "old$i" "" int4g128,int4 128
    B=.s22/new glm_run "new$i" "" int4g128,int4 128
done
carry_end
