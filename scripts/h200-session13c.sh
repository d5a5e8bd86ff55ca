#!/usr/bin/env bash
# Thirteenth session, call 3: the sm_52 build (CUDA 11.8, carried as
# .carry/jit52.tar.xz: test_qlinear_fused, test_quant_gpu, test_chatglm2)
# through PTX JIT -- the EZ GEMV as Maxwell code -- then (arch 90) the
# fused-linear test and an A/B of EZ whole at R = 1 in 16-warp blocks.
#   OUT=DIR scripts/h200-session13c.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session13c 540 "$@"
if [ -f .carry/jit52.tar.xz ]; then
    tar xJf .carry/jit52.tar.xz
    for t in "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_quant_gpu"; do
        set -- $t
        s=$SECONDS
        CUDA_MODULE_LOADING=LAZY timeout 150 .jit52/$t > "$O/jit52-$1.log" 2>&1
        note "jit52 $t rc=$? ($((SECONDS - s)) s) $(grep -E 'checks' "$O/jit52-$1.log" | tail -1)"
    done
fi
B=${1:-build-gpu}
build_arch90 m40-bench test_qlinear_fused
TEST_TIMEOUT=60 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=60
glm_run d1 "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
[ "$(left)" -gt 60 ] && glm_run r1 "M40_BENCH_GLM_V2R1=1" int4,int8,int4g128 128
[ "$(left)" -gt 60 ] && glm_run d1b "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
