#!/usr/bin/env python3
"""Golden data for tests/quant/test_quant_cpu.c: the quantizer formulas of
include/m40/quant.h restated in numpy, on seeded inputs with the edge cases
(ties, odd K, partial groups, zero rows, f16-subnormal scales that need the
clamp, f16 sources).

    python3 tests/quant/make_golden.py tests/quant/quant.golden

File format (little-endian): b"M40QGLD1", int32 case count, then per case
int32 wtype, group, scale_dtype, src_dtype, N, K (dtype codes as in m40.h:
F32 0, F16 1, Q8 64, Q4 65), then the source weights (N*K f32 or f16), the
expected data bytes, the expected scale bytes (none for F16 weights) and
the expected dequantized weights (N*K f32).
"""
import struct
import sys

import numpy as np

F32, F16, Q8, Q4 = 0, 1, 64, 65


def quantize(w32, wtype, group, sdt):
    """Returns (data bytes, scale bytes, dequantized f32) for w32 [N, K]."""
    n, k = w32.shape
    if wtype == F16:
        h = w32.astype(np.float16)  # round to nearest even
        return h.tobytes(), b"", h.astype(np.float32)
    qmax = np.float32(127 if wtype == Q8 else 7)
    g = group if group else k
    ng = (k + g - 1) // g if group else 1
    sdtype = np.float16 if sdt == F16 else np.float32
    scales = np.zeros((n, ng), dtype=sdtype)
    q = np.zeros((n, k), dtype=np.int32)
    deq = np.zeros((n, k), dtype=np.float32)
    for gi in range(ng):
        k0, k1 = gi * g, min(k, gi * g + g)
        blk = w32[:, k0:k1]
        amax = np.abs(blk).max(axis=1).astype(np.float32) if k1 > k0 else np.zeros(n, np.float32)
        s = (amax / qmax).astype(np.float32)
        stored = s.astype(sdtype)
        scales[:, gi] = stored
        s_use = stored.astype(np.float32)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            qv = np.where(s_use > 0, np.rint(blk / np.where(s_use > 0, s_use, np.float32(1))),
                          np.float32(0)).astype(np.float32)
        qv = np.clip(qv, -qmax, qmax)
        q[:, k0:k1] = qv.astype(np.int32)
        deq[:, k0:k1] = (qv * s_use).astype(np.float32)
    if wtype == Q8:
        data = q.astype(np.int8).tobytes()
    else:
        qq = q
        if k % 2:
            qq = np.concatenate([q, np.zeros((n, 1), np.int32)], axis=1)
        hi = (qq[:, 0::2] & 0xF) << 4   # even column -> high nibble
        lo = qq[:, 1::2] & 0xF
        data = (hi | lo).astype(np.uint8).tobytes()
    return data, scales.tobytes(), deq


def main(path):
    rng = np.random.default_rng(20261130)
    cases = []

    def add(wtype, group, sdt, src, w):
        w = np.asarray(w, dtype=np.float32)
        if src == F16:
            w = w.astype(np.float16).astype(np.float32)
        cases.append((wtype, group, sdt, src, w))

    ties8 = np.zeros((2, 16), np.float32)
    ties8[0, :8] = [127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5]
    ties8[1, :6] = [-127, 3.5, -3.5, 4.5, 100.25, 0.0]
    ties4 = np.zeros((2, 10), np.float32)
    ties4[0, :8] = [7, 0.5, 1.5, 2.5, 3.5, -0.5, -2.5, 6.5]
    ties4[1, :5] = [-7, -3.5, 5.5, -6.5, 4.5]

    add(Q8, 0, F16, F32, rng.normal(0, 0.05, (4, 64)))
    add(Q8, 0, F32, F32, ties8)
    add(Q8, 0, F16, F32, ties8)
    add(Q4, 0, F16, F32, rng.normal(0, 0.05, (5, 64)))     # official int4 layout
    add(Q4, 0, F16, F32, rng.normal(0, 1.0, (3, 37)))      # odd K: pad nibble
    add(Q4, 0, F32, F32, ties4)
    add(Q4, 32, F32, F32, rng.normal(0, 0.02, (3, 100)))   # partial last group
    add(Q8, 64, F16, F32, rng.uniform(-3, 3, (2, 130)))
    add(Q4, 128, F16, F16, rng.normal(0, 0.1, (4, 256)))   # f16 source
    add(Q8, 128, F32, F16, rng.normal(0, 0.1, (2, 300)))
    add(Q4, 64, F32, F32, rng.normal(0, 1.0, (2, 65)))
    # zero row, tiny row (f16-subnormal scale: needs the clamp), mixed
    special = rng.normal(0, 1.0, (4, 96)).astype(np.float32)
    special[0] = 0
    special[1] *= np.float32(1e-6)
    special[2, 5] = 1e4
    add(Q8, 32, F16, F32, special)
    add(Q4, 32, F16, F32, special)
    add(Q8, 0, F16, F32, special)
    add(F16, 0, F16, F32, rng.normal(0, 1.0, (3, 33)) * np.float32(1000))
    add(F16, 0, F16, F16, rng.normal(0, 1.0, (2, 8)))

    with open(path, "wb") as f:
        f.write(b"M40QGLD1")
        f.write(struct.pack("<i", len(cases)))
        for wtype, group, sdt, src, w in cases:
            n, k = w.shape
            data, scales, deq = quantize(w, wtype, group, sdt)
            f.write(struct.pack("<6i", wtype, group, sdt, src, n, k))
            f.write(w.astype(np.float16 if src == F16 else np.float32).tobytes())
            f.write(data)
            f.write(scales)
            f.write(deq.astype(np.float32).tobytes())
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/quant/quant.golden")
