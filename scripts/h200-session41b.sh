#!/usr/bin/env bash
# Session 41, the second call: issue 17's table with the 1K rule (decode
# v5's ways with splits to 1K keys for one sequence), on whatever GPU came
# (the ratios are same-run): on an H200 the floor chain first (owed since
# session 33); then m40-bench chatglm2, every format, decode at ctx 128 /
# 1K / 8K and prefill 128 / 512 / 2048 (no read chain), with the same-run
# copy bandwidth; PyTorch FP32 (TF32 off) GlmForCausalLM on the same shapes
# (bench/bench_torch.py chatglm2, fp16 as a labelled extra when time is
# left); m40-bench int4 and int8 at ctx 128 again (drift). No peer
# (llama.cpp) this time: session 32's ratios stand for it.
# Carry [".carry/s41v.tar.xz"] (.s41v: stripped arch-90 m40-bench and tests, b6a953c).
#   OUT=DIR BUDGET=420 scripts/h200-session41b.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session41b 420 .s41v
carry_start .carry/s41v.tar.xz
floor_on_h200 .s41v
env M40_BENCH_GLM_NO_CHAIN=1 timeout 150 .s41v/m40-bench chatglm2 --warmup 1 --repeats 7 \
    --sizes 128,1024,8192 > "$O/glm-all.txt" 2>&1
note "m40 all rc=$? $(toks "$O/glm-all.txt")"
grep -E '^copy|device copy|launches per|the plan' "$O/glm-all.txt" | sed -E 's/ +/ /g' | cut -c1-170 >> "$SUM"
T=$(($(left) - 60))
[ $T -gt 60 ] && { timeout $T python3 bench/bench_torch.py chatglm2 --warmup 3 --repeats 20 \
    $([ $T -gt 200 ] && echo --chatglm2-fp16) > "$O/torch.txt" 2>&1
    note "torch rc=$?"; grep -E 'chatglm2' "$O/torch.txt" | cut -c1-200 >> "$SUM"; }
[ $(left) -gt 40 ] && glm_ab again .s41v int4,int8 128 35
carry_end
