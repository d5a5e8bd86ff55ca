#!/usr/bin/env bash
# Eighth session, second call (arch 90): the fusions' GPU tests (results in
# the summary), the ChatGLM2-6B decode A/B at ctx 128 (fused, unfused,
# RoPE only), then ncu over one int4 decode step of the fused and of the
# unfused graph: kernel families, and the first layer's kernels one by one.
#   OUT=DIR scripts/h200-session8b.sh [BUILD_DIR]      (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session8b 580 "$@"
build_arch90 m40-bench test_qlinear_fused test_chatglm2 test_glm_parallel
TEST_TIMEOUT=120 gpu_tests "test_qlinear_fused --gpu" "test_chatglm2 --gpu" "test_glm_parallel --gpu" |
    tee -a "$SUM"
grep -E "^FAIL" "$O/test_qlinear_fused.log" | head -5 | cut -c1-160 | tee -a "$SUM"
glm() { # label fuse-mask formats
    M40_BENCH_GLM_FUSE=$2 M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 80 "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes 128 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$?"
    grep -E "tokens/s" "$O/m40-chatglm2-$1.txt" | sed -E 's/ +/ /g; s/M40 projection.*//' |
        sed "s/^/$1: /" | cut -c1-100 | tee -a "$SUM"
}
for k in 1 2; do # twice, interleaved: the run-to-run spread
    [ "$(left)" -gt 330 ] && glm "fused$k" 3 fp16,int8,int4
    [ "$(left)" -gt 300 ] && glm "unfused$k" 0 fp16,int8,int4
    [ "$(left)" -gt 270 ] && glm "rope$k" 1 fp16,int8,int4
done
prof() { # label fuse-mask
    M40_BENCH_GLM_FUSE=$2 M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        M40_BENCH_GLM_NO_CHAIN=1 timeout 80 ncu --profile-from-start off --clock-control none \
        --cache-control none --metrics gpu__time_duration.sum --csv "$B/m40-bench" chatglm2 --warmup 1 \
        --repeats 3 --sizes 128 > "$O/ncu-$1.csv" 2> "$O/ncu-$1.err"
    note "ncu $1 rc=$?"
    python3 scripts/ncu_step_table.py "$O/ncu-$1.csv" > "$O/ncu-$1.txt"
    head -14 "$O/ncu-$1.txt" | sed "s/^/$1: /" | tee -a "$SUM"
    python3 - "$O/ncu-$1.csv" <<'PY' | sed "s/^/$1 layer 1: /" | tee -a "$SUM"
import csv, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; ki = hdr.index("Kernel Name"); vi = hdr.index("Metric Value"); ui = hdr.index("Metric Unit")
ks = [(r[ki], float(r[vi].replace(",", "")), r[ui]) for r in rows[1:]]
# one step: from the 2nd kernel on, the first layer's kernels (up to the 2nd qkv-like repeat)
for name, v, u in ks[1:14]:
    n = re.sub(r"\(anonymous namespace\)::", "", name)
    n = re.sub(r"\(m40k.*$|\(.*$", "", n)[:70]
    print(f"{v * (1e-3 if u.startswith('n') else 1):8.2f} us  {n}")
PY
}
[ "$(left)" -gt 150 ] && command -v ncu >/dev/null && prof nfused 3
[ "$(left)" -gt 80 ] && command -v ncu >/dev/null && prof nunfused 0
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
