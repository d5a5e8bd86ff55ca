#!/usr/bin/env bash
# Fourteenth session, call 5: why the combine inside the decode tile kernel is
# slower -- ncu over the fused-RoPE attention kernel of one int4 decode step
# (ctx 128), the combine inside (1) and launched (0): duration, launch stats
# (registers, stack), occupancy, stall reasons.
#   OUT=DIR scripts/h200-session14c.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session14c 200 "$@"
build_arch90 m40-bench
for f in 1 0; do
    M40_BENCH_GLM_FUSE_COMBINE=$f M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        M40_BENCH_GLM_NO_CHAIN=1 timeout 50 ncu --profile-from-start off --clock-control none \
        --kernel-name regex:attn_ --launch-count 3 --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section SchedulerStats \
        --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
        "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 \
        > "$O/ncu-attn-f$f.txt" 2> "$O/ncu-attn-f$f.err"
    note "ncu fuse $f rc=$?"
    grep -E "attn_|Duration|Registers|Stack|Local|Issued Warp|Achieved Occ|stalled_(long|short|barrier|membar|lg_thr|wait|no_inst|branch|sleep|drain|misc|dispatch|mio)" \
        "$O/ncu-attn-f$f.txt" | sed -E 's/ +/ /g' | cut -c1-120 >> "$SUM"
done
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.err 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
