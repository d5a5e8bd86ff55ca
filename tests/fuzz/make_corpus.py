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

# ---- ChatGLM2 checkpoints (the layout fuzz_chatglm2.c reads) --------------
# 8 control bytes (format, flags, tokens, perturbation, 4 ids), then one or
# more .safetensors files separated by SEP. The models are the fixture's
# (tests/fixtures/chatglm2/tiny.safetensors: names, fp16, heads in the
# metadata) shrunk to a few KB so the fuzzer runs hundreds of loads a second:
# the values are the fixture's own, the first elements of each tensor.
FP32, FP16, INT8, INT4, INT4G128 = range(5)
CHECK, PERTURB, DECODE_TOO, ALL_LOGITS, BUDGET, RAW_IDS, DECODE, SHARDS = (1 << i for i in range(8))
SEP = b"<m40-shard>"


def st_read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in head.items()}


FIXTURE = st_read(os.path.join(ROOT, "..", "fixtures", "chatglm2", "tiny.safetensors"))


def h2f(b):
    return list(struct.unpack("<%de" % (len(b) // 2), b))


def glm(L, C, F, V, H, G, D, dtype="F16", quant=None, meta=True, extra=False):
    """name -> (dtype, shape, bytes); quant: None, 'int8', 'int4', 'int4g128'
    (the official layout: I8 codes + F16 .weight_scale)."""
    src = iter(h2f(FIXTURE["transformer.encoder.layers.0.self_attention.query_key_value.weight"][2]) * 4)
    norm = iter(h2f(FIXTURE["transformer.encoder.layers.0.input_layernorm.weight"][2]) * 64)
    pack = {"F16": "<%de", "F32": "<%df"}

    def fl(shape, it, dt=dtype):
        n = 1
        for x in shape:
            n *= x
        vals = [next(it) for _ in range(n)]
        if dt == "BF16":
            return ("BF16", shape, b"".join(struct.pack("<f", v)[2:] for v in vals))
        return (dt, shape, struct.pack(pack[dt] % n, *vals))

    def lin(t, name, N, K):
        w = fl([N, K], src)
        if not quant:
            t[name + ".weight"] = w
            return
        assert dtype == "F16"
        vals = h2f(w[2])
        qmax = 127 if quant == "int8" else 7
        gsz = 128 if quant == "int4g128" else K
        ng = (K + gsz - 1) // gsz
        codes, scales = [], []
        for r in range(N):
            row = vals[r * K:(r + 1) * K]
            for gi in range(ng):
                part = row[gi * gsz:(gi + 1) * gsz]
                sc = max(abs(v) for v in part) / qmax or 1.0
                scales.append(sc)
            rc = [max(-qmax, min(qmax, round(v / scales[r * ng + c // gsz]))) for c, v in enumerate(row)]
            if quant == "int8":
                codes += [c & 0xFF for c in rc]
            else:
                rc += [0] * (len(rc) % 2)
                codes += [(rc[i] & 15) | (rc[i + 1] & 15) << 4 for i in range(0, len(rc), 2)]
        kq = K if quant == "int8" else (K + 1) // 2
        t[name + ".weight"] = ("I8", [N, kq], bytes(codes))
        t[name + ".weight_scale"] = ("F16", [N, ng] if quant == "int4g128" else [N],
                                     struct.pack("<%de" % len(scales), *scales))

    t = {"transformer.embedding.word_embeddings.weight": fl([V, C], src)}
    for l in range(L):
        p = "transformer.encoder.layers.%d." % l
        t[p + "input_layernorm.weight"] = fl([C], norm)
        lin(t, p + "self_attention.query_key_value", (H + 2 * G) * D, C)
        t[p + "self_attention.query_key_value.bias"] = fl([(H + 2 * G) * D], src)
        lin(t, p + "self_attention.dense", C, H * D)
        t[p + "post_attention_layernorm.weight"] = fl([C], norm)
        lin(t, p + "mlp.dense_h_to_4h", 2 * F, C)
        lin(t, p + "mlp.dense_4h_to_h", C, F)
    t["transformer.encoder.final_layernorm.weight"] = fl([C], norm)
    t["transformer.output_layer.weight"] = fl([V, C], src)
    if extra:
        t["transformer.rotary_pos_emb.inv_freq"] = fl([D // 4], src, "F32")
        t["extra.tokenizer.model"] = ("I8", [5], b"\x0a\x03abc")
    m = {"num_attention_heads": str(H), "multi_query_group_num": str(G), "kv_channels": str(D),
         "layernorm_epsilon": "1e-05", "rope_ratio": "1"} if meta else None
    return t, m


def st_bytes(t, meta=None):
    return st_file([(k, dt, shape, b) for k, (dt, shape, b) in t.items()], meta)


def glm_seed(name, fmt, flags, files, tb=2, pb=0, ids=b"\x05\x01\x0b\x03"):
    put("chatglm2", name, bytes([fmt, flags, tb, pb]) + ids + SEP.join(files))


SMALL = dict(L=2, C=8, F=6, V=16, H=2, G=1, D=4)
t, m = glm(**SMALL)
glm_seed("fp16-as-fp16", FP16, CHECK | DECODE_TOO, [st_bytes(t, m)], tb=1 | 8)
glm_seed("fp16-as-fp32", FP32, ALL_LOGITS, [st_bytes(t, m)])
glm_seed("fp16-as-int8", INT8, CHECK | DECODE, [st_bytes(t, m)])
glm_seed("fp16-as-int4", INT4, DECODE_TOO, [st_bytes(t, m)], tb=3)
glm_seed("fp16-as-int4g128", INT4G128, CHECK | SHARDS, [st_bytes(t, m)])
glm_seed("fp16-budget", FP16, BUDGET, [st_bytes(t, m)], pb=3)
glm_seed("fp16-perturbed", FP16, CHECK | PERTURB, [st_bytes(t, m)], pb=4)
glm_seed("fp16-raw-ids", FP16, RAW_IDS, [st_bytes(t, m)], ids=b"\x7f\xff\x10\x00")
t32, m32 = glm(dtype="F32", extra=True, **SMALL)
glm_seed("fp32-as-int4", INT4, CHECK, [st_bytes(t32, m32)])
tbf, mbf = glm(dtype="BF16", **SMALL)
glm_seed("bf16-as-fp16", FP16, 0, [st_bytes(tbf, mbf)])
for q, f in (("int8", INT8), ("int4", INT4), ("int4g128", INT4G128)):
    tq, mq = glm(quant=q, **SMALL)
    glm_seed("official-" + q, f, CHECK | DECODE_TOO, [st_bytes(tq, mq)])
glm_seed("official-int8-as-fp16", FP16, 0, [st_bytes(glm(quant="int8", **SMALL)[0], m)])
# shards: the tensors in name order, split in two (as an index would), the
# metadata on the first; and three shards of an official int8 checkpoint
names = sorted(t)
half = len(names) // 2
glm_seed("shards-2", FP16, CHECK | DECODE_TOO,
         [st_bytes({k: t[k] for k in names[:half]}, m), st_bytes({k: t[k] for k in names[half:]})])
tq, mq = glm(quant="int8", extra=True, **SMALL)
nq = sorted(tq)
glm_seed("shards-3-int8", INT8, CHECK, [st_bytes({k: tq[k] for k in nq[i::3]}, mq if i == 0 else None)
                                        for i in range(3)])
# ChatGLM2's geometry in small: H·D != C, two KV groups, head_dim 8, one layer
tg, mg = glm(L=1, C=16, F=20, V=24, H=4, G=2, D=8, extra=True)
glm_seed("geometry", FP16, CHECK | ALL_LOGITS | DECODE_TOO, [st_bytes(tg, mg)], tb=3 | 16)
# no metadata: ChatGLM2-6B's heads (32 of 128 over 2 groups) on hidden 1
t6, _ = glm(L=1, C=1, F=1, V=2, H=32, G=2, D=128, meta=False)
glm_seed("defaults-6b-heads", FP16, 0, [st_bytes(t6)], tb=0)

# ---- ChatGLM2 directories (the layout fuzz_chatglm2_dir.c reads) ----------
# 6 control bytes (format, flags, ctx/chunk, 3 ids), then config.json,
# model.safetensors.index.json and the shards m1/m2/m3.safetensors,
# separated by PART (flags 1: config.json written, 2: the index written,
# else the first shard is model.safetensors; 4 all_logits, 8 a decode step).
PART = b"<m40-part>"
CFG_KEYS = dict(model_type="chatglm", num_layers=2, hidden_size=8, ffn_hidden_size=6,
                num_attention_heads=2, multi_query_attention=True, multi_query_group_num=1,
                kv_channels=4, padded_vocab_size=16, layernorm_epsilon=1e-5, seq_length=32,
                torch_dtype="float16", rope_ratio=1)


def dir_seed(name, fmt, flags, config, shards, ctx=0x3f, ids=b"\x02\x07\x03", meta=None):
    index = b""
    if flags & 2:
        wm = {k: "m%d.safetensors" % (i + 1) for i, sh in enumerate(shards) for k in sh}
        index = json.dumps({"metadata": {"total_size": 0}, "weight_map": wm}, indent=1).encode()
    parts = [json.dumps(config, indent=1).encode() if config is not None else b"", index]
    parts += [st_bytes(sh, meta if i == 0 else None) for i, sh in enumerate(shards)]
    put("chatglm2_dir", name, bytes([fmt, flags, ctx]) + ids + PART.join(parts))


dir_seed("config-index-2", FP16, 1 | 2 | 8, CFG_KEYS,
         [{k: t[k] for k in names[:half]}, {k: t[k] for k in names[half:]}])
dir_seed("config-single", INT8, 1 | 4, CFG_KEYS, [t])
dir_seed("config-official-int4", INT4, 1 | 8, dict(CFG_KEYS, quantization_bit=4), [glm(quant="int4", **SMALL)[0]])
dir_seed("index-3-no-config", INT4G128, 2 | 8, None, [{k: t[k] for k in names[i::3]} for i in range(3)],
         meta=m)
dir_seed("config-mha", FP32, 1 | 2, dict(CFG_KEYS, multi_query_attention=False, num_attention_heads=1,
                                          kv_channels=4), [glm(L=2, C=8, F=6, V=16, H=1, G=1, D=4)[0]])

# ---- tokenizer (selector byte 0: a model, 1: text for the fixture model) ---
fix = os.path.join(ROOT, "..", "fixtures", "tokenizer")
put("tokenizer", "model-bpe_bf", b"\0" + open(os.path.join(fix, "bpe_bf.model"), "rb").read() +
    b"\xff\x00Hello \xe4\xbd\xa0\xe5\xa5\xbd \xff!")
put("tokenizer", "text-hello", b"\x01Hello world, \xe4\xbd\xa0\xe5\xa5\xbd!")
put("tokenizer", "text-bytes", b"\x01\x00\x01\xff\xfe\x80 \xf0\x9f\x98\x80  tabs\tand\nnewlines")
# ---- server_request (control byte: 1 ChatGLM3, 2/4 the context 2/64/8192/
# 4194304 tokens, 8 a long model name; then the body; 0xF0..0xFF: bytes for
# srv_utf8_repair) -------------------------------------------------------------
GLM2_8K, GLM3_8K, GLM2_64, GLM3_64 = 4, 5, 2, 3


def req(name, ctl, body):
    put("server_request", name, bytes([ctl]) + (body if isinstance(body, bytes) else
                                                 json.dumps(body, ensure_ascii=False).encode()))


def um(text):
    return [{"role": "user", "content": text}]


chat = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."}, {"role": "developer", "content": "be nice"},
        {"role": "user", "content": [{"type": "text", "text": "中文"}, {"type": "text", "text": " ok"}]}]
full = {"model": "tiny", "messages": chat, "stream": True, "stream_options": {"include_usage": True},
        "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "repetition_penalty": 1.1,
        "stop": ["\n\n", "END"], "seed": -42, "n": 1, "presence_penalty": 0.5,
        "frequency_penalty": -0.5, "max_completion_tokens": None, "user": "ignored"}
req("ok-glm2-full", GLM2_8K, full)
req("ok-glm3-full", GLM3_8K, full)
req("ok-glm2-min", GLM2_8K, {"messages": um("hi")})
req("ok-glm3-min-4m", 7, {"messages": um("hi"), "max_completion_tokens": 4194303, "stop": "x"})
req("ok-glm3-longname", GLM3_8K | 8, {"model": None, "messages": um("😀 \u00e9 \t")})
req("ok-glm2-assistant-first", GLM2_64, {"messages": [{"role": "assistant"}, {"role": "user", "content": ""},
                                                      {"role": "user", "content": "again"}]})
req("ok-top_p-0", GLM2_8K, {"messages": um("x"), "top_p": 0, "temperature": 2, "top_k": 16777216})
req("bad-context-64", GLM3_64, {"messages": um("中文" * 40)})
req("bad-context-2", 1, {"messages": um("a")})
req("bad-json", GLM2_8K, b'{"messages": [')
req("bad-not-object", GLM2_8K, b"[1, 2]")
req("bad-empty", GLM2_8K, b"")
req("bad-duplicate", GLM2_8K, b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max_tokens":2}')
req("bad-utf8", GLM2_8K, b'{"messages":[{"role":"user","content":"\xff\xfe\xc3("}]}')
req("bad-nul", GLM3_8K, b'{"messages":[{"role":"user","content":"a\\u0000b"}]}')
req("bad-surrogate", GLM2_8K, b'{"messages":[{"role":"user","content":"\\ud800"}]}')
req("bad-big-int", GLM2_8K, b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":1180591620717411303424}')
req("bad-model", GLM2_8K, {"model": "gpt-4", "messages": um("hi")})
req("bad-model-type", GLM2_8K, {"model": 3, "messages": um("hi")})
req("bad-last-assistant", GLM3_8K, {"messages": [{"role": "user", "content": "a"},
                                                 {"role": "assistant", "content": "b"}]})
req("bad-role", GLM2_8K, {"messages": [{"role": "tool", "content": "hi"}]})
req("bad-content", GLM2_8K, {"messages": [{"role": "user", "content": 5}]})
req("bad-part", GLM2_8K, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})
req("bad-stop-5", GLM2_8K, {"messages": um("hi"), "stop": ["a", "b", "c", "d", "e"]})
req("bad-stop-empty", GLM2_8K, {"messages": um("hi"), "stop": [""]})
req("bad-stop-long", GLM2_8K, {"messages": um("hi"), "stop": "s" * 257})
req("bad-stream-options", GLM2_8K, {"messages": um("hi"), "stream_options": {"include_usage": 1}})
req("bad-temperature", GLM2_8K, {"messages": um("hi"), "temperature": 1e9})
req("bad-seed", GLM2_8K, {"messages": um("hi"), "seed": 0.5})
req("bad-n", GLM2_8K, {"messages": um("hi"), "n": 2})
req("bad-messages-empty", GLM2_8K, {"messages": []})
req("bad-messages-missing", GLM2_8K, {"model": "tiny"})
req("bad-model-cut", GLM2_8K | 8, {"model": "x" + "模型" * 100, "messages": um("hi")})
req("bad-json-half-char", GLM3_8K, b'{"messages": [{"role": "user\\\xe9\x97\xae", "content": "x"}]}')
put("server_request", "repair-mixed", b"\xf0" + "ok 中文 😀".encode() + b" \xff \xc0\x80 \xed\xa0\x80 \xf4\x90\x80\x80 \xe4\xb8")
print("corpus written to", OUT)
