#!/usr/bin/env python3
"""Compares our ResNet-50 logits with PyTorch's.

    compare_logits.py OURS.bin REF.bin [--md FILE] [--tol 1e-3] [--min-top5 0.99]

Both files: raw little-endian float32 [N,1000] (N images in the same order).
Relative error of an image = max_j |ours_j - ref_j| / max_j |ref_j| (the logit
vector's max-norm error over its max-norm); the worst image is reported.
Top-5: the same five classes (order ignored; "ordered" also counts order).
An image whose top-5 differs is listed with the reference's gap between its
5th and 6th logit, to tell a near-tie from a real disagreement.
Exit 0 when the worst relative error < --tol and the top-5 fraction >= --min-top5.
"""
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("ref")
    ap.add_argument("--md", help="append a markdown summary here")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--min-top5", type=float, default=0.0)
    a = ap.parse_args()
    ours = np.fromfile(a.ours, dtype=np.float32).reshape(-1, 1000).astype(np.float64)
    ref = np.fromfile(a.ref, dtype=np.float32).reshape(-1, 1000).astype(np.float64)
    if ours.shape != ref.shape:
        sys.exit(f"compare_logits.py: {ours.shape[0]} vs {ref.shape[0]} images")
    n = len(ref)
    rel = np.abs(ours - ref).max(axis=1) / np.abs(ref).max(axis=1)
    order_o, order_r = np.argsort(-ours, axis=1), np.argsort(-ref, axis=1)
    same_set = np.array([set(o[:5]) == set(r[:5]) for o, r in zip(order_o, order_r)])
    same_ord = np.array([(o[:5] == r[:5]).all() for o, r in zip(order_o, order_r)])
    same_top1 = order_o[:, 0] == order_r[:, 0]
    worst = int(rel.argmax())
    frac = same_set.mean()
    lines = [f"logits: {n} images; relative error max_j|ours-ref| / max_j|ref| per image: "
             f"worst {rel.max():.3g} (image {worst}), median {np.median(rel):.3g}, mean {rel.mean():.3g}",
             f"top-5 identical (as sets): {same_set.sum()}/{n} = {100 * frac:.2f}%; in the same order: "
             f"{same_ord.sum()}/{n}; top-1: {same_top1.sum()}/{n}"]
    for i in np.nonzero(~same_set)[0]:
        r = ref[i][order_r[i]]
        lines.append(f"  image {i}: ours {order_o[i][:5].tolist()} ref {order_r[i][:5].tolist()}; ref gap "
                     f"5th-6th {r[4] - r[5]:.3g}, max |ours-ref| {np.abs(ours[i] - ref[i]).max():.3g}")
    ok = rel.max() < a.tol and frac >= a.min_top5
    lines.append(f"check: worst relative error < {a.tol:g} and top-5 >= {100 * a.min_top5:g}%: "
                 f"{'PASS' if ok else 'FAIL'}")
    print("\n".join(lines))
    if a.md:
        with open(a.md, "a") as f:
            f.write("\n## Logits vs PyTorch FP32 (TF32 off)\n\n")
            f.write("\n".join(("- " + x if not x.startswith("  ") else "  - " + x.strip()) for x in lines))
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
