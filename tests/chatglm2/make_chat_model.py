#!/usr/bin/env python3
"""A chat-sized test model for m40-chat, made with the standard library only:
a SentencePiece tokenizer with ChatGLM2's id layout and a tiny random-weight
ChatGLM2 whose vocabulary covers the real 65024 ids.

    python3 tests/chatglm2/make_chat_model.py OUT_DIR [--chatglm3] [--6b]

OUT_DIR gets tokenizer.model, config.json and model.safetensors (fp16,
hidden 64, 2 layers: ~17 MB; --6b: ChatGLM2-6B's shape, 12.5 GB, for the
GPU runs). Deterministic: the same bytes every run.

The tokenizer (a BPE ModelProto written field by field, byte fallback on) has
64789 pieces like ChatGLM2's: <unk> 0, <s> 1, </s> 2, the byte pieces
<0x00>..<0xFF> at 3..258 (so "\\n" is 13), "▁" at 30910, ASCII and a few
chat words, every CJK ideograph U+4E00..U+9FFF, then two-character pieces.
Emoji and CJK extension A are not pieces: they encode as byte pieces. The
ChatGLM2 specials (64789..64793) and ChatGLM3's role tokens (64794..64797)
are not pieces either, as in the real tokenizer: the program adds them by id.
The model's ids 64789..65023 have no piece at all.

The output layer favours byte pieces and two-character pieces, so a random
model streams a mix of CJK text and raw bytes (split characters, U+FFFD) and
now and then an id with no piece: what the streaming decoder must survive."""
import json
import math
import os
import random
import struct
import sys

N_PIECES = 64789
VOCAB = 65024


# ---- protobuf, just what ModelProto needs ---------------------------------
def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_int(num, v):
    return varint(num << 3) + varint(v)


def field_float(num, v):
    return varint(num << 3 | 5) + struct.pack("<f", v)


def make_pieces():
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    pieces += [("<0x%02X>" % b, 0.0, 6) for b in range(256)]
    seen = {p[0] for p in pieces}
    normal = []

    def add(s):
        if s not in seen:
            seen.add(s)
            normal.append(s)

    for c in range(0x21, 0x7F):
        add(chr(c))
    for w in ["▁[", "Round", "▁Round", "Ro", "Rou", "Roun", "ou", "un", "nd", "▁H", "He",
              "ll", "llo", "Hello", "▁Hello", "▁w", "or", "orld", "▁world", "ld",
              "问：", "答：", "你好", "世界", "中文", "，", "。", "！", "？", "：", "；"]:
        add(w)
    cjk = [chr(c) for c in range(0x4E00, 0xA000)]
    for c in cjk:
        add(c)
    rng = random.Random(18)
    while len(pieces) + len(normal) + 1 < N_PIECES:  # +1: "▁" at 30910
        add(rng.choice(cjk) + rng.choice(cjk))
    at = 30910 - len(pieces)
    normal.insert(at, "▁")
    assert "▁" not in normal[:at] and len(pieces) + len(normal) == N_PIECES
    # BPE merges by score: longer and earlier pieces first, like a trained model
    for i, s in enumerate(normal):
        pieces.append((s, -float(i), 1))
    return pieces


def tokenizer_bytes():
    out = bytearray()
    for text, score, typ in make_pieces():
        sp = field_bytes(1, text.encode()) + field_float(2, score)
        if typ != 1:
            sp += field_int(3, typ)
        out += field_bytes(1, sp)
    trainer = (field_int(3, 2) + field_int(4, N_PIECES) + field_int(35, 1) +
               field_int(40, 0) + field_int(41, 1) + field_int(42, 2) + field_int(43, -1))
    normalizer = (field_bytes(1, b"identity") + field_int(3, 1) + field_int(4, 0) +
                  field_int(5, 1))
    out += field_bytes(2, trainer) + field_bytes(3, normalizer)
    return bytes(out)


# ---- the model ----------------------------------------------------------------
CFG = dict(num_layers=2, hidden_size=64, ffn_hidden_size=128, num_attention_heads=2,
           multi_query_attention=True, multi_query_group_num=1, kv_channels=32,
           padded_vocab_size=VOCAB, layernorm_epsilon=1e-5, seq_length=2048,
           torch_dtype="float16", model_type="chatglm")


