#!/usr/bin/env bash
# Prepared in sessions 32-34 for the next device call (bench/NOTES.md,
# session 34, "Owed to the next device call"), in this order (the floor
# chain first: the item that decides, should the call be cut):
#  1. the floor chain: m40-bench chatglm2 with M40_BENCH_GLM_FLOOR=1, every
#     format at ctx 128 / 8192 (the step, its read chain and its floor
#     chain: the least an sm_52 GEMV can take, in the step's order), then
#     ncu over each int4 chain kernel (its floor kernels counted: 112
#     expected) and one profiled step's kernels (the GEMVs against their
#     floor, as session 35 read them on an H100);
#  2. m40-gemv-pattern (its floor GEMVs: a LOP and an FFMA a weight, no
#     staging; never run on an H200 before), PATTERN_RUNS times (default 2);
#  3. test_qlinear_fused --gpu in full on main (session 32's call 5 cut it
#     at 90 s on an H100), arch 90 (TQF_TIMEOUT seconds, default 200);
#  4. int4g128,int4 decode at ctx 128 / 8192, dense_4h_to_h knob 1 (v2's
#     own decode) / 2 (EZ, the default), AB_ROUNDS times (default 2), each
#     round only with 100 s of the budget left;
#  5. the sm_52 build through PTX JIT: test_attention_gpu (quick 2: decode
#     v5's rows a step at a time), test_qlinear_fused --gpu and
#     test_quant_gpu (quick 1: int4's dense_4h_to_h with EZ in passes),
#     with what is left; JIT_FIRST=SECONDS runs them before item 4 instead,
#     with that timeout each.
# Carry [".carry/s34.tar.xz"]: .s33 (arch 90: m40-bench with the floor
# chain as mended in session 34 (the int4 / int8 codes through the floor
# kernel, not plain reads), test_qlinear_fused, m40-gemv-pattern) and .jit52 (CUDA 11.8
# sm_52: test_attention_gpu, test_qlinear_fused, test_quant_gpu); rebuilt
# in session 37 from main 0d6a919 (PRE and the L2 hint in; the kernels of
# 2f16129).
#   OUT=DIR BUDGET=540 scripts/h200-session34.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session34 540 .s33
carry_start .carry/s34.tar.xz
# the floor chain (session 33): every format at ctx 128 / 8192, the read
# chain and the floor chain beside the step
env M40_BENCH_GLM_FLOOR=1 M40_BENCH_GLM_PREFILL=0 timeout 150 "$B/m40-bench" chatglm2 --warmup 1 \
    --repeats 7 --sizes 128,8192 > "$O/floor.txt" 2>&1
note "floor rc=$?"
grep -E 'tokens/s|chain' "$O/floor.txt" | sed -E 's/ +/ /g' >> "$SUM"
# each int4 chain kernel under ncu (session 35 read them on an H100): its
# floor_kernel<4> launches counted too, 4 linears x 28 layers = 112 expected
# (session 34's first floor run read the int4 / int8 codes plainly)
env M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_FLOOR=1 M40_BENCH_GLM_PREFILL=0 timeout 75 ncu --graph-profiling node \
    --kernel-name regex:'floor_kernel|read_kernel' --launch-count 290 --csv --metrics \
    gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum "$B/m40-bench" chatglm2 --warmup 0 \
    --repeats 1 --sizes 128 2> "$O/ncu-chains-int4.err" | xz > "$O/ncu-chains-int4.csv.xz"
note "ncu chains rc=$? floor_kernel<4> $(xzcat "$O/ncu-chains-int4.csv.xz" | grep 'floor_kernel<4>' |
    cut -d, -f1 | sort -u | wc -l) of 112"
# one profiled step's kernels
ncu_step int4 "$B"
for i in $(seq 1 ${PATTERN_RUNS:-2}); do
    timeout 60 "$B/m40-gemv-pattern" > "$O/pattern$i.txt" 2>&1
    note "pattern $i rc=$?"
    cat "$O/pattern$i.txt" >> "$SUM"
done
TEST_TIMEOUT=${TQF_TIMEOUT:-200} gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
if [ -n "${JIT_FIRST:-}" ]; then
    JIT_TIMEOUT=$JIT_FIRST M40_ATTN_QUICK=2 jit52_tests "test_attention_gpu" "test_qlinear_fused --gpu" "test_quant_gpu"
fi
GLM_TIMEOUT=45
for i in $(seq 1 ${AB_ROUNDS:-2}); do
    [ $(left) -gt 100 ] || break
    glm_run pass1-$i "M40_BENCH_GLM_V2PASS=1" int4g128,int4 128,8192
    glm_run pass2-$i "M40_BENCH_GLM_V2PASS=2" int4g128,int4 128,8192
done
T=$(($(left) - 10))
[ -z "${JIT_FIRST:-}" ] && [ $T -gt 60 ] && JIT_TIMEOUT=$((T / 3)) M40_ATTN_QUICK=2 jit52_tests "test_attention_gpu" "test_qlinear_fused --gpu" "test_quant_gpu"
carry_end
