#!/usr/bin/env bash
# Seventh session's verification call (one device call, arch 90): build; the
# GPU tests of what changed (the SGEMM's quantized-W prefill, paired prefill
# tiles); the benches side by side with PyTorch in the same run: attention
# (prefill T 512..8192 paired / unpaired, against SDPA), norm (RoPE at 64
# rows), sample (top-p), ChatGLM2-6B (decode at 128 / 1024 / 8192 with the
# read chain, prefill 128 / 512 / 2048, every format) against transformers'
# GlmForCausalLM. The summary comes last (the device tool returns the tail).
#   OUT=DIR scripts/h200-session7.sh [BUILD_DIR]      (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session7 585 "$@"
setup_arch90
cmake --build "$B" -j"$(nproc)" --target m40-bench test_attention_gpu test_transformer_ops_gpu \
    test_glm_parallel test_chatglm2 test_graph_ops test_quant_gpu test_sgemm > "$O/build.log" 2>&1
note "built rc=$? $(grep -cE ' error' "$O/build.log") errors"
TEST_TIMEOUT=120 M40_ATTN_QUICK=1 M40_QUANT_QUICK=1 gpu_tests "test_attention_gpu" \
    "test_transformer_ops_gpu" "test_glm_parallel --gpu" "test_chatglm2 --gpu" "test_graph_ops --gpu" \
    "test_sgemm" | tee -a "$SUM"
if [ "$(left)" -gt 300 ]; then
    M40_ATTN_AB=1 timeout 90 "$B/m40-bench" attention --json="$O/m40-attention.json" > "$O/m40-attention.txt" 2>&1
    note "attention rc=$?"
    grep -E "prefill T|decode ctx" "$O/m40-attention.txt" | grep -v "same FLOPs\|device copy" |
        sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*\) /\1 ms /' | cut -c1-120 | tee -a "$SUM"
    timeout 90 python3 bench/bench_torch.py attention --json "$O/torch-attention.json" > "$O/torch-attention.txt" 2>&1
    note "torch attention rc=$?"
    grep -E "prefill T|decode ctx" "$O/torch-attention.txt" | sed -E 's/ +/ /g' | cut -c1-110 | tee -a "$SUM"
fi
if [ "$(left)" -gt 240 ]; then
    timeout 40 "$B/m40-bench" norm --json="$O/m40-norm.json" > "$O/m40-norm.txt" 2>&1
    note "norm rc=$?"; grep -E "^norm" "$O/m40-norm.txt" | grep -v "device copy" | grep -E " N(1|64) " |
        sed -E 's/ +/ /g' | cut -c1-110 | tee -a "$SUM"
    timeout 40 "$B/m40-bench" sample --json="$O/m40-sample.json" > "$O/m40-sample.txt" 2>&1
    note "sample rc=$?"; grep -E "^sample 1x" "$O/m40-sample.txt" | sed -E 's/ +/ /g' | cut -c1-100 | tee -a "$SUM"
fi
if [ "$(left)" -gt 150 ]; then
    M40_BENCH_GLM_PREFILL=128,512,2048 timeout $(($(left) - 100)) "$B/m40-bench" chatglm2 --warmup 1 \
        --repeats 5 --sizes 128,1024,8192 --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
    note "chatglm2 rc=$?"
    grep -E "tokens/s|read chain ctx|launches per" "$O/m40-chatglm2.txt" | sed -E 's/ +/ /g' |
        sed -E 's/M40 projection.*//' | cut -c1-110 | tee -a "$SUM"
fi
if [ "$(left)" -gt 40 ]; then
    timeout $(($(left) - 10)) python3 bench/bench_torch.py chatglm2 --sizes-chatglm2 128,1024,8192 \
        --sizes-chatglm2-prefill 128,512,2048 --warmup 2 --repeats 8 --json "$O/torch-chatglm2.json" \
        > "$O/torch-chatglm2.txt" 2>&1
    note "torch chatglm2 rc=$?"
    grep -E "tokens/s|chatglm2" "$O/torch-chatglm2.txt" | sed -E 's/ +/ /g' | cut -c1-100 | tee -a "$SUM"
fi
if [ "$(left)" -gt 100 ]; then # the README's main job on a GPU, once (issue 17)
    BUILD=$B OUT=$O/mission timeout $(($(left) - 5)) scripts/mission.sh --quick > "$O/mission.txt" 2>&1
    note "mission.sh --quick rc=$?"; grep -vE "^$" "$O/mission.txt" | cut -c1-110 | tail -14 | tee -a "$SUM"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
