#!/usr/bin/env python3
"""Export torchvision's ResNet-50 weights to safetensors for examples/resnet50.

    pip install torch torchvision safetensors
    python3 export_torchvision.py resnet50.safetensors            # IMAGENET1K_V1 weights
    python3 export_torchvision.py --weights IMAGENET1K_V2 out.safetensors
    python3 export_torchvision.py --random --seed 0 random.safetensors  # no download

Tensor names are torchvision's state_dict names (conv1.weight, bn1.running_mean,
layer1.0.conv1.weight, ..., fc.weight); BatchNorm stays unfolded (libm40 folds it
at load time). The ImageNet class names go into the file's metadata as
"categories" (newline-separated) when pretrained weights are used.
"""
import argparse

import torch
import torchvision
from safetensors.torch import save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--weights", default="IMAGENET1K_V1")
    ap.add_argument("--random", action="store_true", help="seeded random weights, no download")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    meta = {"format": "pt", "model": "torchvision.resnet50"}
    if a.random:
        torch.manual_seed(a.seed)
        model = torchvision.models.resnet50(weights=None)
        meta["weights"] = f"random seed {a.seed}"
    else:
        w = torchvision.models.ResNet50_Weights[a.weights]
        model = torchvision.models.resnet50(weights=w)
        meta["weights"] = a.weights
        meta["categories"] = "\n".join(w.meta["categories"])
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(sd, a.out, metadata=meta)
    print(f"wrote {a.out}: {len(sd)} tensors")


if __name__ == "__main__":
    main()
