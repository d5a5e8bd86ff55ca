#!/usr/bin/env bash
# Session 17, call 4: ncu kernel durations (real clocks) of one int4 decode
# step's attention kernels at ctx 128 in an 8192-token cache: the fused
# default (tile + RoPE, combine), the tile with RoPE separate, decode v5
# (RoPE separate). Why v5's 2.3 us in a graph of 20 does not show in the step.
#   OUT=DIR scripts/h200-session17d.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session17d 300 "$@"
build_arch90 m40-bench
for cfg in "v0:" "v0r:M40_BENCH_GLM_FUSE_ROPE=0" "v10:M40_ATTN_DECODE_VARIANT=10 M40_BENCH_GLM_FUSE_ROPE=0"; do
    l=${cfg%%:*} e=${cfg#*:}
    [ $(left) -gt 30 ] || break
    env $e M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 45 ncu --profile-from-start off --clock-control none --kernel-name regex:"attn_|rope|gemv" \
        --launch-count 14 --metrics gpu__time_duration.sum \
        "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128,8192 > "$O/ncu-$l.txt" 2> "$O/ncu-$l.err"
    note "ncu $l rc=$?"
    grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$O/ncu-$l.txt" | sed -E 's/ +/ /g; s/\(int, int, int\).*//' |
        cut -c1-90 | paste - - | sed "s/^/$l /" >> "$SUM"
done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
