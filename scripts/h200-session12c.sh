#!/usr/bin/env bash
# Twelfth session, call 3 (arch 90): RoPE's θ table kept per host thread
# (kernels/rope_math.cuh) -- the RoPE and attention tests, then m40-bench
# norm twice (per call and in a graph; compare call 1's RoPE N64 0.758x).
#   OUT=DIR scripts/h200-session12c.sh [BUILD_DIR]   (carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session12c 400 "$@"
build_arch90 m40-bench test_transformer_ops_gpu test_attention_gpu
TEST_TIMEOUT=120 gpu_tests "test_transformer_ops_gpu" "test_attention_gpu" | tee -a "$SUM" >/dev/null
for r in a b; do
    timeout 90 "$B/m40-bench" norm --sizes 1,64,512 --json="$O/norm-$r.json" > "$O/norm-$r.txt" 2>&1
    note "norm $r rc=$?"
    grep -E "^norm (rope|rmsnorm) N(1|64|512) " "$O/norm-$r.txt" | sed -E 's/ +/ /g; s/\(min[^)]*\)//' >> "$SUM"
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
