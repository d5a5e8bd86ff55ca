#!/usr/bin/env bash
# The mission in one screen, after scripts/run.sh has built build/ (issue 17's
# "README main job"): on a GPU, ResNet-50 images/s and ChatGLM2-6B tokens/s
# (random weights in the 6B shape; a real checkpoint too with --model PATH),
# each beside PyTorch FP32 (TF32 off) when torch, torchvision and transformers
# import; without a GPU, the ChatGLM2 geometry on a 2-layer model on the CPU
# reference, with the notice. Results (JSON, and compare.md when PyTorch ran)
# go to $OUT (default build/mission).
#   scripts/mission.sh [--model PATH [--dtype int4|int8|fp16]] [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
O=${OUT:-$B/mission}
MODEL="" DTYPE=int4 QUICK=0
while [ $# -gt 0 ]; do
    case "$1" in
    --model) MODEL=${2:?--model PATH}; shift 2 ;;
    --dtype) DTYPE=${2:?--dtype int4|int8|fp16}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "usage: scripts/mission.sh [--model PATH [--dtype int4|int8|fp16]] [--quick]" >&2; exit 2 ;;
    esac
done
mkdir -p "$O"
[ -x "$B/m40-bench" ] || { echo "mission: no $B/m40-bench (run scripts/run.sh first)" >&2; exit 1; }
REP=$([ $QUICK = 1 ] && echo 3 || echo 10)
"$B/m40-bench" copy --sizes 16 --warmup 1 --repeats 2 --no-telemetry > "$O/probe.txt" 2>&1
probe=$?
if [ $probe = 77 ]; then
    echo
    echo "NOTICE: no usable GPU here. What follows runs on the CPU reference: ChatGLM2's geometry"
    echo "NOTICE: (query heads over 2 KV groups, head dim 128, RoPE on half of it) in a 2-layer, 128-wide model."
    echo "NOTICE: These are CPU numbers, not an M40's; ResNet-50 on the reference takes ~45 s an image."
    "$B/m40-bench" chatglm2 --cpu --sizes 16,64 --warmup 1 --repeats 3 --no-telemetry \
        --json="$O/m40-chatglm2-cpu.json" 2>&1 | grep -E "^chatglm2|tokens/s" | cut -c1-110
    exit 0
fi
[ $probe = 0 ] || { cat "$O/probe.txt" >&2; exit 1; }
echo
echo "== ResNet-50, random weights, FP32 (libm40, NHWC): images/s at batch 1 and 64"
"$B/m40-bench" resnet50 --sizes 1,64 --layout nhwc --warmup 2 --repeats "$REP" \
    --json="$O/m40-resnet50.json" 2>&1 | grep -E "images/s" | sed -E 's/^ +//'
echo
echo "== ChatGLM2-6B shape, random weights: decode tokens/s at context 128, prefill of 512 tokens"
M40_BENCH_GLM_FORMATS=fp16,int8,int4 M40_BENCH_GLM_PREFILL=512 "$B/m40-bench" chatglm2 --sizes 128 --warmup 1 \
    --repeats "$([ $QUICK = 1 ] && echo 3 || echo 5)" --json="$O/m40-chatglm2.json" 2>&1 |
    grep -E "^chatglm2 [a-z0-9]+ (decode|prefill)|tokens/s" | sed -E 's/ +/ /g' | cut -c1-120
if python3 -c "import torch, torchvision, transformers" 2>/dev/null; then
    echo
    echo "== PyTorch on the same GPU (FP32, TF32 off): ResNet-50 batch 1 and 64, GlmForCausalLM decode at 128"
    NVIDIA_TF32_OVERRIDE=0 python3 bench/bench_torch.py resnet50,chatglm2 --sizes-resnet50 1,64 \
        --sizes-chatglm2 128 --warmup 2 --repeats "$REP" --json "$O/torch.json" 2>&1 |
        grep -E "images/s|tokens/s|bench_torch" | sed -E 's/^ +//'
    python3 bench/compare.py "$O/m40-resnet50.json" "$O/m40-chatglm2.json" "$O/torch.json" \
        --out "$O" > /dev/null 2>&1 && echo "side by side: $O/compare.md"
else
    echo
    echo "(PyTorch with torchvision and transformers is not installed here: no side-by-side baseline;"
    echo " bench/bench_torch.py resnet50,chatglm2 runs it where it is.)"
fi
if [ -n "$MODEL" ]; then
    echo
    echo "== $MODEL ($DTYPE): one answer, greedy, 128 tokens"
    "$B/m40-chat" --model "$MODEL" --dtype "$DTYPE" --prompt "用三句话介绍一下你自己。" --greedy \
        --max-new-tokens 128 --json --quiet > "$O/chat.json" 2> "$O/chat.err" ||
        { tail -3 "$O/chat.err"; exit 1; }
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    l = l.strip()
    if not l.startswith("{"): continue
    o = json.loads(l)
    print("prefill %.1f tok/s, decode %.1f tok/s: %s" % (o.get("prefill_tok_s", 0), o.get("decode_tok_s", 0), o.get("answer", "")[:200]))' "$O/chat.json"
fi
