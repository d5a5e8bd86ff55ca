#!/usr/bin/env bash
# The closing device call of a round (issues 15 and 16), under 10 minutes:
#   1. build (arch 90, -Werror) the transformer's and the model's GPU tests
#      and m40-bench
#   2. on a quiet GPU: m40-bench attention and sample with their A/B lines
#      (M40_ATTN_AB=1, M40_SAMPLE_AB=1: the kernels' variants side by side)
#   3. compute-sanitizer memcheck, racecheck, initcheck, synccheck over the
#      GPU tests of the transformer, the model API, the communicators and
#      the fault sweep (scripts/gpu-sanitize.sh, quick modes), with what is
#      left of the budget
# Logs in $OUT; the table on stdout.
#   OUT=DIR scripts/h200-final.sh [BUILD_DIR]       (run with carry [".debs"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-final 570 "$@"
export NVIDIA_TF32_OVERRIDE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
# jansson (the ChatGLM2 example, test_glm_parallel) from carried .debs, as
# scripts/h200-transformer.sh does
if ! pkg-config --exists jansson 2>/dev/null && ls .debs/libjansson*.deb >/dev/null 2>&1; then
    for f in .debs/libjansson*.deb; do dpkg -x "$f" /; done; ldconfig
fi
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DM40_CUDA=ON -DM40_WERROR=ON -DCMAKE_BUILD_TYPE=Release > "$O/configure.log" 2>&1 || exit 1
TARGETS=(test_attention_gpu test_transformer_ops_gpu test_sample_gpu test_chatglm2 test_graph_ops
         test_fault test_glm_parallel test_comm test_chatglm2_tp test_chatglm2_split m40-bench)
cmake --build "$B" -j"$(nproc)" --target "${TARGETS[@]}" > "$O/build.log" 2>&1 \
    || { grep -E "error|FAILED" "$O/build.log" | head -20; }
stamp built
for c in attention sample; do
    [ "$(left)" -gt 360 ] || break
    stamp "m40-bench $c (A/B)"
    M40_ATTN_AB=1 M40_SAMPLE_AB=1 timeout 100 "$B/m40-bench" $c --json="$O/m40-$c.json" > "$O/m40-$c.txt" 2>&1
    echo "rc=$?"; grep -E "^(attention|sample)|target|NOT MET" "$O/m40-$c.txt" | cut -c1-180 | head -40
done
SAN_ONLY=${SAN_ONLY:-^(test_attention_gpu|test_transformer_ops_gpu|test_sample_gpu|test_gpu_chatglm2|test_gpu_chatglm2_split|test_gpu_chatglm2_tp|test_gpu_comm|test_graph_ops_gpu|test_gpu_fault|test_gpu_glm_parallel)$}
b=$(($(left) - 10))
stamp "sanitizers ($b s)"
OUT=$O/san NO_BUILD=1 ONLY="$SAN_ONLY" TOOLS="memcheck racecheck initcheck synccheck" \
    JOBS=${JOBS:-14} BUDGET=$b RUN_LIMIT=$b scripts/gpu-sanitize.sh 90 "$B" > "$O/san.txt" 2>&1
echo "rc=$?"; sed -n '/^test  /,$p' "$O/san.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
tar czf "$O/final.tgz" -C "$O" --exclude final.tgz . 2>/dev/null
stamp done
