#!/usr/bin/env python3
"""Hugging Face-style checkpoint directories from the tiny fixture, with
the standard library only (CI has no PyTorch): the safetensors file split
into two shards + model.safetensors.index.json + config.json (ChatGLM2's
keys), and broken copies for the loader's messages.
    python3 tests/chatglm2/make_dirs.py OUT
writes OUT/good, OUT/bad_config, OUT/missing_shard, OUT/truncated,
OUT/bin_only (a PyTorch-shard directory, which must be converted first),
and one directory per other refusal (main() names each).
    python3 tests/chatglm2/make_dirs.py --edit-saved SAVED OUT
writes broken copies of an int4g128 model that m40-chat --save wrote."""
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


def read(path, meta=None):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    m = head.pop("__metadata__", None)
    if meta is not None and m:
        meta.update(m)
    data = raw[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items()}


def write(path, tensors, meta=None):
    head, blobs, off = ({"__metadata__": meta} if meta else {}), [], 0
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


def single_dir(out, edit, config=CONFIG, meta_edit=None):
    """OUT: model.safetensors, the fixture after edit(tensors), and config.json
    (config None: none; the file's metadata, after meta_edit, says it all)."""
    os.makedirs(out, exist_ok=True)
    meta = {}
    t = read(SRC, meta)
    edit(t)
    if meta_edit:
        meta.update(meta_edit)
    write(os.path.join(out, "model.safetensors"), t, meta)
    if config:
        json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)


def official_int4(t):
    """The four linears of every layer as THUDM's int4 checkpoints store
    them: I8 [out, in/2] (two codes a byte, the first in the low nibble) and
    F16 .weight_scale [out] (max |w| / 7 a row)."""
    for k in [k for k in t if k.endswith(("query_key_value.weight", "dense.weight",
                                           "dense_h_to_4h.weight", "dense_4h_to_h.weight"))]:
        dt, (n, kk), b = t[k]
        w = struct.unpack("<%de" % (n * kk), b)
        codes, scales = bytearray(), []
        for r in range(n):
            row = w[r * kk:(r + 1) * kk]
            sc = max(abs(v) for v in row) / 7 or 1.0
            sc = struct.unpack("<e", struct.pack("<e", sc))[0]
            q = [max(-7, min(7, round(v / sc))) & 15 for v in row] + [0] * (kk % 2)
            codes += bytes(q[i] | q[i + 1] << 4 for i in range(0, len(q), 2))
            scales.append(sc)
        t[k] = ("I8", [n, (kk + 1) // 2], bytes(codes))
        t[k[:-len("weight")] + "weight_scale"] = ("F16", [n], struct.pack("<%de" % n, *scales))


def refusals(out):
    """Directories the loader must refuse, each for one reason."""
    # an index that names a shard outside the directory
    d = os.path.join(out, "shard_path")
    shard_dir(d, CONFIG)
    ip = os.path.join(d, "model.safetensors.index.json")
    idx = json.load(open(ip))
    idx["weight_map"] = {k: ("../good/" + v if v.startswith("model-00002") else v)
                         for k, v in idx["weight_map"].items()}
    json.dump(idx, open(ip, "w"))
    os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))
    # 257 shards, the first 256 there (valid, empty): one over the cap
    d = os.path.join(out, "many_shards")
    os.makedirs(d)
    json.dump(CONFIG, open(os.path.join(d, "config.json"), "w"))
    for i in range(256):
        write(os.path.join(d, "s%03d.safetensors" % i), {})
    json.dump({"weight_map": {"t%d" % i: "s%03d.safetensors" % i for i in range(257)}},
              open(os.path.join(d, "model.safetensors.index.json"), "w"))
    # config values out of range: 2^32 + 128 would be 128 as a C int; an
    # epsilon of 0.75; a vocabulary and heads that disagree with the tensors
    shard_dir(os.path.join(out, "hidden_wrap"), dict(CONFIG, hidden_size=2 ** 32 + 128))
    shard_dir(os.path.join(out, "bad_eps"), dict(CONFIG, layernorm_epsilon=0.75))
    shard_dir(os.path.join(out, "bad_vocab"), dict(CONFIG, padded_vocab_size=301))
    shard_dir(os.path.join(out, "bad_heads"), dict(CONFIG, num_attention_heads=2))
    # quantization_bit: 4 over fp16 tensors, and a width the format has not
    shard_dir(os.path.join(out, "qbits_fp16"), dict(CONFIG, quantization_bit=4))
    shard_dir(os.path.join(out, "qbits_3"), dict(CONFIG, quantization_bit=3))
    # an official int4 checkpoint: loads with quantization_bit 4, refused with 8
    single_dir(os.path.join(out, "good_int4"), official_int4, dict(CONFIG, quantization_bit=4))
    single_dir(os.path.join(out, "qbits_8_int4"), official_int4, dict(CONFIG, quantization_bit=8))
    # a norm weight one element short, and the same one as [128, 1]
    norm = "transformer.encoder.layers.0.input_layernorm.weight"

    def short(t):
        dt, shape, b = t[norm]
        t[norm] = (dt, [shape[0] - 1], b[:-2])

    def two_d(t):
        dt, shape, b = t[norm]
        t[norm] = (dt, [shape[0], 1], b)
    single_dir(os.path.join(out, "norm_short"), short)
    single_dir(os.path.join(out, "norm_2d"), two_d)
    # no config.json: the metadata's epsilon of 0.7 is out of range
    single_dir(os.path.join(out, "meta_eps"), lambda t: None, None, {"layernorm_epsilon": "0.7"})
    # a tensor of a layer the model does not have (a layer split must still see it)
    d = os.path.join(out, "extra_layer")
    shard_dir(d, CONFIG)
    p = os.path.join(d, "model-00002-of-00002.safetensors")
    t = read(p)
    t["transformer.encoder.layers.7.mlp.extra"] = ("F16", [2], b"\0" * 4)
    write(p, t)
    ip = os.path.join(d, "model.safetensors.index.json")
    idx = json.load(open(ip))
    idx["weight_map"]["transformer.encoder.layers.7.mlp.extra"] = "model-00002-of-00002.safetensors"
    json.dump(idx, open(ip, "w"))


def edit_saved(saved, out):
    """Broken copies of a saved int4g128 model: a scale of BF16 (same bytes),
    and codes one column short."""
    w = "transformer.encoder.layers.0.self_attention.dense.weight"
    for name, fix in (("saved_scale_bf16", lambda t: t.__setitem__(w + "_scale", ("BF16",) + t[w + "_scale"][1:])),
                      ("saved_codes_short", None)):
        meta = {}
        t = read(saved, meta)
        if fix:
            fix(t)
        else:
            dt, (r, k), b = t[w]
            t[w] = (dt, [r, k - 1], b"".join(b[i * k:i * k + k - 1] for i in range(r)))
        write(os.path.join(out, name + ".safetensors"), t, meta)


def main():
    if sys.argv[1] == "--edit-saved":
        edit_saved(sys.argv[2], sys.argv[3])
        return
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
    refusals(out)


if __name__ == "__main__":
    main()
