#!/usr/bin/env bash
# Session 26, second call (carry [".carry/s26.tar.xz"], rebuilt with the
# padded x of m40-gemv-pattern's "+xs" rows: the first version read x at a
# lane stride of 128 bytes, 8-way bank conflicts on every LDS.128, and timed
# those):
#  1. m40-gemv-pattern (cold copies): the floor's steps toward a small GEMV;
#  2. the int4 decode step's GEMV and attention knobs on this GPU (they were
#     chosen on the H200, which has 1.4x the bytes a second of an H100 at the
#     same issue rate): m40-bench chatglm2 int4, ctx 128, one knob flipped
#     a run, the default first and last.
#   OUT=DIR BUDGET=200 scripts/h200-session26b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26b 200 .s26
carry_start .carry/s26.tar.xz
timeout 60 "$B/m40-gemv-pattern" > "$O/pattern.txt" 2>&1
note "pattern rc=$?"
cat "$O/pattern.txt" >> "$SUM"
GLM_TIMEOUT=40
for k in base M40_BENCH_GLM_SMALLV2=0 M40_BENCH_GLM_V2DEEP=1 M40_BENCH_GLM_V2DEEP=2 M40_BENCH_GLM_V2R1=1 \
         M40_BENCH_GLM_V2KS=2 M40_BENCH_GLM_V2PASS=0 M40_BENCH_GLM_Q4SPLIT=1 M40_BENCH_GLM_V2EZ=0 \
         M40_BENCH_GLM_V6=0 M40_BENCH_GLM_FUSE_COMBINE=1 base; do
    [ "$(left)" -gt 25 ] || break
    e=$k; [ "$k" = base ] && e=""
    l=${k#M40_BENCH_GLM_}; glm_run "${l//=/-}" "$e" int4 128
done
carry_end
