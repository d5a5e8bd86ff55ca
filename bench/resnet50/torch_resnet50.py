#!/usr/bin/env python3
"""PyTorch side of the ResNet-50 checks, for the GPU machine.

  --weights W.safetensors --batch N --save-input IN.safetensors --save-logits REF.bin
      runs torchvision resnet50 with those weights (FP32, TF32 off, eval) on
      seeded random inputs, saves both for `resnet50 --input-tensor`.
      --chunks K: K batches of N images (generator seeds 2026, 2027, ...); each
      path then holds "{k}", replaced by the chunk number 0..K-1.
  --bench 1,8,64   images/s of PyTorch FP32 eager (TF32 off, cudnn.benchmark)
"""
import argparse
import json
import time

import torch
import torchvision
from safetensors.torch import load_file, save_file

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--save-input")
    ap.add_argument("--save-logits")
    ap.add_argument("--chunks", type=int, default=1)
    ap.add_argument("--bench", default="")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    model = torchvision.models.resnet50(weights=None)
    if a.weights:
        model.load_state_dict(load_file(a.weights))
    model = model.cuda().eval()
    if a.save_input:
        if a.chunks > 1 and not ("{k}" in a.save_input and "{k}" in a.save_logits):
            raise SystemExit("torch_resnet50.py: with --chunks, both paths need {k}")
        for k in range(a.chunks):
            g = torch.Generator().manual_seed(2026 + k)
            x = torch.randn(a.batch, 3, 224, 224, generator=g)
            with torch.no_grad():
                y = model(x.cuda()).float().cpu()
            save_file({"input": x.contiguous()}, a.save_input.replace("{k}", str(k)))
            y.numpy().tofile(a.save_logits.replace("{k}", str(k)))
        print(f"torch: saved {a.chunks} x input [{a.batch},3,224,224] and logits")
    out = {}
    for b in [int(s) for s in a.bench.split(",") if s]:
        x = torch.randn(b, 3, 224, 224, device="cuda")
        with torch.no_grad():
            for _ in range(5):
                model(x)
            torch.cuda.synchronize()
            ts = []
            for _ in range(a.repeats):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                model(x)
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e) / 1e3)
        ts.sort()
        med = ts[len(ts) // 2]
        out[b] = b / med
        print(f"torch resnet50 FP32 (TF32 off) batch {b}: median {med * 1e3:.3f} ms, {b / med:.1f} images/s")
    if out:
        print(json.dumps({"torch_images_per_s": out}))


if __name__ == "__main__":
    main()
