#!/usr/bin/env bash
# Eighth session, third call (arch 90): the vector RoPE + append kernel and
# fp16 without the fused norm: GPU tests, the sm_52 build of the changed
# tests through PTX JIT (carried .carry/jit52.tar.xz, when present), the
# ChatGLM2-6B decode A/B (fused, unfused; ctx 128 twice, 8192 once), ncu of
# the fused int4 step.
#   OUT=DIR scripts/h200-session8c.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session8c 580 "$@"
build_arch90 m40-bench test_attention_gpu test_qlinear_fused test_chatglm2 test_glm_parallel
TEST_TIMEOUT=120 M40_ATTN_QUICK=1 gpu_tests "test_attention_gpu" "test_qlinear_fused --gpu" \
    "test_chatglm2 --gpu" "test_glm_parallel --gpu" | tee -a "$SUM"
if [ -f .carry/jit52.tar.xz ]; then
    tar xJf .carry/jit52.tar.xz
    for t in "test_attention_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_quant_gpu"; do
        s=$SECONDS
        M40_ATTN_QUICK=1 M40_QUANT_QUICK=1 timeout 150 .jit52/$t > "$O/jit52-${t%% *}.log" 2>&1
        note "sm_52 PTX JIT $t rc=$? ($((SECONDS - s)) s) $(grep -E 'checks,' "$O/jit52-${t%% *}.log" | tail -1)"
    done
fi
glm() { # label fuse-mask sizes
    M40_BENCH_GLM_FUSE=$2 M40_BENCH_GLM_FORMATS=fp16,int8,int4,int4g128 M40_BENCH_GLM_PREFILL=0 \
        M40_BENCH_GLM_NO_CHAIN=1 timeout 90 "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes "$3" \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$?"
    grep -E "tokens/s" "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//' |
        sed "s/^/$1: /" | cut -c1-100 | tee -a "$SUM"
}
for k in 1 2; do
    [ "$(left)" -gt 250 ] && glm "fused$k" 3 128
    [ "$(left)" -gt 220 ] && glm "unfused$k" 0 128
done
[ "$(left)" -gt 190 ] && glm fused8k 3 8192
[ "$(left)" -gt 160 ] && glm unfused8k 0 8192
if [ "$(left)" -gt 60 ] && command -v ncu >/dev/null; then
    M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 50 ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 1 --repeats 3 \
        --sizes 128 > "$O/ncu-fused.csv" 2> "$O/ncu-fused.err"
    note "ncu rc=$?"
    python3 scripts/ncu_step_table.py "$O/ncu-fused.csv" > "$O/ncu-fused.txt"
    head -10 "$O/ncu-fused.txt" | tee -a "$SUM"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
