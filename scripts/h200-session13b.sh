#!/usr/bin/env bash
# Thirteenth session, call 2 (arch 90): GEMV v2 EZ staged whole with 1, 2
# or 4 chunks of weights in flight, and int4's large-K GEMV on v3 split-K
# (knobs), A/B against EZ off; the quantized GEMV tests; ncu's stall
# reasons over one int4 layer's GEMVs at depth 1 and 2.
#   OUT=DIR scripts/h200-session13b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session13b 560 "$@"
build_arch90 m40-bench test_quant_gpu test_qlinear_fused test_chatglm2
TEST_TIMEOUT=150 gpu_tests "test_qlinear_fused --gpu" "test_quant_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
GLM_TIMEOUT=100
glm_run d1 "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
glm_run d2 "M40_BENCH_GLM_V2DEEP=2" int4,int8,int4g128 128
glm_run d4 "M40_BENCH_GLM_V2DEEP=4" int4,int8,int4g128 128
glm_run split "M40_BENCH_GLM_Q4SPLIT=1" int4,int4g128 128
glm_run ez0 "M40_BENCH_GLM_V2EZ=0" int4,int8,int4g128 128
glm_run d1b "M40_BENCH_GLM_V2EZ=1" int4,int8,int4g128 128
if command -v ncu >/dev/null && [ "$(left)" -gt 60 ]; then
    for d in 0 2; do
        M40_BENCH_GLM_V2DEEP=$d M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
            M40_BENCH_GLM_NO_CHAIN=1 timeout 60 ncu --profile-from-start off --clock-control none \
            --cache-control none --kernel-name regex:gemv --launch-count 4 --section SpeedOfLight \
            --section SchedulerStats --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
            "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 \
            > "$O/ncu-gemv-int4-d$d.txt" 2> "$O/ncu-gemv-int4-d$d.err"
        note "ncu int4 d$d rc=$?"
        grep -E "gemv|Duration|Issued Warp" "$O/ncu-gemv-int4-d$d.txt" | sed -E 's/ +/ /g' | cut -c1-110 >> "$SUM"
    done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
