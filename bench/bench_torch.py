#!/usr/bin/env python3
"""The PyTorch side of m40-bench: the same workloads, shapes, timing method
(CUDA events around each repeat; median, min/max, IQR) and JSON schema
("m40-bench/1"), so bench/compare.py can put both in one table.

    python3 bench/bench_torch.py copy,gemm [--warmup 3] [--repeats 20]
        [--sizes-copy 1,8,64,256,1024] [--sizes-gemm 1x4096x4096,...,4096]
        [--sizes-attention 1024,8192,32768] [--sizes-prefill 512,2048,8192]
        [--json FILE] [--device 0]

FP32 is real FP32: TF32 is switched off for matmul and cuDNN (both default
on for some paths), cudnn.benchmark is on. Telemetry comes from NVML through
ctypes when libnvidia-ml.so.1 is there (same fields as m40-bench).
"""
import argparse
import ctypes
import datetime
import json
import sys
import threading
import time

import numpy as np

M40_GFLOPS = 6840.0  # FP32 at the 1114 MHz boost clock (shared/docs/m40-facts.md)
M40_GBS = 288.4      # GB/s, 384-bit GDDR5

DEFAULT_SIZES = {
    "conv": "1,32",
    "resnet50": "1,8,64",
    "copy": "1,8,64,256,1024",
    "attention": "1024,8192,32768",  # decode contexts, as m40-bench attention
    "prefill": "512,2048,8192",      # attention's prefill lengths
    "gemm": "1x4096x4096,8x4096x4096,32x4096x4096,128x4096x4096,512x4096x4096,"
            "2048x4096x4096,4096",
}

# clocks-event reason bits, as lib/doctor/nvml.h
REASONS = [(0x1, "gpu_idle"), (0x2, "app_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
           (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"),
           (0x80, "hw_power_brake"), (0x100, "display_clocks")]
THERMAL = 0x20 | 0x40 | 0x8
POWER = 0x4 | 0x80


def parse_sizes(text):
    out = []
    for tok in text.split(","):
        parts = [int(p) for p in tok.split("x")]
        if len(parts) == 1:
            parts = parts * 3
        if len(parts) != 3 or min(parts) < 1:
            raise SystemExit(f"bad size '{tok}': use A or MxNxK")
        out.append(parts)
    return out


def stats(ts):
    a = np.asarray(ts, dtype=np.float64)
    q1, med, q3 = np.percentile(a, [25, 50, 75])  # linear, as lib/bench/stats.c
    return {"n": int(a.size), "median": float(med), "min": float(a.min()), "max": float(a.max()),
            "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1), "mean": float(a.mean())}


class Sampler:
    """NVML telemetry in a thread (ctypes; optional)."""

    def __init__(self, index, period=0.01):
        self.samples, self.driver, self.ok = [], "", False
        try:
            self.nv = ctypes.CDLL("libnvidia-ml.so.1")
            if self.nv.nvmlInit_v2() != 0:
                return
            self.dev = ctypes.c_void_p()
            if self.nv.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.dev)) != 0:
                return
            buf = ctypes.create_string_buffer(96)
            if self.nv.nvmlSystemGetDriverVersion(buf, 96) == 0:
                self.driver = buf.value.decode()
            fn = getattr(self.nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
            self.reason_fn = fn or self.nv.nvmlDeviceGetCurrentClocksThrottleReasons
        except (OSError, AttributeError):
            return
        self.ok, self.period, self.stop_flag = True, period, False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def read(self):
        u, r = ctypes.c_uint(), ctypes.c_ulonglong()
        s = {"sm": 0, "mem": 0, "temp": 0, "power": -1.0, "reasons": 0}
        if self.nv.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(u)) == 0:
            s["sm"] = u.value
        if self.nv.nvmlDeviceGetClockInfo(self.dev, 2, ctypes.byref(u)) == 0:
            s["mem"] = u.value
        if self.nv.nvmlDeviceGetTemperature(self.dev, 0, ctypes.byref(u)) == 0:
            s["temp"] = u.value
        if self.nv.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(u)) == 0:
            s["power"] = u.value / 1000.0
        if self.reason_fn(self.dev, ctypes.byref(r)) == 0:
            s["reasons"] = r.value
        return s

    def _loop(self):
        while not self.stop_flag:
            s = self.read()
            with self.lock:
                self.samples.append(s)
            time.sleep(self.period)

    def mark(self):
        if not self.ok:
            return 0
        with self.lock:
            return len(self.samples)

    def window(self, mark):
        if not self.ok:
            return None
        s = self.read()
        with self.lock:
            self.samples.append(s)
            w = self.samples[mark:]
        sm = [x["sm"] for x in w if x["sm"]]
        mem = [x["mem"] for x in w if x["mem"]]
        pw = [x["power"] for x in w if x["power"] >= 0]
        reasons = 0
        for x in w:
            reasons |= x["reasons"]
        return {"samples": len(w), "sm_mhz_min": min(sm, default=0), "sm_mhz_max": max(sm, default=0),
                "sm_mhz_mean": float(np.mean(sm)) if sm else 0.0,
                "mem_mhz_min": min(mem, default=0), "mem_mhz_max": max(mem, default=0),
                "temp_c_max": max((x["temp"] for x in w), default=0),
                "power_w_max": max(pw) if pw else None,
                "power_w_mean": float(np.mean(pw)) if pw else None,
                "throttle_reasons": [n for b, n in REASONS if reasons & b],
                "thermal": bool(reasons & THERMAL), "power": bool(reasons & POWER),
                "throttled": bool(reasons & (THERMAL | POWER))}

    def stop(self):
        if self.ok:
            self.stop_flag = True
            self.thread.join()
            self.nv.nvmlShutdown()


