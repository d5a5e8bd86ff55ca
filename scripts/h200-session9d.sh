#!/usr/bin/env bash
# Ninth session, the closing measurement (arch 90): m40-bench chatglm2 over
# the four formats (decode at ctx 128 and 8192, prefill 512, the read
# chain), then (unless SKIP_TORCH) PyTorch's GlmForCausalLM FP32 (TF32 off) on the same GPU.
# A peer (llama.cpp, built beside the project and never committed) may run
# in the same call before it; its numbers go in its own files.
#   OUT=DIR scripts/h200-session9d.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session9d 300 "$@"
[ -z "${SKIP_BUILD:-}" ] && build_arch90 m40-bench
M40_BENCH_GLM_PREFILL=512 timeout $(($(left) - 60)) "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 \
    --sizes ${GLM_SIZES:-128,8192} --json="$O/m40-chatglm2.json" > "$O/m40-chatglm2.txt" 2>&1
note "chatglm2 rc=$?"
grep -E "tokens/s|launches per|read chain ctx|x device copy" "$O/m40-chatglm2.txt" | sed -E 's/ +/ /g; s/M40 projection.*//; s/\(min.*\)//' |
    cut -c1-120 >> "$SUM"
if [ -z "${SKIP_TORCH:-}" ] && [ "$(left)" -gt 50 ] && python3 -c "import torch, transformers" 2>/dev/null; then
    timeout $(($(left) - 5)) python3 bench/bench_torch.py chatglm2 --warmup 2 --repeats 8 --sizes-chatglm2 128 \
        --sizes-chatglm2-prefill 512 --json "$O/torch-chatglm2.json" > "$O/torch-chatglm2.txt" 2>&1
    note "torch rc=$? $(grep -E 'tokens/s' "$O/torch-chatglm2.txt" | sed -E 's/ +/ /g' | tr '\n' ' ' | cut -c1-200)"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
