#!/usr/bin/env bash
# Session 21, call 1 (carry [".debs"]): what a kernel boundary costs the
# decode step's GEMVs (issue 17: is a chained / persistent GEMV worth it?),
# and the attention clean-ups on the GPU.
#  1. m40-gemv-boundary: the step's K-4096 matrices as separate launches
#     against one launch of all their rows, same kernel and bytes, in a graph;
#  2. ncu over one int4 and one int8 layer's GEMVs: each SM's active cycles
#     (min / mean / max against the elapsed) -- ramp and tail against imbalance;
#  3. test_attention_gpu (quick; attn_combine_rows now folds with fold(), the
#     (m, l) store is one helper), test_chatglm2 --gpu.
#   OUT=DIR scripts/h200-session21.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session21 420 "$@"
build_arch90 m40-gemv-boundary m40-bench test_attention_gpu test_chatglm2
timeout 120 "$B/m40-gemv-boundary" > "$O/boundary.txt" 2>&1
note "boundary rc=$?"
cat "$O/boundary.txt" >> "$SUM"
if command -v ncu >/dev/null; then
    for f in int4 int8; do
        [ "$(left)" -gt 150 ] || break
        M40_BENCH_GLM_FORMATS=$f M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 M40_BENCH_GLM_NO_CHAIN=1 \
            timeout 90 ncu --profile-from-start off --clock-control none --cache-control none \
            --kernel-name regex:gemv --launch-count 4 --csv \
            --metrics gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.per_cycle_active,dram__bytes_read.sum \
            "$B/m40-bench" chatglm2 --warmup 1 --repeats 2 --sizes 128 > "$O/ncu-$f.csv" 2> "$O/ncu-$f.err"
        note "ncu $f rc=$?"
        python3 - "$O/ncu-$f.csv" >> "$SUM" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit()
h = rows[0]; ix = {k: i for i, k in enumerate(h)}
kern = {}
for r in rows[1:]:
    key = (r[ix["ID"]], r[ix["Kernel Name"]][:60])
    kern.setdefault(key, {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
for (i, k), m in kern.items():
    print(i, k, " ".join(f"{n.split('__')[-1]}={v}" for n, v in sorted(m.items())))
PY
    done
fi
M40_ATTN_QUICK=1 TEST_TIMEOUT=200 gpu_tests "test_attention_gpu" "test_chatglm2 --gpu" | tee -a "$SUM" >/dev/null
for f in "$O"/test_*.log; do [ -f "$f" ] && tail -20 "$f" > "$f.t" && mv "$f.t" "$f"; done
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log "$O"/*.err
echo "=== SUMMARY"; cat "$SUM"
