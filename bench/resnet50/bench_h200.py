#!/usr/bin/env python3
"""ResNet-50 images/s, ours vs PyTorch, in one process on one GPU, batch by batch.

    python3 bench/resnet50/bench_h200.py --build build-gpu [--batches 1,8,32,64,128]
        [--out DIR] [--warmup 10] [--min-time 0.5]

For each batch size, ours first, then PyTorch, back to back:
  ours:    `m40-bench resnet50 --layout nhwc --sizes N` (examples/resnet50's graph,
           seeded random weights, random normal input, CUDA-graph replay, CUDA
           events around each replay; its NVML sampler gives the clocks of the
           timed window)
  PyTorch: torchvision resnet50 (seeded random weights), FP32 eager, TF32 off,
           cudnn.benchmark on, torch.no_grad, fresh torch.randn input, CUDA
           events around each forward; NVML sampled in a thread (bench_torch.py)
Both: `--warmup` untimed runs, then repeats enough for --min-time seconds
(at least 30), median.

Efficiency = achieved FLOP/s / FP32 peak of the GPU it ran on, with
  achieved = N x 8.18 GFLOP / median time
  peak     = SMs x FP32 lanes per SM x 2 (FMA) x mean SM clock of the timed window
Projected M40 images/s = efficiency x 6840 GFLOP/s (M40 FP32 peak at the
1114 MHz boost, shared/docs/m40-facts.md) / 8.18 GFLOP: what the M40 would do
at the same efficiency. A projection, not an M40 measurement.

Writes DIR/resnet50_bench.md (the table) and DIR/resnet50_bench.json (every
figure, with m40-bench's timing statistics and telemetry).
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_torch import Sampler, stats  # noqa: E402  (same NVML fields as m40-bench)

GFLOP_PER_IMAGE = 8.18
M40_GFLOPS = 6840.0  # 24 SMs x 128 lanes x 2 x 1114 MHz
# FP32 lanes (FMA units) per SM by compute capability (CUDA programming guide,
# "arithmetic instructions" throughput table: 32-bit floating-point add/mul/fma)
FP32_LANES = {(5, 0): 128, (5, 2): 128, (5, 3): 128, (6, 0): 64, (6, 1): 128, (6, 2): 128,
              (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
              (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


class MemPoll:
    """Peak device memory in use (NVML, whole device) while a child runs."""

    class _Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                    ("used", ctypes.c_ulonglong)]

    def __init__(self, sampler):
        self.s, self.peak, self.stop_flag = sampler, 0, False

    def used(self):
        if not self.s.ok:
            return 0
        m = self._Mem()
        if self.s.nv.nvmlDeviceGetMemoryInfo(self.s.dev, ctypes.byref(m)) != 0:
            return 0
        return m.used

    def _loop(self):
        while not self.stop_flag:
            self.peak = max(self.peak, self.used())
            time.sleep(0.02)

    def __enter__(self):
        self.base = self.used()
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag = True
        self.t.join()


def repeats_for(ms_per_run, min_time):
    return max(30, int(math.ceil(min_time * 1e3 / max(ms_per_run, 1e-3))))


def ours(build, n, warmup, min_time, raw_dir, sampler):
    exe = os.path.join(build, "m40-bench")
    guess = {1: 1.5, 8: 4.0}.get(n, n / 2.5)  # ms per run, last H200 run: only sizes the repeats
    reps = repeats_for(guess, min_time)
    js = os.path.join(raw_dir, f"m40-bench_resnet50_b{n}.json")
    cmd = [exe, "resnet50", "--layout", "nhwc", "--sizes", str(n), "--warmup", str(warmup),
           "--repeats", str(reps), f"--json={js}"]
    with MemPoll(sampler) as mp:
        p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"bench_h200.py: {' '.join(cmd)} exited {p.returncode}")
    with open(js) as f:
        j = json.load(f)
    r = j["results"][0]
    return {"impl": r["impl"], "time_ms": r["time_ms"], "telemetry": r["telemetry"],
            "libm40": f"{j['software']['libm40']} ({j['software']['build']})",
            "mem_added_mib": (mp.peak - mp.base) / 2**20 if mp.peak else None,
            "command": " ".join(cmd)}


def torch_side(torch, model, n, warmup, min_time, sampler):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    x = torch.randn(n, 3, 224, 224, device="cuda")  # fresh, non-zero
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        for _ in range(warmup):  # the first one runs cudnn.benchmark's search
            model(x)
        torch.cuda.synchronize()
        e0.record()
        model(x)
        e1.record()
        e1.synchronize()
        reps = repeats_for(e0.elapsed_time(e1), min_time)
        mark = sampler.mark()
        ts = []
        for _ in range(reps):
            e0.record()
            model(x)
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        tele = sampler.window(mark)
    return {"impl": "torch eager FP32 (TF32 off, cudnn.benchmark)", "time_ms": stats(ts),
            "telemetry": tele, "max_allocated_mib": torch.cuda.max_memory_allocated() / 2**20}


def derive(side, n, sms, lanes):
    t = side["time_ms"]["median"] * 1e-3
    clk = (side["telemetry"] or {}).get("sm_mhz_mean") or 0.0
    side["images_per_s"] = n / t
    side["gflops"] = n * GFLOP_PER_IMAGE / t
    side["peak_gflops"] = sms * lanes * 2 * clk / 1e3 if clk else None
    side["efficiency"] = side["gflops"] / side["peak_gflops"] if clk else None
    side["projected_m40_images_per_s"] = (side["efficiency"] * M40_GFLOPS / GFLOP_PER_IMAGE
                                          if clk else None)


def fmt_tele(t):
    if not t:
        return "no NVML"
    s = f"{t['sm_mhz_min']}-{t['sm_mhz_max']} MHz, {t['temp_c_max']} C"
    if t.get("power_w_max") is not None:
        s += f", {t['power_w_max']:.0f} W"
    r = [x for x in t["throttle_reasons"] if x != "gpu_idle"]
    if t["throttled"]:
        s += ", **THROTTLED** (" + ",".join(r) + ")"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--batches", default="1,8,32,64,128")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--raw-dir", help="m40-bench's JSON files (default: --out)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds of timed repeats per row")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    import torch
    import torchvision
    if not torch.cuda.is_available():
        print("bench_h200.py: no CUDA device visible to PyTorch; nothing measured", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    prop = torch.cuda.get_device_properties(0)
    cc = (prop.major, prop.minor)
    sms, lanes = prop.multi_processor_count, FP32_LANES.get(cc)
    if lanes is None:
        raise SystemExit(f"bench_h200.py: FP32 lanes per SM unknown for cc {cc}; add it to FP32_LANES")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda().eval()
    sampler = Sampler(0, period=0.02)

    rows = []
    for n in [int(s) for s in a.batches.split(",") if s]:
        o = ours(a.build, n, a.warmup, a.min_time, a.raw_dir or a.out, sampler)
        t = torch_side(torch, model, n, a.warmup, a.min_time, sampler)
        for side in (o, t):
            derive(side, n, sms, lanes)
        rows.append({"batch": n, "ours": o, "torch": t, "ratio": o["images_per_s"] / t["images_per_s"]})
        print(f"batch {n:4d}: ours {o['images_per_s']:8.1f} images/s, PyTorch {t['images_per_s']:8.1f}, "
              f"ratio {rows[-1]['ratio']:.2f}x; efficiency ours "
              f"{100 * (o['efficiency'] or math.nan):.1f}% PyTorch {100 * (t['efficiency'] or math.nan):.1f}%; "
              f"ours card {fmt_tele(o['telemetry'])}; PyTorch card {fmt_tele(t['telemetry'])}", flush=True)
    sampler.stop()

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    clk = max((r["ours"]["telemetry"] or {}).get("sm_mhz_mean", 0) for r in rows)
    md = [f"# ResNet-50 FP32 images/s on {prop.name} ({date})", "",
          f"{prop.name}: cc {cc[0]}.{cc[1]}, {sms} SMs, {prop.total_memory / 2**30:.0f} GiB; driver "
          f"{sampler.driver or '?'}; PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}), "
          f"torchvision {torchvision.__version__}; libm40 {rows[0]['ours']['libm40'] if rows else '?'}.",
          "Ours: `m40-bench resnet50 --layout nhwc` (examples/resnet50 graph, NHWC, CUDA-graph replay). "
          "PyTorch: FP32 eager, TF32 off, cudnn.benchmark=True, no_grad. Same process, same call, "
          "ours then PyTorch per batch; seeded random weights, random normal inputs; "
          f"{a.warmup} warm-up runs, then >= 30 timed runs (>= {a.min_time} s), median; CUDA events.",
          "",
          "| batch | ours (images/s) | PyTorch (images/s) | ours / PyTorch | efficiency ours | "
          "efficiency PyTorch | projected M40 images/s (ours) | card during ours | card during PyTorch |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o, t = r["ours"], r["torch"]
        pct = lambda v: f"{100 * v:.1f}%" if v is not None else "n/a"  # noqa: E731
        proj = o["projected_m40_images_per_s"]
        md.append(f"| {r['batch']} | {o['images_per_s']:.1f} | {t['images_per_s']:.1f} | {r['ratio']:.2f}x | "
                  f"{pct(o['efficiency'])} | {pct(t['efficiency'])} | "
                  f"{'%.0f' % proj if proj is not None else 'n/a'} (projection) | "
                  f"{fmt_tele(o['telemetry'])} | {fmt_tele(t['telemetry'])} |")
    md += ["",
           f"Efficiency = N x {GFLOP_PER_IMAGE} GFLOP / median time / FP32 peak; FP32 peak = SMs x FP32 lanes "
           f"per SM x 2 (FMA) x mean SM clock sampled (NVML) during that row's timed runs = "
           f"{sms} x {lanes} x 2 x {clk:.0f} MHz = {sms * lanes * 2 * clk / 1e6:.1f} TFLOP/s at the "
           "highest mean clock seen (each row uses its own clock).",
           f"Projected M40 images/s = efficiency x {M40_GFLOPS:.0f} GFLOP/s (M40: 24 SMs x 128 x 2 x 1114 MHz "
           f"boost) / {GFLOP_PER_IMAGE} GFLOP: the M40 at the same efficiency. **A projection, not a "
           "measurement on an M40**: the M40 has 24 SMs, 3 MB of L2 and 288 GB/s, so small batches "
           "(few tiles per SM) and memory-bound layers need not keep the efficiency measured here.",
           "Card columns: SM clock min-max, max temperature and power over the timed window; "
           "THROTTLED if NVML saw a thermal or power slowdown.",
           "Memory (NVML, device used, peak minus before, includes our process's CUDA context) for ours: "
           + (", ".join(f"b{r['batch']} {r['ours']['mem_added_mib']:.0f} MiB" for r in rows
                        if r["ours"]["mem_added_mib"] is not None) or "n/a")
           + "; PyTorch max_memory_allocated (cuDNN's benchmark workspaces included): "
           + ", ".join(f"b{r['batch']} {r['torch']['max_allocated_mib']:.0f} MiB" for r in rows) + "."]
    text = "\n".join(md) + "\n"
    print(text)
    with open(os.path.join(a.out, "resnet50_bench.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "resnet50_bench.json"), "w") as f:
        json.dump({"date": date, "device": prop.name, "cc": f"{cc[0]}.{cc[1]}", "sm_count": sms,
                   "fp32_lanes_per_sm": lanes, "driver": sampler.driver, "torch": torch.__version__,
                   "m40_gflops": M40_GFLOPS, "gflop_per_image": GFLOP_PER_IMAGE, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
