#!/usr/bin/env python3
"""A THUDM-style directory from the tiny fixture, for convert_bin.py and the
directory loader: config.json (ChatGLM2's keys) and the weights as two
PyTorch shards with pytorch_model.bin.index.json.
    python3 tests/chatglm2/make_hf_dir.py OUT_DIR
Needs torch and safetensors."""
import json
import os
import sys

import torch
from safetensors.torch import load_file

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
sd = load_file(os.path.join(os.path.dirname(__file__), "../fixtures/chatglm2/tiny.safetensors"))
cfg = {"model_type": "chatglm", "num_layers": 2, "hidden_size": 128, "ffn_hidden_size": 200,
       "num_attention_heads": 4, "multi_query_attention": True, "multi_query_group_num": 2,
       "kv_channels": 128, "padded_vocab_size": 300, "layernorm_epsilon": 1e-5,
       "seq_length": 256, "torch_dtype": "float16"}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
names = sorted(sd)
halves = [names[: len(names) // 2], names[len(names) // 2:]]
wm = {}
for i, part in enumerate(halves):
    fn = "pytorch_model-%05d-of-00002.bin" % (i + 1)
    torch.save({k: sd[k] for k in part}, os.path.join(out, fn))
    wm.update({k: fn for k in part})
json.dump({"metadata": {}, "weight_map": wm},
          open(os.path.join(out, "pytorch_model.bin.index.json"), "w"))
