#!/usr/bin/env bash
# Session 28, last call: the chat example's key-bound ladder (128, 256, 512,
# then powers of two; a re-captured decode graph at each step up) end to end
# on the GPU: m40-chat --ids on the tiny fixture, 20 prompt ids then 700
# greedy steps in a 1024-token cache, every position's logits against the
# CPU reference's (m40-chat --cpu, same ids): the same ids, and max |d| /
# max |ref| per row.
# Carry [".carry/s28g.tar.xz"]: .s28g/m40-chat (arch 90, this tree).
#   OUT=DIR BUDGET=120 scripts/h200-session28g.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28g 120 .s28g
carry_start .carry/s28g.tar.xz
ids=$(python3 -c "print(','.join(str((i*37+11)%300) for i in range(20)))")
for side in gpu cpu; do
    flag=""; [ $side = cpu ] && flag=--cpu
    timeout 60 .s28g/m40-chat --model tests/fixtures/chatglm2/tiny.safetensors $flag --ids $ids \
        --max-new-tokens 700 --ctx 1024 --greedy --print-ids --all-logits "$O/$side.bin" > "$O/$side.ids" 2>&1
    note "m40-chat $side rc=$?"
done
python3 - "$O" <<'PY' | tee -a "$SUM"
import sys, numpy as np
o = sys.argv[1]
g = np.fromfile(o + "/gpu.bin", dtype="<f4").reshape(-1, 300)
c = np.fromfile(o + "/cpu.bin", dtype="<f4").reshape(-1, 300)
last = lambda f: [l for l in open(f).read().splitlines() if "," in l][-1:]  # the ids line
ig, ic = last(o + "/gpu.ids"), last(o + "/cpu.ids")
n = min(len(g), len(c))
rel = np.abs(g[:n] - c[:n]).max(1) / np.abs(c[:n]).max(1)
print(f"rows gpu {len(g)} cpu {len(c)}; ids the same: {ig == ic}; max rel per row {rel.max():.3g} "
      f"(at row {int(rel.argmax())}); rows 128-140, 256-270, 512-530: {rel[128:141].max():.3g} "
      f"{rel[256:271].max():.3g} {rel[512:531].max():.3g}; rows over 1e-3: {int((rel > 1e-3).sum())}")
PY
rm -f "$O"/*.bin
carry_end
