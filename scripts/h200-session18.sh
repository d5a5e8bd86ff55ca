#!/usr/bin/env bash
# Prepared in session 17 for the next session with device time (on branch
# wip/s17-v2-pass): GEMV v2 with x staged in 4096-column passes (D 2, knob
# m40k_quant_gemv_v2_pass), host-emulated only (bench/quant/gemv_emu.sh v2; gemv_v2_emu.sh then).
#  1. test_quant_gpu (its "gemv v2 x in passes" variant), test_qlinear_fused
#     --gpu (the pass knob's section), test_chatglm2 --gpu: arch 90, and the
#     sm_52 build through PTX JIT (carry .carry/jit52.tar.xz: those three
#     built with CUDA 11.8 from this branch);
#  2. the ChatGLM2-6B decode step at ctx 128, int4 / int8 / int4g128, knob
#     0 / 1 / 0 / 1 (M40_BENCH_GLM_V2PASS: dense_4h_to_h in passes; int8's
#     instead of split-K);
#  3. ncu durations (real clocks) of one int4 and one int8 layer's GEMVs,
#     knob 0 and 1.
#   OUT=DIR scripts/h200-session18.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session18 560 "$@"
build_arch90 test_quant_gpu test_qlinear_fused test_chatglm2 m40-bench
(jit52_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu") &
JITPID=$!
TEST_TIMEOUT=150 gpu_tests "test_quant_gpu" "test_qlinear_fused --gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
wait $JITPID
F=int4,int8,int4g128
glm_run p0 "" $F 128
glm_run p1 "M40_BENCH_GLM_V2PASS=1" $F 128
glm_run p0b "" $F 128
glm_run p1b "M40_BENCH_GLM_V2PASS=1" $F 128
for f in int4 int8; do
    for k in 0 1; do
        [ $(left) -gt 40 ] || break
        M40_BENCH_GLM_V2PASS=$k M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
            M40_BENCH_GLM_NO_CHAIN=1 timeout 45 ncu --profile-from-start off --clock-control none \
            --kernel-name regex:"gemv|split" --launch-count 8 --metrics gpu__time_duration.sum \
            "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-$f-p$k.txt" 2>&1
        note "ncu $f pass $k rc=$?"
        grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$O/ncu-$f-p$k.txt" | sed -E 's/ +/ /g; s/\(m40k_qlinear_args.*//' |
            cut -c1-80 | paste - - | sed "s/^/$f p$k /" >> "$SUM"
    done
done
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