def f16_random(rng, n, exp_lo, exp_hi):
    """n random fp16 values with a random sign, exponent in [exp_lo, exp_hi]
    (biased) and mantissa: |x| spread over 2^(e-15)..2^(e-14)."""
    if n > 1 << 24:  # the 6B shape: 32 MB of fresh values, tiled at random offsets
        base = f16_random(rng, 1 << 24, exp_lo, exp_hi)
        data = bytearray()
        while len(data) < 2 * n:
            off = 2 * rng.randrange(1 << 24)
            data += base[off:] + base[:off]
        del data[2 * n:]
        return data
    data = bytearray(rng.randbytes(2 * n))
    span = exp_hi - exp_lo + 1
    table = bytes((b & 0x83) | ((exp_lo + ((b >> 2) & 31) % span) << 2) for b in range(256))
    data[1::2] = data[1::2].translate(table)
    return data


def f16_const(n, v):
    return struct.pack("<e", v) * n


SHAPE_6B = dict(num_layers=28, hidden_size=4096, ffn_hidden_size=13696, num_attention_heads=32,
                multi_query_group_num=2, kv_channels=128)


def model_tensors(c):
    """(name, shape, make) for every tensor; make(rng) gives its fp16 bytes.
    Weights scale as 1/sqrt(fan-in) (exponent ranges below), so that a deep
    random model's activations stay finite in fp16."""
    C, F, H, G, D, V = (c["hidden_size"], c["ffn_hidden_size"], c["num_attention_heads"],
                        c["multi_query_group_num"], c["kv_channels"], VOCAB)

    def lin(fan_in):  # |w| up to ~ 1/sqrt(fan_in): exponents 9..12 at fan-in 64
        e = 12 + math.floor(math.log2(8.0 / math.sqrt(fan_in)) + 0.5 + 1e-9)
        return (e - 3, e)

    t = [("transformer.embedding.word_embeddings.weight", [V, C],
          lambda r: f16_random(r, V * C, 10, 13))]
    for i in range(c["num_layers"]):
        p = "transformer.encoder.layers.%d." % i
        Q = (H + 2 * G) * D
        t += [(p + "input_layernorm.weight", [C], lambda r: f16_const(C, 1.0)),
              (p + "self_attention.query_key_value.weight", [Q, C],
               lambda r, Q=Q: f16_random(r, Q * C, *lin(C))),
              (p + "self_attention.query_key_value.bias", [Q], lambda r, Q=Q: f16_random(r, Q, 8, 10)),
              (p + "self_attention.dense.weight", [C, H * D], lambda r: f16_random(r, C * H * D, *lin(H * D))),
              (p + "post_attention_layernorm.weight", [C], lambda r: f16_const(C, 1.0)),
              (p + "mlp.dense_h_to_4h.weight", [2 * F, C], lambda r: f16_random(r, 2 * F * C, *lin(C))),
              (p + "mlp.dense_4h_to_h.weight", [C, F], lambda r: f16_random(r, C * F, *lin(F)))]
    t.append(("transformer.encoder.final_layernorm.weight", [C], lambda r: f16_const(C, 1.0)))

    # rows of the output layer: byte pieces and the CJK pairs get larger
    # weights (larger logits), the rest small, so sampling picks them often
    def out(r):
        o = bytearray()
        b = 13 + round(math.log2(8.0 / math.sqrt(C)))  # 13 at C = 64
        for lo, hi, e in [(0, 3, (b - 3, b - 1)), (3, 259, (b, b + 1)), (259, 30000, (b - 3, b - 1)),
                          (30000, 64789, (b - 1, b + 1)), (64789, V, (b, b + 1))]:
            o += f16_random(r, (hi - lo) * C, *e)
        return o
    t.append(("transformer.output_layer.weight", [V, C], out))
    return t


def write_safetensors(path, tensors, meta, rng):
    head = {"__metadata__": meta}
    off = 0
    for name, shape, _ in tensors:
        n = 2 * math.prod(shape)
        head[name] = {"dtype": "F16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    hj = json.dumps(head, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for name, shape, make in tensors:  # one tensor in memory at a time
            data = make(rng)
            assert len(data) == 2 * math.prod(shape), name
            f.write(data)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    glm3 = "--chatglm3" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.model"), "wb") as f:
        f.write(tokenizer_bytes())
    cfg = dict(CFG)
    if "--6b" in sys.argv[2:]:
        cfg.update(SHAPE_6B)
    cfg["_name_or_path"] = "THUDM/chatglm3-6b" if glm3 else "THUDM/chatglm2-6b"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    meta = {k: str(cfg[k]) for k in ("kv_channels", "num_attention_heads",
                                      "multi_query_group_num", "layernorm_epsilon")}
    write_safetensors(os.path.join(out, "model.safetensors"), model_tensors(cfg), meta,
                      random.Random(1818))


if __name__ == "__main__":
    main()
