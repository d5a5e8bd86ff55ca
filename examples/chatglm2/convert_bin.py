#!/usr/bin/env python3
"""Turns THUDM's PyTorch checkpoint shards into the layout m40-chat reads.

    python3 examples/chatglm2/convert_bin.py IN_DIR OUT_DIR

IN_DIR: a Hugging Face directory of ChatGLM2-6B / ChatGLM3-6B (or their
official int8/int4 checkpoints): config.json, pytorch_model.bin or
pytorch_model-0000x-of-0000y.bin (+ pytorch_model.bin.index.json),
tokenizer.model. OUT_DIR gets model-0000x-of-0000y.safetensors (one per
input shard), model.safetensors.index.json, config.json and tokenizer.model.

Lossless: every tensor keeps its name, dtype and values (fp16 / bf16 / fp32
as stored; the quantized checkpoints' int8 `weight` [out, in] or packed int4
[out, in/2] and fp16 `weight_scale` [out] as they are). The heads are also
written into each shard's metadata, so a single file works without
config.json. Needs: pip install torch safetensors.
"""
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

META_KEYS = ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
             "multi_query_group_num", "kv_channels", "padded_vocab_size",
             "layernorm_epsilon", "rope_ratio", "seq_length", "quantization_bit")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    cfg_path = os.path.join(src, "config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
    meta = {k: str(cfg[k]) for k in META_KEYS if k in cfg}
    index = os.path.join(src, "pytorch_model.bin.index.json")
    if os.path.exists(index):
        shards = sorted(set(json.load(open(index))["weight_map"].values()))
    elif os.path.exists(os.path.join(src, "pytorch_model.bin")):
        shards = ["pytorch_model.bin"]
    else:
        sys.exit("convert_bin.py: %s has no pytorch_model.bin or its index" % src)
    weight_map, n = {}, len(shards)
    for i, shard in enumerate(shards):
        sd = torch.load(os.path.join(src, shard), map_location="cpu", weights_only=True)
        out = {}
        for name, t in sd.items():
            if not isinstance(t, torch.Tensor):
                sys.exit("convert_bin.py: %s: %s is not a tensor" % (shard, name))
            out[name] = t.contiguous()
        name = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        save_file(out, os.path.join(dst, name), metadata=meta)
        for k in out:
            weight_map[k] = name
        print("%s: %d tensors -> %s" % (shard, len(out), name))
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(dst, "model.safetensors.index.json"), "w"), indent=1)
    for f in ("config.json", "tokenizer.model", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))


if __name__ == "__main__":
    main()
