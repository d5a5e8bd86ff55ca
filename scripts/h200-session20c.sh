#!/usr/bin/env bash
# Session 20, call 3 (carry [".debs"]): issue 16's speed table in one run:
# m40-bench attention (decode 1K / 8K / 32K, prefill 512 / 2048 / 8192; the
# defaults, key shares by the rule) and PyTorch's FP32 SDPA (TF32 off; its
# default backend and its math backend) at the same shapes, same call.
#   OUT=DIR scripts/h200-session20c.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session20c 400 "$@"
build_arch90 m40-bench
timeout 150 "$B/m40-bench" attention --sizes 1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
note "attention rc=$?"
grep -E "^attention (decode|prefill)|target" "$O/attention.txt" | sed -E 's/ +/ /g; s/\(min.*\)//; s/max_rel_err.*//' >> "$SUM"
timeout $(($(left) - 10)) python3 bench/bench_torch.py attention > "$O/torch-attention.txt" 2>&1
note "torch attention rc=$?"
grep -E "prefill T|decode ctx|kernels:" "$O/torch-attention.txt" | sed -E 's/ +/ /g; s/\(min.*\)//' | cut -c1-200 >> "$SUM"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
rm -f "$O"/*.json "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
