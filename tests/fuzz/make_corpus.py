#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets under tests/fuzz/corpus/<target>/
(make_corpus.sh runs this, then make_seeds_jpeg.c for the JPEG seeds).
The seeds are small valid (and a few nearly valid) inputs from which
libFuzzer mutates; the files are committed so CI runs from fixed seeds."""
import json, os, struct, sys, zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(ROOT, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- safetensors -----------------------------------------------------------
def st_file(tensors, meta=None, extra=b""):
    hdr, blob = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dtype, shape, data in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    j = json.dumps(hdr, separators=(",", ":")).encode()
    return struct.pack("<Q", len(j)) + j + blob + extra


put("safetensors", "small", open(os.path.join(ROOT, "..", "fixtures", "safetensors", "small.safetensors"), "rb").read())
put("safetensors", "three", st_file([("w", "F32", [2, 2], b"\0" * 16), ("b", "F16", [2], b"\0" * 4),
                                     ("ids", "I32", [], b"\1\0\0\0")], {"format": "pt", "k": "v"}))
put("safetensors", "empty", st_file([]))
put("safetensors", "zero_dim", st_file([("e", "U8", [0, 3], b""), ("x", "BF16", [1, 1, 1], b"\0\0")]))
_twice = b'{"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}'
put("safetensors", "listed_twice", struct.pack("<Q", len(_twice)) + _twice + b"\0")

# ---- images ----------------------------------------------------------------
def png(w, h, color_type, bit_depth, rows, plte=None, trns=None):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    raw = b"".join(b"\0" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    if plte:
        out += chunk(b"PLTE", plte)
    if trns:
        out += chunk(b"tRNS", trns)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


put("image", "rgb3x2.png", png(3, 2, 2, 8, [bytes(range(9)), bytes(range(9, 18))]))
put("image", "gray4x4.png", png(4, 4, 0, 8, [bytes([i * 16 + j for j in range(4)]) for i in range(4)]))
put("image", "rgba2x2_16.png", png(2, 2, 6, 16, [bytes(range(16)), bytes(range(16, 32))]))
put("image", "pal2x2.png", png(2, 2, 3, 8, [b"\0\1", b"\1\0"], plte=b"\xff\0\0\0\xff\0", trns=b"\x80"))
put("image", "a.ppm", b"P6\n# seed\n2 2\n255\n" + bytes(range(12)))
put("image", "a.pgm", b"P5\n3 1\n65535\n" + bytes(range(6)))
put("image", "ascii.ppm", b"P3\n2 1\n15\n0 1 2  15 14 13\n")
put("image", "ascii.pgm", b"P2 2 2 255 0 64 128 255")

# ---- JSON ------------------------------------------------------------------
put("json", "header", b'{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}')
put("json", "nested", b'[[[[[[{"a":[1,2,{"b":null}]}]]]]],true,false,null,-0,1.5e-3,"x"]')
put("json", "strings", b'{"esc":"\\"\\\\\\/\\b\\f\\n\\r\\t","u":"\\u00e9\\ud83d\\ude00","raw":"\xc3\xa9"}')
put("json", "numbers", b'[0,-1,9223372036854775807,-9223372036854775807,1e400,0.0001,12345678901234567890]')
put("json", "config", b'{"hidden_size":4096,"num_layers":28,"rope":{"theta":10000.0},"eos":[2,3]}')

# ---- graph programs (the byte layout fuzz_graph.c reads) --------------------
F32, F16, I8, I32 = 0, 2, 3, 4          # indexes into fuzz_graph.c's dtypes[]
WEIGHT, INPUT, ACT, STATE = 0, 1, 2, 3
OPS = ["add", "mul", "scale", "activation", "softmax", "convert", "linear", "linear_q", "conv2d",
       "pool2d", "rmsnorm", "layernorm", "embedding", "swiglu", "attention", "take_last"]
PARAM_EDGE = [0, 1, 2, 3, 4, 7, 8, -1, -2, 64, 128, 1 << 16, 1 << 30, 2**31 - 1, -2**31]


def p_int(v):  # a param() byte giving v
    if 0 <= v < 6:
        return bytes([v])
    return bytes([next(b for b in range(160, 256) if b % len(PARAM_EDGE) == PARAM_EDGE.index(v))])


def tensor(role, dtype, shape, named=True):  # small extents only (< 9)
    return bytes([role, dtype, len(shape), 0]) + bytes(shape) + bytes([1 if named else 0])


def node(op, inputs, which=0, params=b""):
    ins = [i + 2 for i in inputs] + [1] * (6 - len(inputs))  # 1 -> M40_NO_TENSOR
    return bytes([OPS.index(op), len(inputs) + 1]) + bytes(ins) + bytes([0, which]) + params


def program(tensors, nodes, outputs, budget=b"\x01\x00"):
    return (bytes([len(tensors) - 1]) + b"".join(tensors) + bytes([len(nodes)]) + b"".join(nodes) +
            bytes([len(outputs)]) + bytes(outputs) + budget)


put("graph", "linear", program([tensor(INPUT, F32, [2, 8]), tensor(WEIGHT, F32, [4, 8]), tensor(WEIGHT, F32, [4])],
                               [node("linear", [0, 1, 2])], [3]))
conv_p = b"".join(p_int(k) + p_int(s) + p_int(pd) for k, s, pd in [(3, 1, 1), (3, 1, 1)])
pool_p = b"".join(p_int(k) + p_int(s) + p_int(pd) for k, s, pd in [(2, 2, 0), (2, 2, 0)]) + p_int(1) + b"\x00"
put("graph", "conv_pool", program([tensor(INPUT, F32, [1, 3, 8, 8]), tensor(WEIGHT, F32, [4, 3, 3, 3])],
                                  [node("conv2d", [0, 1], 8, conv_p), node("pool2d", [2], 8 | 16, pool_p)], [3]))
put("graph", "chain", program([tensor(INPUT, F32, [2, 3, 4]), tensor(WEIGHT, F32, [4])],
                              [node("add", [0, 1]), node("activation", [2], 4, b"\x01"), node("softmax", [3]),
                               node("scale", [4], 2, b"\x04\x03")], [5], b"\x02\x00\x00\x10\x00\x08"))
put("graph", "norms", program([tensor(INPUT, F32, [2, 8]), tensor(WEIGHT, F32, [8]), tensor(WEIGHT, F32, [8])],
                              [node("rmsnorm", [0, 1]), node("layernorm", [3, 1, 2]), node("swiglu", [4]),
                               node("convert", [5], 1, b"\x02")], [6], b"\x00"))
att_p = p_int(2) + p_int(1) + p_int(8) + p_int(8)
put("graph", "attention", program([tensor(INPUT, F32, [1, 4, 8, 4]), tensor(STATE, F32, [1, 8, 1, 8]),
                                   tensor(STATE, F32, [1, 8, 1, 8]), tensor(INPUT, I32, [1])],
                                  [node("attention", [0, 1, 2, 3], 32, att_p), node("take_last", [4])], [5]))
put("graph", "embedding", program([tensor(INPUT, I32, [2, 3]), tensor(WEIGHT, F32, [8, 4]),
                                   tensor(WEIGHT, I8, [4, 4]), tensor(WEIGHT, F16, [4])],
                                  [node("embedding", [0, 1]), node("linear_q", [4, 2, 3], 64, p_int(8) + b"\x00")],
                                  [5], b"\x01\x01"))

# ---- tokenizer (selector byte 0: a model, 1: text for the fixture model) ---
fix = os.path.join(ROOT, "..", "fixtures", "tokenizer")
put("tokenizer", "model-bpe_bf", b"\0" + open(os.path.join(fix, "bpe_bf.model"), "rb").read() +
    b"\xff\x00Hello \xe4\xbd\xa0\xe5\xa5\xbd \xff!")
put("tokenizer", "text-hello", b"\x01Hello world, \xe4\xbd\xa0\xe5\xa5\xbd!")
put("tokenizer", "text-bytes", b"\x01\x00\x01\xff\xfe\x80 \xf0\x9f\x98\x80  tabs\tand\nnewlines")
print("corpus written to", OUT)
