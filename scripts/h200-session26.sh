#!/usr/bin/env bash
# Session 26: session 25's call ran (H100), and m40-gemv-pattern said the
# large GEMV sits at its arithmetic floor while the small ones (qkv, dense)
# run ~1.5x the floor's time; but its small matrices sat in L2 (the same
# 8 MB replayed) and its XOR checks raced the bench's non-blocking stream.
# This call, no build on the device (carry [".carry/s26.tar.xz"]: .s26/
# m40-gemv-pattern and m40-bench, arch 90, CUDA 13, built here as
# scripts/h200-session25.sh's header says, -DM40_CUBLAS=OFF -DM40_CUDNN=OFF):
#  1. m40-gemv-pattern with every launch on a cold copy of the matrix (3x
#     L2 in all), the checks ordered on the stream, and two steps from the
#     floor toward a real small GEMV (x staged in shared memory; then the
#     warp reduction and the store);
#  2. ncu over one int4 decode step (ctx 128): every GEMV's own time in the
#     step, by grid (one grid a shape), against (1)'s floor;
#  3. m40-bench chatglm2 decode ctx 128, int4 / int4g128 / int8 / fp16
#     (the step's fraction of its bound on this GPU);
#  4. the pattern again.
#   OUT=DIR BUDGET=240 scripts/h200-session26.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26 240 .s26
carry_start .carry/s26.tar.xz
timeout 60 "$B/m40-gemv-pattern" > "$O/pattern1.txt" 2>&1
note "pattern 1 rc=$?"
cat "$O/pattern1.txt" >> "$SUM"
if command -v ncu >/dev/null && [ "$(left)" -gt 120 ]; then
    M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 110 ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 2 --repeats 5 \
        --sizes 128 > "$O/ncu-decode.csv" 2> "$O/ncu-decode.err"
    note "ncu rc=$?"
    python3 scripts/ncu_step_table.py "$O/ncu-decode.csv" > "$O/ncu-decode.txt" 2>&1
    head -40 "$O/ncu-decode.txt" >> "$SUM"
else
    note "no ncu, or too little time left"
fi
GLM_TIMEOUT=60
[ "$(left)" -gt 70 ] && glm_run "all" "" int4,int4g128,int8,fp16 128
if [ "$(left)" -gt 20 ]; then
    timeout 30 "$B/m40-gemv-pattern" > "$O/pattern2.txt" 2>&1
    note "pattern 2 rc=$?"
    cat "$O/pattern2.txt" >> "$SUM"
fi
carry_end
