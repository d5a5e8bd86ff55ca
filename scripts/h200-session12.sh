#!/usr/bin/env bash
# Twelfth session, call 1 (arch 90): the small ops, sampling and decode
# attention timed both ways (CUDA events around each call, and
# --graph-calls 20 calls captured in one CUDA graph: a decode step's cost),
# the sampling and transformer-op tests, then ncu's warp states, scheduler
# and memory tables over one int4 and one int8 layer's GEMVs (the data
# session 11 asked for before the next GEMV change).
#   OUT=DIR scripts/h200-session12.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session12 560 "$@"
build_arch90 m40-bench test_sample_gpu test_transformer_ops_gpu
TEST_TIMEOUT=100 gpu_tests "test_sample_gpu" "test_transformer_ops_gpu" | tee -a "$SUM" >/dev/null
stamp "bench norm" >> "$SUM"
timeout 90 "$B/m40-bench" norm --sizes 1,64,512 --json="$O/norm.json" > "$O/norm.txt" 2>&1
note "norm rc=$?"
timeout 90 "$B/m40-bench" sample --sizes 1,8 --json="$O/sample.json" > "$O/sample.txt" 2>&1
note "sample rc=$?"
M40_BENCH_ATTN_PREFILL=0 timeout 90 "$B/m40-bench" attention --sizes 1024,8192,32768 \
    --json="$O/attention.json" > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "x device copy|us per call" "$O/norm.txt" "$O/sample.txt" "$O/attention.txt" | \
    sed -E 's/ +/ /g; s/M40:.*//' >> "$SUM"
if command -v ncu >/dev/null && [ "$(left)" -gt 120 ]; then
    for f in int4 int8; do
        M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
            timeout $(( $(left) > 200 ? 90 : 60 )) ncu --profile-from-start off --clock-control none \
            --cache-control none --kernel-name regex:gemv --launch-count 4 --section SpeedOfLight \
            --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
            --section MemoryWorkloadAnalysis "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 \
            > "$O/ncu-gemv-$f.txt" 2> "$O/ncu-gemv-$f.err"
        note "ncu $f rc=$?"
    done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
