#!/usr/bin/env bash
# Session 40: decode v5's ways with splits of the keys (m40k_attn_shape::
# v5_wsplits, lib/ops/attention.c's m40__attn_v5_wsplits): each (b, g, RB
# rows) block group takes n splits of the keys, each block's fold a partial
# for attn_combine. The lead of session 39's item 4: the step grows 0.175 ms
# a token from ctx 128 to 1K (H100), where v6 + attn_combine run; the ways
# with 4 splits were predicted ~1.9 us a layer faster (int4 +2.7% at 1K).
# In order: on an H200 the floor chain (owed since session 33); int4 and
# int8 decode at ctx 1K (and 2K) ROUNDS times (2): v6 (the rule today), the
# ways (16, 1) past the edge with the rule's splits (4 at 1K, 8 at 2K), the
# ways with 8 and 2 splits, (8, 2) with 8, (4, 4) with 16 (these once); then
# test_attention_gpu (quick 1), test_quant_gpu (quick 1; the double-buffer
# rule now the chooser's, wip/s40-db) and test_chatglm2 --gpu; the sm_52
# build's test_attention_gpu and test_quant_gpu through PTX JIT
# (.carry/s40j.tar.xz: .jit52/, CUDA 11.8 sm_52 builds of the three tests);
# test_qlinear_fused --gpu; then with time left ncu over the attention
# kernels of an int4 step at 128 and 1K.
# Carry [".carry/s40.tar.xz", ".carry/s40j.tar.xz"] (.s40: stripped arch-90 m40-bench,
# test_attention_gpu, test_qlinear_fused, test_chatglm2, test_quant_gpu).
#   OUT=DIR BUDGET=460 scripts/h200-session40.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session40 460 .s40
carry_start .carry/s40.tar.xz
floor_on_h200 .s40
W=M40_BENCH_GLM_V5WAYS_KEYS=2048
for i in $(seq 1 ${ROUNDS:-2}); do
    [ $(left) -gt 200 ] || break
    glm_ab v6-$i .s40 int4,int8 1024,2048 60
    M40_BENCH_GLM_V5WAYS_KEYS=2048 glm_ab ways-rule-$i .s40 int4,int8 1024,2048 60
    [ $i = 1 ] || continue # the other forms once
    M40_BENCH_GLM_V5WAYS_KEYS=2048 M40_BENCH_GLM_V5WSPLITS=8 glm_ab ways-s8-$i .s40 int4 1024 40
    M40_BENCH_GLM_V5WAYS_KEYS=2048 M40_BENCH_GLM_V5WSPLITS=2 glm_ab ways-s2-$i .s40 int4 1024 40
    M40_BENCH_GLM_V5WAYS_KEYS=2048 M40_BENCH_GLM_V5WAYS=1 M40_BENCH_GLM_V5WSPLITS=8 glm_ab w82-s8-$i .s40 int4 1024 40
    M40_BENCH_GLM_V5WAYS_KEYS=2048 M40_BENCH_GLM_V5WAYS=3 M40_BENCH_GLM_V5WSPLITS=16 glm_ab w44-s16-$i .s40 int4 1024 40
done
B=.s40
M40_ATTN_QUICK=1 TEST_TIMEOUT=$(( $(left) > 260 ? 150 : $(left) / 2 - 20 )) gpu_tests "test_attention_gpu" | tee -a "$SUM"
[ $(left) -gt 100 ] && M40_QUANT_QUICK=1 TEST_TIMEOUT=60 gpu_tests "test_quant_gpu" "test_chatglm2 --gpu" | tee -a "$SUM"
if [ $(left) -gt 140 ] && tar xJf .carry/s40j.tar.xz; then
    JIT_TIMEOUT=$(( $(left) > 170 ? 150 : $(left) - 20 )) jit52_tests "test_attention_gpu"
    [ $(left) -gt 80 ] && JIT_TIMEOUT=60 jit52_tests "test_quant_gpu"
fi
[ $(left) -gt 200 ] && TEST_TIMEOUT=170 gpu_tests "test_qlinear_fused --gpu" | tee -a "$SUM"
if [ $(left) -gt 60 ]; then
    env $W M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_NO_CHAIN=1 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 \
        timeout $(($(left) - 10)) ncu --profile-from-start off --graph-profiling node --kernel-name regex:attn \
        --launch-count 120 --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum \
        .s40/m40-bench chatglm2 --warmup 1 --repeats 2 --sizes 128,1024 2> "$O/ncu-attn.err" |
        xz > "$O/ncu-attn.csv.xz"
    note "ncu attention 128 / 1K (the ways with the rule's splits at 1K) rc=$?"
fi
carry_end
