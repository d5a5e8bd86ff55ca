#!/usr/bin/env python3
"""Hugging Face-style checkpoint directories from the tiny fixture, with
the standard library only (CI has no PyTorch): the safetensors file split
into two shards + model.safetensors.index.json + config.json (ChatGLM2's
keys), and broken copies for the loader's messages.
    python3 tests/chatglm2/make_dirs.py OUT
writes OUT/good, OUT/bad_config, OUT/missing_shard, OUT/truncated,
OUT/bin_only (a PyTorch-shard directory, which must be converted first)."""
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "fixtures", "chatglm2", "tiny.safetensors")
CONFIG = {"model_type": "chatglm", "num_layers": 2, "hidden_size": 128, "ffn_hidden_size": 200,
          "num_attention_heads": 4, "multi_query_attention": True, "multi_query_group_num": 2,
          "kv_channels": 128, "padded_vocab_size": 300, "layernorm_epsilon": 1e-5,
          "seq_length": 256, "torch_dtype": "float16"}


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    data = raw[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items()}


def write(path, tensors):
    head, blobs, off = {}, [], 0
    for k, (dt, shape, b) in tensors.items():
        head[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(head).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def shard_dir(out, config):
    os.makedirs(out, exist_ok=True)
    t = read(SRC)
    names = sorted(t)
    wm = {}
    for i, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        fn = "model-%05d-of-00002.safetensors" % (i + 1)
        write(os.path.join(out, fn), {k: t[k] for k in part})
        wm.update({k: fn for k in part})
    json.dump({"metadata": {}, "weight_map": wm},
              open(os.path.join(out, "model.safetensors.index.json"), "w"))
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    shard_dir(os.path.join(out, "good"), CONFIG)
    shard_dir(os.path.join(out, "bad_config"), dict(CONFIG, ffn_hidden_size=256))
    shard_dir(os.path.join(out, "missing_shard"), CONFIG)
    os.remove(os.path.join(out, "missing_shard", "model-00002-of-00002.safetensors"))
    shard_dir(os.path.join(out, "truncated"), CONFIG)
    p = os.path.join(out, "truncated", "model-00001-of-00002.safetensors")
    os.truncate(p, os.path.getsize(p) // 2)
    os.makedirs(os.path.join(out, "bin_only"))
    open(os.path.join(out, "bin_only", "pytorch_model.bin"), "wb").write(b"PK")


if __name__ == "__main__":
    main()
