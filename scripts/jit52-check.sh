#!/usr/bin/env bash
# Proves the exact Maxwell code path on a newer GPU: builds the GPU tests
# here with CUDA 11.8 for sm_52 (SASS + compute_52 PTX, static cudart, no
# cuBLAS so nothing large needs carrying), and runs them where a GPU is:
#   scripts/jit52-check.sh build      # on the build machine: fills .jit52/
#   scripts/jit52-check.sh run        # on the GPU machine (carry .jit52/)
# The 20 programs weigh ~230 MB (each holds every kernel's sm_52 SASS and
# PTX), over one device call's 64 MiB: carry them as two xz archives in two
# or three calls (tar cf - .jit52/<part> | xz > .carry/jit52a.tar.xz; untar there);
# `run` skips the programs not present.
# On a non-Maxwell GPU the driver JIT-compiles the compute_52 PTX, and
# __CUDA_ARCH__ is 520 inside: the code an M40 runs.
set -uo pipefail
cd "$(dirname "$0")/.."
TESTS=("test_gpu_ops" "test_gpu_errors" "test_conv --gpu" "test_sgemm" "test_graph_gpu"
       "test_graph_ops --gpu" "test_resnet --gpu" "test_quant_gpu" "test_conv_algo"
       "test_threads --gpu" "test_ctx_gpu" "test_fault --gpu" "test_nonfinite --gpu"
       "m40-quant-versions" "test_attention_gpu" "test_transformer_ops_gpu" "test_sample_gpu"
       "test_chatglm2 --gpu" "m40-attn-versions --check" "test_qlinear_fused --gpu" "test_gpu_limits")
case "${1:-}" in
build)
    source scripts/env.sh
    [ -n "$M40_NVCC" ] || { echo "jit52-check: needs CUDA 11.8-12.x (scripts/setup.sh)"; exit 1; }
    cmake -S . -B build-jit52 -G Ninja "${M40_CMAKE_CUDA[@]}" -DCMAKE_CUDA_ARCHITECTURES=52 \
          -DM40_CUBLAS=OFF -DM40_WERROR=ON > /dev/null && cmake --build build-jit52 > /dev/null || exit 1
    mkdir -p .jit52
    for t in "${TESTS[@]}" m40-demo m40-doctor; do cp "build-jit52/${t%% *}" .jit52/; done
    grep -q '^/.jit52/' .git/info/exclude 2>/dev/null || echo '/.jit52/' >> .git/info/exclude
    du -sh .jit52 ;;
run)
    fail=0
    for t in "${TESTS[@]}"; do
        [ -x ".jit52/${t%% *}" ] || { echo "$t: not carried this time"; continue; }
        s=$SECONDS
        out=$(.jit52/$t 2>&1); rc=$?
        [ $rc -eq 0 ] || fail=1
        echo "$t: rc=$rc ($((SECONDS - s)) s) $(grep -E 'checks,' <<<"$out" | tail -1)"
        [ $rc -eq 0 ] || grep -E "^FAIL|failed" <<<"$out" | head -5
    done
    [ -x .jit52/m40-doctor ] && .jit52/m40-doctor | grep -E "build|gpu.code|func|summary"
    exit $fail ;;
*) echo "usage: scripts/jit52-check.sh build|run"; exit 2 ;;
esac