def measure(torch, op, warmup, repeats, sampler):
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    mark = sampler.mark()
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(repeats):
        ev0.record()
        op()
        ev1.record()
        ev1.synchronize()
        ts.append(ev0.elapsed_time(ev1))
    return stats(ts), sampler.window(mark)


def result(workload, impl, label, batch, shape, unit, work, t, tele, is_m40):
    value = work / (t["median"] * 1e-3) / 1e9 if t["median"] > 0 else 0.0
    limit = M40_GFLOPS if unit == "GFLOP/s" else M40_GBS
    floor_ms = work / (limit * 1e9) * 1e3
    if unit == "GFLOP/s":
        formula = f"2*M*N*K / {limit:.0f} GFLOP/s = {floor_ms:.4g} ms"
    else:
        formula = f"{work / 1e9:.4g} GB (read+write) / {limit:.1f} GB/s = {floor_ms:.4g} ms"
    return {"workload": workload, "impl": impl, "label": label, "batch": batch, "shape": shape,
            "unit": unit, "work": work, "time_ms": t, "value": value, "baseline": None,
            "m40": {"limit": limit, "pct_of_limit": 100.0 * value / limit,
                    "measured_on_m40": is_m40, "floor_ms": floor_ms, "formula": formula},
            "max_rel_err": None, "telemetry": tele}


def run_copy(torch, args, dev, sampler, is_m40):
    out = []
    for mib, _, _ in parse_sizes(args.sizes_copy):
        n = mib * 262144
        src = torch.empty(n, device=dev, dtype=torch.float32).uniform_(-1, 1)
        dst = torch.empty_like(src)
        t, tele = measure(torch, lambda: dst.copy_(src), args.warmup, args.repeats, sampler)
        assert torch.equal(dst, src)
        out.append(result("copy", "torch.copy_", f"{mib}MiB", mib, {}, "GB/s", 2.0 * n * 4, t,
                          tele, is_m40))
        print_line(out[-1])
        del src, dst
    return out


def run_gemm(torch, args, dev, sampler, is_m40):
    out = []
    for M, N, K in parse_sizes(args.sizes_gemm):
        x = torch.empty(M, K, device=dev).uniform_(-1, 1)
        w = torch.empty(N, K, device=dev).uniform_(-1, 1)
        y = torch.empty(M, N, device=dev)
        wt = w.t()  # y = x·wᵀ, as torch.nn.functional.linear and m40_matmul
        t, tele = measure(torch, lambda: torch.mm(x, wt, out=y), args.warmup, args.repeats, sampler)
        r = result("gemm", "torch.mm", f"{M}x{N}x{K}", M, {"M": M, "N": N, "K": K}, "GFLOP/s",
                   2.0 * M * N * K, t, tele, is_m40)
        # one check against float64 on a slice of rows (TF32 would show ~1e-3)
        rows = min(M, 64)
        ref = x[:rows].double() @ w.double().t()
        r["max_rel_err"] = float((y[:rows].double() - ref).abs().max() / ref.abs().max())
        out.append(r)
        print_line(r)
        del x, w, y, wt
    return out


