#!/usr/bin/env bash
# Fifteenth session, call 3:
#  1. the sm_52 build (CUDA 11.8, carried as .carry/jit52.tar.xz:
#     test_sample_gpu, test_attention_gpu quick, test_chatglm2) through PTX
#     JIT -- sampling's grid passes (auto's choice now), the warp-split P·V
#     and the 8-row decode blocks as Maxwell code;
#  2. (arch 90) test_attention_gpu, then decode attention in blocks of 8
#     query rows (m40k_attn_rows8) against the default: M40_ATTN_AB=1
#     m40-bench attention and the int4 step at ctx 128 and 8192 in one
#     8192-token cache (the chat's shape), knob 0 / 1 / 0.
#   OUT=DIR scripts/h200-session15c.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session15c 640 "$@"
if tar xJf .carry/jit52.tar.xz; then
    for t in "test_sample_gpu" "test_chatglm2 --gpu" "test_attention_gpu"; do
        set -- $t
        s=$SECONDS
        M40_ATTN_QUICK=1 CUDA_MODULE_LOADING=LAZY timeout 200 .jit52/$t > "$O/jit52-$1.log" 2>&1
        note "jit52 $t rc=$? ($((SECONDS - s)) s) $(grep -E 'checks' "$O/jit52-$1.log" | tail -1)"
        grep -E "FAIL|differ" "$O/jit52-$1.log" | head -5 >> "$SUM"
    done
fi
B=build-gpu
build_arch90 m40-bench test_attention_gpu
TEST_TIMEOUT=170 gpu_tests "test_attention_gpu" | tee -a "$SUM" >/dev/null
M40_ATTN_AB=1 timeout 150 "$B/m40-bench" attention --sizes 1024,8192 --repeats 10 > "$O/attention.txt" 2>&1
note "attention AB rc=$?"
grep -E "^attention.*decode" "$O/attention.txt" | grep -E "m40_attention( |,)|8 rows|device copy" |
    sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-110 >> "$SUM"
for c in "r0" "r1" "r0b" "r1b"; do
    [ $(left) -gt 40 ] || break
    GLM_TIMEOUT=60 glm_run "$c" "M40_BENCH_GLM_ROWS8=${c:1:1}" int4 128,8192
done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
