#!/usr/bin/env python3
"""Compares our ResNet-50 logits with PyTorch's: max relative error
(max |ours - ref| / max |ref| per image) and top-5 agreement."""
import sys

import numpy as np

ours = np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, 1000)
ref = np.fromfile(sys.argv[2], dtype=np.float32).reshape(-1, 1000)
rel = np.abs(ours - ref).max(axis=1) / np.abs(ref).max(axis=1)
top_same = [set(np.argsort(-o)[:5]) == set(np.argsort(-r)[:5]) for o, r in zip(ours, ref)]
print(f"logits: {len(ref)} images, max relative error {rel.max():.3g} (mean {rel.mean():.3g}); "
      f"identical top-5 on {sum(top_same)}/{len(ref)}")
sys.exit(0 if rel.max() < 1e-3 else 1)
