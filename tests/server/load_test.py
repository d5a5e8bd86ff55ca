#!/usr/bin/env python3
"""The load test of issue 19: concurrent streaming clients against m40-server.

    load_test.py --server BIN --model PATH [--dtype int8] [--clients 1,4,8,16]
                 [--requests-per-client 4] [--max-tokens 128] [--ctx 2048]
                 [--parallel 16] [--turns N] [--soak SECONDS] [--json OUT.json]
                 [--extra "server args"]
    load_test.py --server BIN --random-weights 6b --tokenizer FILE [...]   # no checkpoint
    load_test.py --make-6b DIR        # a 6B-shaped random ChatGLM2 (fp16, ~12.5 GB)

For each client count: every client sends its requests one after another
(streaming, greedy, max_tokens each), and the run reports aggregate decode
tok/s (content chunks of all clients / wall time), p50/p99 time to first
token (request sent → first content chunk), p50/p99 inter-token latency
(between content chunks of one stream), errors, and the GPU's used memory
before and after (nvidia-smi; flat expected). --soak S: 8 clients for S
seconds, memory sampled every 10 s. Each content chunk is one token or more
(held-back bytes of a character come together), so the token counts here are
chunks; usage.completion_tokens of each stream gives the exact count and is
used for tok/s. Standard library only."""
import argparse
import http.client
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def make_6b(out):
    sys.path.insert(0, os.path.join(HERE, "..", "chatglm2"))
    import random
    import make_chat_model as mk
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.model"), "wb") as f:
        f.write(mk.tokenizer_bytes())
    cfg = dict(mk.CFG, num_layers=28, hidden_size=4096, ffn_hidden_size=13696,
               num_attention_heads=32, multi_query_group_num=2, kv_channels=128, seq_length=32768)
    cfg["_name_or_path"] = "THUDM/chatglm2-6b"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    C, F, H, G, D, V = (cfg["hidden_size"], cfg["ffn_hidden_size"], cfg["num_attention_heads"],
                        cfg["multi_query_group_num"], cfg["kv_channels"], mk.VOCAB)
    shapes = {"transformer.embedding.word_embeddings.weight": ([V, C], (10, 13))}
    for i in range(cfg["num_layers"]):
        p = "transformer.encoder.layers.%d." % i
        shapes[p + "input_layernorm.weight"] = ([C], None)
        shapes[p + "self_attention.query_key_value.weight"] = ([(H + 2 * G) * D, C], (7, 10))
        shapes[p + "self_attention.query_key_value.bias"] = ([(H + 2 * G) * D], (6, 8))
        shapes[p + "self_attention.dense.weight"] = ([C, H * D], (7, 10))
        shapes[p + "post_attention_layernorm.weight"] = ([C], None)
        shapes[p + "mlp.dense_h_to_4h.weight"] = ([2 * F, C], (7, 10))
        shapes[p + "mlp.dense_4h_to_h.weight"] = ([C, F], (7, 10))
    shapes["transformer.encoder.final_layernorm.weight"] = ([C], None)
    shapes["transformer.output_layer.weight"] = ([V, C], (8, 11))
    meta = {k: str(cfg[k]) for k in ("kv_channels", "num_attention_heads",
                                      "multi_query_group_num", "layernorm_epsilon")}
    head, off = {"__metadata__": meta}, 0
    for name, (shape, _) in shapes.items():
        n = 2
        for d in shape:
            n *= d
        head[name] = {"dtype": "F16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    hj = json.dumps(head, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    rng = random.Random(1818)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj)
        for name, (shape, e) in shapes.items():
            n = 1
            for d in shape:
                n *= d
            if e is None:
                f.write(mk.f16_const(n, 1.0))
                continue
            for at in range(0, n, 1 << 24):  # 16 M values at a time
                f.write(mk.f16_random(rng, min(1 << 24, n - at), *e))
    print("made", out, "(%.1f GB)" % (off / 1e9))


def gpu_mem():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        return [int(x) for x in out.split()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def one_stream(port, max_tokens, prompt, rec, cache=True):
    """One streamed request (prompt: a string, or a list of messages); the
    answer's text, or None."""
    t0 = time.time()
    text = []
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        body = {"messages": messages, "max_tokens": max_tokens, "cache_prompt": cache,
                "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
        c.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            rec["errors"].append("HTTP %d" % r.status)
            return
        last, done, tokens = None, False, 0
        for raw in r:
            if not raw.startswith(b"data: "):
                continue
            payload = raw[6:].strip()
            if payload == b"[DONE]":
                done = True
                break
            ev = json.loads(payload)
            if "error" in ev:
                rec["errors"].append(ev["error"]["message"])
                return
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
            for ch in ev.get("choices", []):
                if ch["delta"].get("content"):
                    text.append(ch["delta"]["content"])
                    now = time.time()
                    if last is None:
                        rec["ttft"].append(now - t0)
                    else:
                        rec["itl"].append(now - last)
                    last = now
        c.close()
        if not done:
            rec["errors"].append("no [DONE]")
        rec["tokens"] += tokens
        return "".join(text)
    except Exception as e:  # counted, the run goes on
        rec["errors"].append(repr(e))
    return None


def conversations(port, n, turns, max_tokens, cache):
    """n clients, each a conversation of `turns` rounds (the whole history
    sent every round, as chat clients do): time to first token of the later
    rounds, which start from their slot's cached prefix when cache is on."""
    rec = {"ttft": [], "itl": [], "errors": [], "tokens": 0}
    lock = threading.Lock()

    def client(i):
        history = []
        for t in range(turns):
            history.append({"role": "user", "content": "第%d位用户的第%d个问题：请详细地讲一讲"
                            "这个城市的历史、天气和美食。" % (i, t)})
            local = {"ttft": [], "itl": [], "errors": [], "tokens": 0}
            answer = one_stream(port, max_tokens, history, local, cache)
            history.append({"role": "assistant", "content": answer or ""})
            with lock:
                if t > 0:
                    rec["ttft"] += local["ttft"]
                rec["errors"] += local["errors"]
    ts = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ms = lambda x: None if x is None else round(1000 * x, 2)
    return {"cache_prompt": cache, "clients": n, "turns": turns,
            "later_turn_ttft_ms_p50": ms(pct(rec["ttft"], 50)),
            "later_turn_ttft_ms_p99": ms(pct(rec["ttft"], 99)), "errors": len(rec["errors"])}


def level(port, n, per_client, max_tokens, until=None):
    rec = {"ttft": [], "itl": [], "errors": [], "tokens": 0}
    lock = threading.Lock()

    def client(i):
        k = 0
        while (until and time.time() < until) or (not until and k < per_client):
            local = {"ttft": [], "itl": [], "errors": [], "tokens": 0}
            one_stream(port, max_tokens, "你好，第%d位用户的第%d个问题" % (i, k), local)
            with lock:
                for key in ("ttft", "itl", "errors"):
                    rec[key] += local[key]
                rec["tokens"] += local["tokens"]
            k += 1
    t0 = time.time()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - t0
    ms = lambda x: None if x is None else round(1000 * x, 2)
    return {"clients": n, "wall_s": round(wall, 2), "tokens": rec["tokens"],
            "aggregate_tok_s": round(rec["tokens"] / wall, 2) if wall > 0 else None,
            "ttft_ms_p50": ms(pct(rec["ttft"], 50)), "ttft_ms_p99": ms(pct(rec["ttft"], 99)),
            "itl_ms_p50": ms(pct(rec["itl"], 50)), "itl_ms_p99": ms(pct(rec["itl"], 99)),
            "errors": len(rec["errors"]), "error_samples": rec["errors"][:5]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-6b")
    ap.add_argument("--server")
    ap.add_argument("--model")
    ap.add_argument("--random-weights", help="6b: seeded random ChatGLM2-6B weights, no checkpoint "
                    "(needs --tokenizer; make_chat_model.py writes one)")
    ap.add_argument("--tokenizer")
    ap.add_argument("--dtype", default="int8")
    ap.add_argument("--ctx", default="2048")
    ap.add_argument("--parallel", default="16", help="m40-server --parallel: requests batched at once")
    ap.add_argument("--clients", default="1,4,8,16")
    ap.add_argument("--requests-per-client", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--soak", type=float, default=0)
    ap.add_argument("--turns", type=int, default=0,
                    help="also: 4 conversations of N rounds, cache_prompt on and off (prefix reuse)")
    ap.add_argument("--json")
    ap.add_argument("--extra", default="", help="more server arguments, e.g. --cpu")
    a = ap.parse_args()
    if a.make_6b:
        return make_6b(a.make_6b)
    if not a.server or not (a.model or (a.random_weights and a.tokenizer)):
        ap.error("--server and --model, or --random-weights SHAPE --tokenizer FILE (or --make-6b DIR)")
    src = (["--model", a.model] if a.model else
           ["--random-weights", a.random_weights, "--tokenizer", a.tokenizer])
    mem0 = gpu_mem()
    p = subprocess.Popen([a.server, *src, "--dtype", a.dtype, "--ctx", a.ctx, "--port", "0",
                          "--parallel", a.parallel, "--queue", "64", *a.extra.split()],
                         stderr=subprocess.PIPE, text=True)
    port = None
    for line in p.stderr:
        sys.stderr.write(line)
        m = re.search(r"listening on http://[^ ]*:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if not port:
        sys.exit("m40-server did not start")
    threading.Thread(target=lambda: [sys.stderr.write(l) for l in p.stderr], daemon=True).start()
    report = {"dtype": a.dtype, "max_tokens": a.max_tokens, "gpu_mem_mib_before_start": mem0,
              "gpu_mem_mib_loaded": gpu_mem(), "levels": []}
    level(port, 1, 1, 8)  # warm-up: the decode graph's capture
    for n in [int(x) for x in a.clients.split(",")]:
        before = gpu_mem()
        r = level(port, n, a.requests_per_client, a.max_tokens)
        r["gpu_mem_mib_before"], r["gpu_mem_mib_after"] = before, gpu_mem()
        print(json.dumps(r), flush=True)
        report["levels"].append(r)
    if a.turns > 0:
        report["prefix"] = [conversations(port, 4, a.turns, a.max_tokens, c) for c in (False, True)]
        for r in report["prefix"]:
            print(json.dumps(r), flush=True)
    if a.soak > 0:
        samples, stop = [], time.time() + a.soak

        def sample():
            while time.time() < stop:
                samples.append(gpu_mem())
                time.sleep(10)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        r = level(port, 8, 0, a.max_tokens, until=stop)
        r["gpu_mem_mib_samples"] = samples
        report["soak"] = r
        print(json.dumps(r), flush=True)
    one = next((l["aggregate_tok_s"] for l in report["levels"] if l["clients"] == 1), None)
    eight = next((l["aggregate_tok_s"] for l in report["levels"] if l["clients"] == 8), None)
    if one and eight:
        report["speedup_8_vs_1"] = round(eight / one, 2)
    p.terminate()
    try:
        report["server_exit"] = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        report["server_exit"] = "killed"
    report["gpu_mem_mib_after_exit"] = gpu_mem()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "levels"}))
    errors = sum(l["errors"] for l in report["levels"] + report.get("prefix", []))
    errors += report.get("soak", {}).get("errors", 0)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
