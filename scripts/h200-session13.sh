#!/usr/bin/env bash
# Thirteenth session, call 1 (arch 90): GEMV v2 with the exponent-zero
# decode (EZ, kernels/quant_gemv_v2.cuh): the quantized GEMV tests, the
# ChatGLM2 test, then an A/B of the decode step (EZ on / off / on with
# int4's small shapes chunked / on again), and ncu's table over one int4
# layer's GEMVs with EZ.
#   OUT=DIR scripts/h200-session13.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session13 560 "$@"
build_arch90 m40-bench test_quant_gpu test_qlinear_fused test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_qlinear_fused --gpu" "test_quant_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=100
glm_run ez1 "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
glm_run ez0 "M40_BENCH_GLM_V2EZ=0" int4,int8,int4g128 128
glm_run ez1chunk "M40_BENCH_GLM_V2EZ=1 M40_BENCH_GLM_V2WHOLE=0" int4,int4g128 128
glm_run ez1b "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
if command -v ncu >/dev/null && [ "$(left)" -gt 100 ]; then
    for e in 1 0; do
        M40_BENCH_GLM_V2EZ=$e M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
            M40_BENCH_GLM_NO_CHAIN=1 timeout 60 ncu --profile-from-start off --clock-control none \
            --cache-control none --kernel-name regex:gemv --launch-count 4 --section SpeedOfLight \
            --section SchedulerStats --section Occupancy \
            "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 \
            > "$O/ncu-gemv-int4-ez$e.txt" 2> "$O/ncu-gemv-int4-ez$e.err"
        note "ncu int4 ez$e rc=$?"
        grep -E "gemv|Duration|Issued Warp|Registers Per" "$O/ncu-gemv-int4-ez$e.txt" | sed -E 's/ +/ /g' | \
            cut -c1-150 >> "$SUM"
    done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
