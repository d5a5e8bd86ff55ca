#!/usr/bin/env bash
# Session 17, call 2 (carry [".debs", ".carry"]: .carry/main.tar.xz = `git
# archive` of main before this session's attention changes, .carry/jit52.tar.xz
# = the CUDA 11.8 sm_52 build of test_attention_gpu and test_chatglm2):
#  1. this tree (arch 90) and main's tree (m40-bench only) built side by side;
#  2. test_attention_gpu (quick) and test_chatglm2 --gpu, arch 90 and the sm_52
#     build through PTX JIT, while main's build finishes;
#  3. m40-bench attention 128 / 1024 / 8192: this tree's default and v5 rows
#     (M40_ATTN_AB_ONLY=v5), main's default;
#  4. the int4 step (8192-token cache, ctx 128 / 8192): this tree against
#     main, alternating, then decode v5 with its fused combine and without.
#   OUT=DIR scripts/h200-session17b.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session17b 580 "$@"
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
    env "$@" timeout 150 "$b/m40-bench" attention --sizes 128,1024,8192 --repeats 10 > "$O/attention-$l.txt" 2>&1
    note "attention $l rc=$?"
    grep -E "^attention.*decode" "$O/attention-$l.txt" | grep -E "m40_attention( |,|$)|v5|device copy" |
        sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-110 | sed "s/^/$l /" >> "$SUM"
}
att s17 "$B" M40_ATTN_AB=1 M40_ATTN_AB_ONLY=v5
att main "$MB"
glm_run s17 "" int4 128,8192
B=$MB glm_run main "" int4 128,8192
glm_run s17b "" int4 128,8192
B=$MB glm_run mainb "" int4 128,8192
glm_run v10fc "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0 M40_BENCH_GLM_FUSE_COMBINE=1" int4 128,8192
glm_run v10 "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0" int4 128,8192
glm_run v0r "M40_BENCH_GLM_FUSE_ROPE=0" int4 128,8192
[ $(left) -gt 30 ] && glm_run v10fcb "M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0 M40_BENCH_GLM_FUSE_COMBINE=1" int4 128,8192
for f in "$O"/test_*.log "$O"/jit52-*.log; do [ -f "$f" ] && tail -40 "$f" > "$f.t" && mv "$f.t" "$f"; done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log *.json 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