# every distinct conv of torchvision's ResNet-50 at 224x224: H(=W), C, K, R, stride
# (the same list, order and labels as run_conv in tools/m40-bench.c)
RESNET50_CONVS = [(224, 3, 64, 7, 2), (56, 64, 64, 1, 1), (56, 64, 64, 3, 1), (56, 64, 256, 1, 1),
                  (56, 256, 64, 1, 1), (56, 256, 128, 1, 1), (56, 128, 128, 3, 2),
                  (28, 128, 512, 1, 1), (56, 256, 512, 1, 2), (28, 512, 128, 1, 1),
                  (28, 128, 128, 3, 1), (28, 512, 256, 1, 1), (28, 256, 256, 3, 2),
                  (14, 256, 1024, 1, 1), (28, 512, 1024, 1, 2), (14, 1024, 256, 1, 1),
                  (14, 256, 256, 3, 1), (14, 1024, 512, 1, 1), (14, 512, 512, 3, 2),
                  (7, 512, 2048, 1, 1), (14, 1024, 2048, 1, 2), (7, 2048, 512, 1, 1),
                  (7, 512, 512, 3, 1)]


def run_conv(torch, args, dev, sampler, is_m40):
    F = torch.nn.functional
    out = []
    for n, _, _ in parse_sizes(args.sizes_conv):
        for H, C, K, R, s in RESNET50_CONVS:
            P = (H + 2 * (R // 2) - R) // s + 1
            x = torch.empty(n, C, H, H, device=dev).uniform_(-1, 1)
            w = torch.empty(K, C, R, R, device=dev).uniform_(-1, 1)
            b = torch.empty(K, device=dev).uniform_(-1, 1)
            op = lambda: F.relu(F.conv2d(x, w, b, stride=s, padding=R // 2), inplace=True)
            t, tele = measure(torch, op, args.warmup, args.repeats, sampler)
            work = 2.0 * n * P * P * K * C * R * R
            r = result("conv", "torch conv2d+relu (cuDNN)", f"n{n} {H}x{H} {C}>{K} {R}x{R}/{s}", n,
                       {"M": n * P * P, "N": K, "K": C * R * R}, "GFLOP/s", work, t, tele, is_m40)
            out.append(r)
            print_line(r)
            del x, w, b
    return out


def run_resnet50(torch, args, dev, sampler, is_m40):
    import torchvision
    model = torchvision.models.resnet50(weights=None).to(dev).eval()
    out = []
    with torch.no_grad():
        for n, _, _ in parse_sizes(args.sizes_resnet50):
            x = torch.randn(n, 3, 224, 224, device=dev)
            t, tele = measure(torch, lambda: model(x), args.warmup, args.repeats, sampler)
            r = result("resnet50", "torch eager FP32", f"batch {n}", n, {}, "GFLOP/s",
                       8.18e9 * n, t, tele, is_m40)
            r["m40"]["formula"] = f"8.18 GFLOP x {n} / {M40_GFLOPS:.0f} GFLOP/s = {r['m40']['floor_ms']:.4g} ms"
            out.append(r)
            print_line(r)
            print(f"      = {r['value'] / 8.18:.1f} images/s", flush=True)
    return out


# ChatGLM2's attention, as m40-bench attention: 32 heads over 2 KV groups,
# head_dim 128, an fp16 KV cache, one sequence
ATT_H, ATT_G, ATT_D = 32, 2, 128


def kernels_of(torch, label, op):
    """Prints the CUDA kernels one call of op launches (torch.profiler), so a
    result line says which backend ran: e.g. fmha_cutlassF_f32_*_sm80 is the
    memory-efficient kernel on tensor cores, *sgemm* / *gemmSN* cuBLAS SIMT."""
    from torch.profiler import ProfilerActivity, profile
    op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        op()
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
    print(f"      {label} kernels: {'; '.join(n[:90] for n in names) or '(none seen)'}", flush=True)


def run_attention(torch, args, dev, sampler, is_m40):
    """torch.nn.functional.scaled_dot_product_attention in FP32 (TF32 off).
    PyTorch needs K/V at all 32 heads and in q's dtype: two rows per shape,
      'torch.sdpa'         K/V converted and expanded beforehand (the kernel)
      'torch.sdpa math'    the same through the math backend only (cuBLAS FP32
                           GEMMs + softmax: SIMT, what an M40 runs); the default
                           backend on sm_80+ runs FP32 on tensor cores (3xTF32)
      'torch expand+sdpa'  fp16 cache -> fp32, repeat_interleave to 32 heads,
                           then SDPA, every call (what a GQA model does each step)
    Both in the units of ours: decode = the fp16 cache's K+V bytes / time,
    prefill = 4*T^2/2*D*H / time. Decode is one query at position L-1: it
    sees every key, so is_causal=False (PyTorch's is_causal is top-left
    aligned: a 1-row query would see key 0 only); prefill (L = T) is causal."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rep = ATT_H // ATT_G
    out = []

    def rows(kind, label, batch, unit, work, q, k16, v16, causal, ref_rows):
        kx = k16.float().repeat_interleave(rep, dim=1)
        vx = v16.float().repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, kx, vx, is_causal=causal)
        # float64 reference on the last query rows (all heads)
        qr = q[:, :, -ref_rows:].double()
        s = qr @ kx.double().transpose(-1, -2) / ATT_D ** 0.5
        if causal:
            T = q.shape[2]
            i = torch.arange(T - ref_rows, T, device=dev)[:, None]
            s = s.masked_fill(torch.arange(kx.shape[2], device=dev)[None, :] > i, float("-inf"))
        ref = torch.softmax(s, dim=-1) @ vx.double()
        err = float((y[:, :, -ref_rows:].double() - ref).abs().max() / ref.abs().max())
        def sdpa_default():
            return F.scaled_dot_product_attention(q, kx, vx, is_causal=causal)

        def sdpa_math():
            # the math backend only: FP32 GEMMs through cuBLAS (TF32 off: SIMT FMA) and a
            # softmax, the path an M40's PyTorch takes; the default backend on sm_80+ is the
            # memory-efficient kernel, which runs FP32 on tensor cores (3xTF32,
            # OpMultiplyAddFastF32) whatever allow_tf32 says
            with sdpa_kernel(SDPBackend.MATH):
                return sdpa_default()
        kernels_of(torch, "torch.sdpa", sdpa_default)
        kernels_of(torch, "torch.sdpa math", sdpa_math)
        for impl, op in (("torch.sdpa", sdpa_default),
                         ("torch.sdpa math", sdpa_math),
                         ("torch expand+sdpa", lambda: F.scaled_dot_product_attention(
                             q, k16.float().repeat_interleave(rep, dim=1),
                             v16.float().repeat_interleave(rep, dim=1), is_causal=causal))):
            t, tele = measure(torch, op, args.warmup, args.repeats, sampler)
            r = result("attention", impl, label, batch, {}, unit, work, t, tele, is_m40)
            r["max_rel_err"] = err
            if unit == "GB/s":
                r["m40"]["formula"] = (f"{work / 1e9:.4g} GB (fp16 K+V read) / {M40_GBS:.1f} GB/s = "
                                       f"{r['m40']['floor_ms']:.4g} ms")
            else:
                r["m40"]["formula"] = (f"4*T^2/2*D*H = {work / 1e9:.4g} GFLOP / {M40_GFLOPS:.0f} "
                                       f"GFLOP/s = {r['m40']['floor_ms']:.4g} ms")
            out.append(r)
            print_line(r)
        print(f"      {kind}: max_rel_err {err:.2g} vs float64 (last {ref_rows} query rows)", flush=True)
        del kx, vx, y

    for L, _, _ in parse_sizes(args.sizes_attention):
        q = torch.empty(1, ATT_H, 1, ATT_D, device=dev).uniform_(-2, 2)
        k16 = torch.empty(1, ATT_G, L, ATT_D, device=dev).uniform_(-1, 1).half()
        v16 = torch.empty(1, ATT_G, L, ATT_D, device=dev).uniform_(-1, 1).half()
        rows("decode", f"decode ctx {L}", L, "GB/s", 2.0 * L * ATT_G * ATT_D * 2, q, k16, v16,
             False, 1)
        del q, k16, v16
    for T, _, _ in parse_sizes(args.sizes_prefill):
        q = torch.empty(1, ATT_H, T, ATT_D, device=dev).uniform_(-2, 2)
        k16 = torch.empty(1, ATT_G, T, ATT_D, device=dev).uniform_(-1, 1).half()
        v16 = torch.empty(1, ATT_G, T, ATT_D, device=dev).uniform_(-1, 1).half()
        rows("prefill", f"prefill T {T}", T, "GFLOP/s", 2.0 * T * T * ATT_D * ATT_H, q, k16, v16,
             True, 4)
        del q, k16, v16
    return out


def run_chatglm2(torch, args, dev, sampler, is_m40):
    """transformers' GlmForCausalLM in ChatGLM2-6B's shape (the independent
    implementation the tests use as the oracle), random weights, FP32 with TF32
    off (the Maxwell-faithful baseline; --chatglm2-fp16 adds fp16 as a labelled
    extra): decode tokens/s at each context (eager, one token with the KV
    cache, as model.generate runs it), prefill of 128/512/2048 tokens
    (--sizes-chatglm2-prefill) with the output layer on the last row, as
    generate runs a prompt."""
    from transformers import GlmConfig, GlmForCausalLM
    from transformers.cache_utils import DynamicCache
    cfg = GlmConfig(vocab_size=65024, hidden_size=4096, intermediate_size=13696,
                    num_hidden_layers=28, num_attention_heads=32, num_key_value_heads=2,
                    head_dim=128, partial_rotary_factor=0.5, rms_norm_eps=1e-5,
                    attention_bias=True, max_position_embeddings=32768, tie_word_embeddings=False,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2)
    out = []
    dtypes = [("fp32", torch.float32)] + ([("fp16", torch.float16)] if args.chatglm2_fp16 else [])
    for name, dt in dtypes:
        with torch.device(dev):
            model = GlmForCausalLM(cfg).to(dt).eval()
        wbytes = sum(p.numel() * p.element_size() for n, p in model.named_parameters()
                     if "embed_tokens" not in n)
        kv_tok = 2 * 28 * 2 * 128 * (4 if dt == torch.float32 else 2)
        with torch.no_grad():
            for ctx, _, _ in parse_sizes(args.sizes_chatglm2):
                ids = torch.randint(1, 60000, (1, ctx - 1), device=dev)
                cache = DynamicCache()
                model(ids, past_key_values=cache, use_cache=True)
                tok = torch.tensor([[7]], device=dev)

                def step():  # one decode step; the cache is cut back to ctx - 1 after
                    model(tok, past_key_values=cache, use_cache=True)
                    cache.crop(-1)  # drop that token (negative: the form every version takes)
                t, tele = measure(torch, step, args.warmup, args.repeats, sampler)
                r = result("chatglm2", f"torch GlmForCausalLM {name}", f"{name} decode ctx {ctx}",
                           ctx, {}, "GB/s", wbytes + kv_tok * ctx, t, tele, is_m40)
                r["tokens_per_s"] = 1e3 / t["median"]
                out.append(r)
                print_line(r)
                print(f"      {r['tokens_per_s']:.1f} tokens/s")
                del cache
            prompts = [] if args.sizes_chatglm2_prefill == "0" else \
                [p for p, _, _ in parse_sizes(args.sizes_chatglm2_prefill)]
            for P in prompts:
                ids = torch.randint(1, 60000, (1, P), device=dev)
                # as model.generate runs a prompt: the output layer on the last
                # row only (logits_to_keep=1; older transformers: every row)
                try:
                    model(ids[:, :8], use_cache=False, logits_to_keep=1)
                    keep = {"logits_to_keep": 1}
                except TypeError:
                    keep = {}
                t, tele = measure(torch, lambda: model(ids, use_cache=False, **keep), 1,
                                  max(3, args.repeats // 4), sampler)
                flops = 2.0 * (wbytes / (4 if dt == torch.float32 else 2)) * P
                r = result("chatglm2", f"torch GlmForCausalLM {name}", f"{name} prefill {P}", P,
                           {}, "GFLOP/s", flops, t, tele, is_m40)
                r["tokens_per_s"] = P / (t["median"] * 1e-3)
                r["logits_rows"] = 1 if keep else P
                out.append(r)
                print_line(r)
                print(f"      {r['tokens_per_s']:.0f} tokens/s")
        del model
        torch.cuda.empty_cache()
    return out


def print_line(r):
    t = r["time_ms"]
    line = (f"{r['workload']:5s} {r['label']:16s} {r['impl']:14s} {r['value']:10.1f} {r['unit']:7s} "
            f"median {t['median']:.4f} ms (min {t['min']:.4f} max {t['max']:.4f} IQR {t['iqr']:.4f}, "
            f"n={t['n']})")
    tele = r["telemetry"]
    if tele:
        line += (f"  SM {tele['sm_mhz_min']}-{tele['sm_mhz_max']} MHz, {tele['temp_c_max']} C, "
                 f"reasons {','.join(tele['throttle_reasons']) or 'none'}")
        if tele["throttled"]:
            line += "  ** THROTTLED **"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", help="comma-separated: copy,gemm,conv,resnet50,attention,chatglm2")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--sizes-copy", default=DEFAULT_SIZES["copy"])
    ap.add_argument("--sizes-gemm", default=DEFAULT_SIZES["gemm"])
    ap.add_argument("--sizes-conv", default=DEFAULT_SIZES["conv"], help="batch sizes")
    ap.add_argument("--sizes-resnet50", default=DEFAULT_SIZES["resnet50"], help="batch sizes")
    ap.add_argument("--sizes-attention", default=DEFAULT_SIZES["attention"],
                    help="attention: decode contexts")
    ap.add_argument("--sizes-prefill", default=DEFAULT_SIZES["prefill"],
                    help="attention: prefill lengths (causal, L = T)")
    ap.add_argument("--sizes-chatglm2", default="128,1024,8192", help="chatglm2: decode contexts")
    ap.add_argument("--sizes-chatglm2-prefill", default="128,512,2048",
                    help="chatglm2: prompt lengths (0: no prefill)")
    ap.add_argument("--chatglm2-fp16", action="store_true", help="chatglm2: fp16 too (labelled)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        print("bench_torch.py: no CUDA device visible to PyTorch; nothing measured", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False  # its default is True
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    is_m40 = "M40" in props.name and (props.major, props.minor) == (5, 2)
    sampler = Sampler(args.device)
    print(f"bench_torch.py on {props.name} (cc {props.major}.{props.minor}), torch "
          f"{torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}; "
          f"TF32 off; telemetry {'NVML, driver ' + sampler.driver if sampler.ok else 'off'}")
    torch.manual_seed(0)
    runners = {"copy": run_copy, "gemm": run_gemm, "conv": run_conv, "resnet50": run_resnet50,
               "attention": run_attention, "chatglm2": run_chatglm2}
    results = []
    for w in args.workloads.split(","):
        if w not in runners:
            print(f"bench_torch.py: '{w}' not implemented yet (have: {', '.join(runners)})",
                  file=sys.stderr)
            return 2
        results += runners[w](torch, args, dev, sampler, is_m40)
    sampler.stop()
    doc = {"schema": "m40-bench/1", "tool": "pytorch", "command": args.workloads,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": {"name": props.name, "cc": f"{props.major}.{props.minor}",
                      "sm_count": props.multi_processor_count,
                      "mem_gib": props.total_memory / 2**30, "is_m40": is_m40,
                      "driver": sampler.driver},
           "software": {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "cudnn": torch.backends.cudnn.version(), "tf32": False,
                        "cudnn_benchmark": True},
           "options": {"warmup": args.warmup, "repeats": args.repeats,
                       "sizes": {"copy": args.sizes_copy, "gemm": args.sizes_gemm,
                                 "conv": args.sizes_conv, "resnet50": args.sizes_resnet50,
                                 "attention": args.sizes_attention,
                                 "prefill": args.sizes_prefill},
                       "timing": "cuda events per repeat"},
           "results": results}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
