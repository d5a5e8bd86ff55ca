#!/usr/bin/env bash
# Seventh session's last device call: the final tree's GPU tests (arch 90),
# the sm_52 build of the changed kernels' tests through PTX JIT (what an M40
# runs: the SGEMM's quantized-W tiles, paired prefill tiles, RoPE), then
# m40-bench attention (the paired BM-64 kernel now the auto choice at T 512),
# norm (RoPE at 64 rows), chatglm2 (ctx 128, prefill 512) and one int4 decode
# step under ncu. The summary comes last.
#   OUT=DIR scripts/h200-session7b.sh [BUILD_DIR]   (carry [".debs", ".carry"]:
#   .carry/jit52.tar.xz from `scripts/jit52-check.sh build` of the four tests)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session7b 585 "$@"
setup_arch90
cmake --build "$B" -j"$(nproc)" --target m40-bench test_attention_gpu test_transformer_ops_gpu \
    test_glm_parallel test_chatglm2 test_quant_gpu > "$O/build.log" 2>&1 &
BPID=$!
if [ -f .carry/jit52.tar.xz ]; then # the sm_52 tests through PTX JIT, while arch 90 builds
    tar xJf .carry/jit52.tar.xz && scripts/jit52-check.sh run > "$O/jit52.txt" 2>&1
    note "jit52 (sm_52 PTX JIT) rc=$?"; grep -vE "not carried" "$O/jit52.txt" | head -8 | tee -a "$SUM"
fi
wait $BPID; note "built rc=$? $(grep -cE ' error' "$O/build.log") errors"
TEST_TIMEOUT=120 M40_ATTN_QUICK=1 M40_QUANT_QUICK=1 gpu_tests "test_attention_gpu" \
    "test_transformer_ops_gpu" "test_glm_parallel --gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
if [ "$(left)" -gt 200 ]; then
    M40_ATTN_AB=1 timeout 90 "$B/m40-bench" attention --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
    note "attention rc=$?"
    grep -E "prefill T" "$O/m40-attention.txt" | grep -v "same FLOPs" |
        sed -E 's/ +/ /g; s/ \(min.*\)//' | cut -c1-120 | tee -a "$SUM"
    timeout 40 "$B/m40-bench" norm --json="$O/m40-norm.json" > "$O/m40-norm.txt" 2>&1
    note "norm rc=$?"; grep -E "^norm +rope" "$O/m40-norm.txt" | grep -v "device copy" |
        sed -E 's/ +/ /g; s/ \(min.*\)//' | cut -c1-120 | tee -a "$SUM"
fi
if [ "$(left)" -gt 120 ]; then
    M40_BENCH_GLM_PREFILL=512 M40_BENCH_GLM_FORMATS=fp16,int8,int4 timeout 100 "$B/m40-bench" chatglm2 \
        --warmup 1 --repeats 5 --sizes 128 --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
    note "chatglm2 rc=$?"
    grep -E "tokens/s|read chain ctx" "$O/m40-chatglm2.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(min.*//' |
        cut -c1-110 | tee -a "$SUM"
fi
if command -v ncu >/dev/null && [ "$(left)" -gt 70 ]; then
    M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 60 ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 2 --repeats 3 \
        --sizes 128 > "$O/ncu-decode.csv" 2> "$O/ncu-decode.err"
    note "ncu rc=$?"; python3 scripts/ncu_step_table.py "$O/ncu-decode.csv" > "$O/ncu-decode.txt"
    head -12 "$O/ncu-decode.txt" | tee -a "$SUM"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
