#!/usr/bin/env bash
# Fifteenth session, call 2: decode attention with P·V split over the warps
# (m40k_attn_warp_pv): checked, then timed against the default tiles.
#  1. test_attention_gpu (every variant; the knob's section: variants 0, 1,
#     7, 5 with it on, RoPE fused and not) and test_sample_gpu (auto's new rule);
#  2. M40_ATTN_AB=1 m40-bench attention --sizes 1024,8192,32768 (per call and
#     in a graph: the rows "warp P.V" and "tile 64, warp P.V");
#  3. the int4 decode step with the knob 0 / 1 at ctx 128 and 8192.
#   OUT=DIR scripts/h200-session15b.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session15b 560 "$@"
build_arch90 m40-bench test_attention_gpu test_sample_gpu
TEST_TIMEOUT=170 gpu_tests "test_attention_gpu" "test_sample_gpu" | tee -a "$SUM" >/dev/null
M40_ATTN_AB=1 timeout 150 "$B/m40-bench" attention --sizes 1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
note "attention AB rc=$?"
grep -E "^attention.*decode" "$O/attention.txt" | grep -E "m40_attention( |,)|warp|tile 64|device copy" |
    sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-110 >> "$SUM"
for c in "128 w0" "128 w1" "8192 w0" "8192 w1" "128 w0b"; do
    set -- $c
    [ $(left) -gt 50 ] || break
    GLM_TIMEOUT=60 glm_run "c$1-$2" "M40_BENCH_GLM_WARP_PV=${2:1:1}" int4 $1
done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
