#!/usr/bin/env bash
# Twelfth session, call 2 (arch 90): decode v4 (kernels/attention.cu: decode
# v3 with 4 keys a lane, 128-key steps; decode variants 8 and 9) -- the
# attention tests over every variant, m40-bench attention's decode A/B per
# call and in a captured graph, the ChatGLM2-6B decode step with variant
# 0 / 8 / 9 / 0 in the same call, ncu's view of the new kernel at 32K.
#   OUT=DIR scripts/h200-session12b.sh [BUILD_DIR]   (carry [".debs", ".carry"]: .carry/jit52.tar.xz
#   holds .jit52/test_attention_gpu and test_chatglm2 from a CUDA 11.8 sm_52 build)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session12b 530 "$@"
build_arch90 m40-bench test_attention_gpu test_chatglm2
TEST_TIMEOUT=170 gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
M40_ATTN_AB=1 M40_BENCH_ATTN_PREFILL=0 timeout 120 "$B/m40-bench" attention --sizes 1024,8192,32768 \
    --json="$O/attention.json" > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "^attention" "$O/attention.txt" | sed -E 's/ +/ /g; s/M40:.*//; s/\(min[^)]*\)//' >> "$SUM"
GLM_TIMEOUT=60 glm_run v0 M40_ATTN_DECODE_VARIANT=0 int4 128,8192
GLM_TIMEOUT=60 glm_run v9 M40_ATTN_DECODE_VARIANT=9 int4 128,8192
GLM_TIMEOUT=60 glm_run v8 M40_ATTN_DECODE_VARIANT=8 int4 128,8192
GLM_TIMEOUT=60 glm_run v0b M40_ATTN_DECODE_VARIANT=0 int4 128,8192
[ "$(left)" -gt 200 ] && TEST_TIMEOUT=60 gpu_tests "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
# the sm_52 build (CUDA 11.8, carried as .carry/jit52.tar.xz) through PTX JIT
if [ -f .carry/jit52.tar.xz ] && [ "$(left)" -gt 90 ]; then
    tar xJf .carry/jit52.tar.xz
    for t in test_attention_gpu; do
        s=$SECONDS
        M40_ATTN_QUICK=1 CUDA_MODULE_LOADING=LAZY timeout $(( $(left) - 20 )) .jit52/$t > "$O/jit52-${t%% *}.log" 2>&1
        note "jit52 $t rc=$? ($((SECONDS - s)) s) $(grep -E 'checks' "$O/jit52-${t%% *}.log" | tail -1)"
    done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.json *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
