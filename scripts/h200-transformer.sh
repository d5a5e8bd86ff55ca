#!/usr/bin/env bash
# The transformer ops (issue 16) on the GPU machine in one call: build the
# targets (arch 90, -Werror), run their GPU tests, memcheck them, and the
# benches side by side with the same-run copy and PyTorch. Everything lands
# in $OUT (logs, JSON).
#   OUT=DIR scripts/h200-transformer.sh [BUILD_DIR]
# STEPS="test san chat bench torch versions" picks steps (default: all);
# BENCHES="copy attention norm sample chatglm2" the m40-bench workloads;
# EXTRA_TARGETS more targets to build (ALL: the whole tree, for the
# sanitizer and soak scripts that run after this one with NO_BUILD=1).
# jansson (m40-chat) and libmicrohttpd (m40-server) are not on that
# machine's image: where .debs/ holds libjansson4, libjansson-dev,
# libmicrohttpd12 and libmicrohttpd-dev (apt-get download, here; carry
# .debs), they are unpacked.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
O=${OUT:-/tmp/h200-transformer}
STEPS=${STEPS:-test san chat bench torch versions}
BENCHES=${BENCHES:-copy attention norm sample chatglm2}
mkdir -p "$O"
t0=$SECONDS
stamp() { echo "==== [$((SECONDS - t0)) s] $*"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
export NVIDIA_TF32_OVERRIDE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv | tee "$O/nvidia-smi.csv"
if ! pkg-config --exists jansson 2>/dev/null && ls .debs/libjansson*.deb >/dev/null 2>&1; then
    for f in .debs/libjansson*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# libmicrohttpd (m40-server) likewise, from .debs/libmicrohttpd*.deb
if ! pkg-config --exists libmicrohttpd 2>/dev/null && ls .debs/libmicrohttpd*.deb >/dev/null 2>&1; then
    for f in .debs/libmicrohttpd*.deb; do dpkg -x "$f" /; done; ldconfig
fi
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
TARGETS=(test_attention_gpu test_transformer_ops_gpu test_sample_gpu test_attention
         test_transformer_ops test_sample test_graph_ops test_chatglm2 m40-chat m40-bench
         m40-attn-versions)
TARGETS+=(${EXTRA_TARGETS:-})
stamp "build ${TARGETS[*]}"
cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DM40_CUDA=ON -DM40_WERROR=ON -DCMAKE_BUILD_TYPE=Release > "$O/configure.log" 2>&1 \
    || { tail -20 "$O/configure.log"; exit 1; }
for t in "${TARGETS[@]}"; do
    tt=(--target "$t"); [ "$t" = ALL ] && tt=()
    cmake --build "$B" -j"$(nproc)" "${tt[@]}" >> "$O/build.log" 2>&1 \
        || { echo "BUILD FAILED: $t"; grep -E "error|FAILED" "$O/build.log" | tail -15; }
done
stamp built
if has test; then
    LIST=(test_attention test_transformer_ops test_sample test_attention_gpu
          test_transformer_ops_gpu test_sample_gpu "test_graph_ops --gpu" "test_chatglm2 --gpu"
          "m40-attn-versions --check")
    IFS=';' read -ra ext <<< "${EXTRA_TESTS:-}"   # EXTRA_TESTS="prog args;prog args"
    for t in "${LIST[@]}" "${ext[@]}"; do
        set -- $t
        [ -x "$B/$1" ] || { echo "MISSING $1"; continue; }
        s=$SECONDS
        timeout 120 "$B/$1" "${@:2}" > "$O/$1.log" 2>&1; rc=$?
        echo "$t rc=$rc ($((SECONDS - s)) s): $(grep -E "passed|failed|checks" "$O/$1.log" | tail -1)"
        [ $rc = 0 ] || grep -E "FAIL|CHECK failed|returned" "$O/$1.log" | head -20
    done
fi
if has chat && [ -x "$B/m40-chat" ]; then
    stamp "m40-chat on the GPU (tiny fixture, greedy; transformers' ids: 55,243,243,243,243,243,50,60,53,5,243,287)"
    for d in fp32 fp16 int8 int4 int4g128; do
        ids=$(timeout 60 "$B/m40-chat" --model tests/fixtures/chatglm2/tiny.safetensors --dtype $d \
              --ids 64,17,250,3,99,42,7,128,5,211,33 --max-new-tokens 12 --greedy --print-ids \
              --chunk 4 --ctx 128 2> "$O/m40-chat-$d.err"); echo "$d rc=$? ids=$ids"
    done
fi
if has san && command -v compute-sanitizer >/dev/null; then
    stamp "memcheck"
    for t in test_attention_gpu test_transformer_ops_gpu test_sample_gpu; do
        [ -x "$B/$t" ] || continue
        M40_QUICK=1 timeout 150 compute-sanitizer --report-api-errors no --error-exitcode 9 \
            "$B/$t" > "$O/$t.memcheck.log" 2>&1
        echo "memcheck $t rc=$? $(grep -E "ERROR SUMMARY" "$O/$t.memcheck.log" | tail -1)"
    done
fi
if has bench; then
    for c in $BENCHES; do
        stamp "m40-bench $c"
        timeout 240 "$B/m40-bench" "$c" --json="$O/m40-$c.json" > "$O/m40-$c.txt" 2>&1
        echo "rc=$?"; cut -c1-160 "$O/m40-$c.txt" | grep -vE "^\s*$" | head -40
    done
fi
if has torch; then
    stamp "PyTorch attention (FP32, TF32 off)"
    timeout 150 python3 bench/bench_torch.py attention --json "$O/torch-attention.json" 2>&1 | tail -20
    stamp "PyTorch ChatGLM2 (GlmForCausalLM, 6B shape, FP32, TF32 off)"
    timeout 240 python3 bench/bench_torch.py chatglm2 --repeats 10 --json "$O/torch-chatglm2.json" 2>&1 | tail -24
fi
if has versions && [ -x "$B/m40-attn-versions" ]; then
    stamp "attention versions"
    timeout 150 "$B/m40-attn-versions" > "$O/attn-versions.txt" 2>&1; echo "rc=$?"
    tail -40 "$O/attn-versions.txt"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
stamp done
