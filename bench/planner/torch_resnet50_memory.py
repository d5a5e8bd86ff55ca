#!/usr/bin/env python3
"""Peak device memory of PyTorch ResNet-50 inference, to set beside the plan
of `m40-plan --model resnet50 --batch N`.

torchvision resnet50 (random weights), eval(), torch.no_grad(), FP32 with
TF32 off, batch 1 and 64 (or --batch ...). For each batch it resets the peak
counters and reports torch.cuda.max_memory_allocated() for a first forward
(cuDNN picks algorithms and workspaces) and a second one (steady state), the
bytes allocated before the forward (weights + input), and the peak minus
those (activations + workspaces). Prints one JSON object.

If torchvision is missing, an equivalent ResNet-50 v1.5 defined here is used
(same layers and parameter count); the JSON says which.
"""
import argparse
import json
import sys

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)  # v1.5
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if downsample:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4))

    def forward(self, x):
        idn = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + idn)


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for i, (n, w) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
            blocks = []
            for j in range(n):
                blocks.append(Bottleneck(cin, w, 2 if (j == 0 and i > 0) else 1, j == 0))
                cin = w * 4
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device"}))
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    try:
        import torchvision
        model, source = torchvision.models.resnet50(weights=None), "torchvision " + torchvision.__version__
    except Exception:  # noqa: BLE001 - any import problem means "use ours"
        model, source = ResNet50(), "bench/planner ResNet50 (torchvision not installed)"
    dev = torch.device("cuda")
    model = model.to(dev).eval()
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    out = {
        "source": source, "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0),
        "dtype": "float32", "tf32": False, "params": params,
        "param_bytes": params * 4, "buffer_bytes": buffers, "runs": {},
    }
    for b in args.batch:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        x = torch.randn(b, 3, 224, 224, device=dev)
        base = torch.cuda.memory_allocated()
        r = {"input_bytes": x.numel() * 4, "allocated_before_bytes": base}
        for name in ("first", "steady"):
            torch.cuda.reset_peak_memory_stats()
            with torch.no_grad():
                y = model(x)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
            r[name] = {"max_memory_allocated": peak, "peak_minus_before": peak - base,
                       "max_memory_reserved": torch.cuda.max_memory_reserved()}
            del y
        out["runs"][str(b)] = r
        del x
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
