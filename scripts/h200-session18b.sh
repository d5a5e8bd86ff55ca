#!/usr/bin/env bash
# Session 18, call 2 (carry [".debs", ".carry"]: .carry/main.tar.xz = `git
# archive` of main b1b6dd6 (before this call's attention changes),
# .carry/jit52.tar.xz = the CUDA 11.8 sm_52 build of test_attention_gpu and
# test_chatglm2 from this tree):
#  1. this tree (arch 90) and main's (m40-bench only) built side by side;
#  2. test_attention_gpu (quick) and test_chatglm2 --gpu, arch 90 and the
#     sm_52 build through PTX JIT (decode v5 with the fused RoPE + append;
#     the tile loop's cache pointers advanced a tile at a time);
#  3. m40-bench attention 128 / 1K / 8K / 32K: this tree and main's default;
#  4. the int4 step (8192-token cache, ctx 128 / 1024 / 8192): this tree
#     against main, alternating; decode v5 (variant 10, now with the fused
#     RoPE), with and without its own fold;
#  5. ncu of the int8 GEMVs, passes off and on (call 1 ran out of time).
#   OUT=DIR scripts/h200-session18b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session18b 570 "$@"
setup_arch90
MB=/tmp/main-build
mkdir -p /tmp/main-src && tar xJf .carry/main.tar.xz -C /tmp/main-src
(cmake -S /tmp/main-src -B $MB $(command -v ninja >/dev/null && echo -G Ninja) -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$O/configure-main.log" 2>&1 &&
    cmake --build $MB -j16 --target m40-bench > "$O/build-main.log" 2>&1
 echo "main build rc=$?" > "$O/main-built.txt") &
MAINPID=$!
build_arch90 m40-bench test_attention_gpu test_chatglm2
(jit52_tests "test_attention_gpu" "test_chatglm2 --gpu") &
JITPID=$!
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
wait $JITPID
wait $MAINPID
note "$(cat "$O/main-built.txt")"
att() { # LABEL BUILD [env...]
    local l=$1 b=$2
    shift 2
    env "$@" timeout 150 "$b/m40-bench" attention --sizes 128,1024,8192,32768 --repeats 10 > "$O/attention-$l.txt" 2>&1
    note "attention $l rc=$?"
    grep -E "^attention.*decode" "$O/attention-$l.txt" | grep -E "m40_attention( |,|$)|device copy" | grep graph |
        sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-110 | sed "s/^/$l /" >> "$SUM"
}
att s18 "$B"
att main "$MB"
S=128,1024,8192
glm_run s18 "" int4 $S
B=$MB glm_run main "" int4 $S
glm_run v10 "M40_ATTN_DECODE_VARIANT=10" int4 $S
glm_run v10fc "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_COMBINE=1" int4 $S
glm_run s18b "" int4 $S
B=$MB glm_run mainb "" int4 $S
[ $(left) -gt 45 ] && glm_run v10b "M40_ATTN_DECODE_VARIANT=10" int4 $S
for k in 0 1; do
    [ $(left) -gt 25 ] || break
    M40_BENCH_GLM_V2PASS=$k M40_BENCH_GLM_FORMATS=int8 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        M40_BENCH_GLM_NO_CHAIN=1 timeout 20 ncu --profile-from-start off --clock-control none \
        --kernel-name regex:"gemv|split" --launch-count 8 --metrics gpu__time_duration.sum \
        "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-int8-p$k.txt" 2>&1
    note "ncu int8 pass $k rc=$?"
    grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$O/ncu-int8-p$k.txt" | sed -E 's/ +/ /g; s/\(m40k_qlinear_args.*//' |
        cut -c1-80 | paste - - | sed "s/^/int8 p$k /" >> "$SUM"
done
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
