#!/usr/bin/env python3
"""A soak of m40-chat's multi-round chat: prompts through a pipe for SECONDS,
one after each answer (--json), a /reset now and then and a small --ctx so
that old rounds are dropped and re-prefilled again and again; host memory
(VmRSS) and, where nvidia-smi is found, the process's device memory are
sampled every few seconds. Both must stay flat once warm: the last third's
peak at most the first third's (after a warm-up) plus a margin.

Under AddressSanitizer (M40_SOAK_ASAN=1, set by CMake for M40_SANITIZE
builds) host RSS says nothing: freed memory waits in ASan's quarantine (256
MB), so RSS climbs for the whole of a short run (CI saw 100 -> 340 MB in 20
s). There the host check is LeakSanitizer's, at m40-chat's exit (a leak
fails with exit status 23); device memory is still sampled.

    python3 tests/chatglm2/chat_soak.py M40_CHAT MODEL_DIR SECONDS [m40-chat args...]

e.g. on the H200 for 30 minutes on the 6B-shaped random model:
    python3 tests/chatglm2/make_chat_model.py /tmp/glm6b --6b
    python3 tests/chatglm2/chat_soak.py build/m40-chat /tmp/glm6b 1800 --dtype int4 --ctx 2048
Default args: --cpu --dtype fp32 --ctx 512."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

chat, model, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
extra = sys.argv[4:] or ["--cpu", "--dtype", "fp32", "--ctx", "512"]
p = subprocess.Popen([chat, "--model", model, "--json", "--quiet", "--max-new-tokens", "48"] + extra,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
smi = shutil.which("nvidia-smi")


def rss_mb():
    with open("/proc/%d/status" % p.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def gpu_mb():
    if not smi:
        return None
    out = subprocess.run([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 2 and f[0] == str(p.pid):
            return float(f[1])
    return None


def sampler():
    """Samples every few seconds while the chat runs."""
    every = min(10.0, seconds / 20)
    while not done.wait(every):
        try:
            samples.append((time.time() - t0, rss_mb(), gpu_mb()))
        except OSError:
            return
        print("t=%6.1fs answers=%d rss=%.1f MB gpu=%s MB" % (samples[-1][0], answers, samples[-1][1],
                                                             samples[-1][2]), flush=True)


prompts = ["你好", "讲个故事", "Hello world, how are you?", "给我讲个笑话😀", "天气怎么样", "再见"]
samples, answers, errors = [], 0, 0
t0 = time.time()
done = threading.Event()
threading.Thread(target=sampler, daemon=True).start()
i = 0
while time.time() - t0 < seconds:
    q = "/reset" if i % 17 == 16 else prompts[i % len(prompts)]
    i += 1
    p.stdin.write(q.encode() + b"\n")
    p.stdin.flush()
    if q == "/reset":
        continue
    line = p.stdout.readline()
    if not line:
        print("FAIL: m40-chat ended after %d answers" % answers)
        sys.exit(1)
    o = json.loads(line)
    answers += 1
    errors += "error" in o
done.set()
p.stdin.close()
rc = p.wait(timeout=120)
ok = rc == 0 and errors == 0 and len(samples) >= 6
warm = samples[len(samples) // 6:]
third = max(1, len(warm) // 3)
asan = os.environ.get("M40_SOAK_ASAN") == "1"
if asan:
    print("host RSS not judged under ASan (quarantine); LeakSanitizer checks at exit: exit %d" % rc)
for k, name, margin in [(1, "host RSS", 8.0), (2, "device", 2.0)]:
    if k == 1 and asan:
        continue
    vals = [s[k] for s in warm if s[k] is not None]
    if len(vals) < 3:
        continue
    first, last_ = max(vals[:third]), max(vals[-third:])
    flat = last_ <= first * 1.02 + margin
    print("%s %s: %.1f MB early, %.1f MB late" % ("ok  " if flat else "FAIL", name, first, last_))
    ok = ok and flat
print("%s: %d answers in %.0f s, %d errors, exit %d" % ("ok" if ok else "FAIL", answers, seconds,
                                                       errors, rc))
sys.exit(0 if ok else 1)
