#!/usr/bin/env python3
"""m40-chat's chat, driven as a user would: through a pseudo-terminal
(Python's pty: Ctrl-C is the terminal's, EOF is Ctrl-D), through a pipe
(one prompt per line) and with --prompt, on the CPU reference with the
random 65024-id model and tokenizer of make_chat_model.py.

    python3 tests/chatglm2/chat_test.py M40_CHAT MODEL_DIR CASE

CASE: pty, interrupt, reuse, utf8, bad, overflow, glm3, io. Prints what it
checks; exit status 0 when every check passed. M40_CHAT_ARGS replaces the
default "--cpu --dtype fp32" (on a GPU: M40_CHAT_ARGS="--dtype fp16")."""
import json
import os
import re
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time

CHAT, MODEL, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
BASE = os.environ.get("M40_CHAT_ARGS", "--cpu --dtype fp32").split() + ["--model", MODEL]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def run(args, stdin=b"", timeout=120):
    p = subprocess.run([CHAT] + BASE + args, input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def jsonl(out):
    return [json.loads(l) for l in out.decode().splitlines() if l.strip()]


def fresh_ids(prompt_ids, n):
    """The greedy continuation of a token sequence from a fresh session."""
    rc, out, err = run(["--ctx", "2048", "--greedy", "--max-new-tokens", str(n), "--print-ids",
                        "--ids", ",".join(map(str, prompt_ids))])
    return [int(x) for x in out.decode().strip().split(",")] if rc == 0 and n else []


def utf8_complete(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class Term:
    """m40-chat on a pseudo-terminal; stderr to a file."""

    def __init__(self, args):
        self.err = tempfile.NamedTemporaryFile(prefix="m40chat", suffix=".err", delete=False)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.dup2(self.err.fileno(), 2)
            os.execv(CHAT, [CHAT] + BASE + args)
        self.buf = b""

    def expect(self, pat, timeout=60):
        """Reads until pat (bytes) appears after what was consumed; returns
        the bytes before it, and consumes through it."""
        end = time.time() + timeout
        while pat not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("waiting for %r; got %r" % (pat, self.buf[-300:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    raise EOFError("the program ended waiting for %r; got %r" % (pat, self.buf[-300:]))
                self.buf += data
        i = self.buf.index(pat)
        before, self.buf = self.buf[:i], self.buf[i + len(pat):]
        return before

    def send(self, b):
        os.write(self.fd, b)

    def wait(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                try:  # drain
                    while select.select([self.fd], [], [], 0.1)[0]:
                        d = os.read(self.fd, 65536)
                        if not d:
                            break
                        self.buf += d
                except OSError:
                    pass
                return os.waitstatus_to_exitcode(st)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None

    def stderr(self):
        with open(self.err.name, errors="replace") as f:
            return f.read()


def answer_text(term):
    """The streamed answer: after "ChatGLM：" up to the next prompt."""
    term.expect("ChatGLM：".encode())
    return term.expect("用户：".encode())


def case_pty():
    log = tempfile.mktemp(suffix=".jsonl")
    t = Term(["--ctx", "2048", "--greedy", "--max-new-tokens", "10", "--json-log", log])
    t.expect("用户：".encode())
    t.send("你好\r".encode())
    a1 = answer_text(t)
    t.send("讲个故事\r".encode())
    a2 = answer_text(t)
    t.send(b"/stats\r")
    t.expect("用户：".encode())
    t.send(b"/reset\r")
    t.expect("用户：".encode())
    t.send("你好\r".encode())
    a3 = answer_text(t)
    t.send(b"\x04")  # Ctrl-D at an empty prompt: EOF
    rc = t.wait()
    check(rc == 0, "EOF at the prompt exits with status 0 (got %r)" % rc)
    r = [json.loads(l) for l in open(log)]
    check(len(r) == 3, "three answers logged")
    for i, (shown, o) in enumerate(zip([a1, a2, a3], r)):
        shown = shown.replace(b"\r\n", b"\n").strip(b"\n")
        want = re.sub("[\x00-\x08\x0b-\x1f\x7f]", "\ufffd", o["text"])  # control bytes
        check(shown == want.encode(), "round %d: the terminal shows the answer's text (%r)"
              % (i + 1, o["text"]))
        check(len(o["ids"]) == 10 and o["stop"] == "length", "round %d: 10 ids" % (i + 1))
    check(r[0]["prompt_ids"][:2] == [64790, 64792], "round 1 starts with [gMASK] sop")
    check(r[1]["prompt_ids"] == r[0]["prompt_ids"] + r[0]["ids"] + r[1]["new_ids"],
          "round 2 prefills only its new ids after the cached history")
    check(r[1]["new_ids"][:2] == [13, 13], "round 2's ids start with \\n\\n (the ▁ dropped)")
    check(r[2]["prompt_ids"] == r[0]["prompt_ids"] and r[2]["ids"] == r[0]["ids"],
          "after /reset the same question gives the same ids (greedy)")
    err = t.stderr()
    check("context: %d of 2048 tokens, 2 rounds" % len(r[1]["prompt_ids"] + r[1]["ids"]) in err,
          "/stats counts the tokens in the context")
    check(err.count("[prompt ") == 3 and "decode" in err, "a stats line per answer on stderr")
    check("a new conversation" in err, "/reset says so")


def case_interrupt():
    log = tempfile.mktemp(suffix=".jsonl")
    t = Term(["--ctx", "4096", "--max-new-tokens", "0", "--seed", "7", "--json-log", log,
              "--quiet"])
    t.expect("用户：".encode())
    t.send("讲个很长的故事\r".encode())
    t.expect("ChatGLM：".encode())
    time.sleep(1.0)
    t.send(b"\x03")  # Ctrl-C in the middle of the answer
    t.expect("用户：".encode())
    t.send("继续\r".encode())
    t.expect("ChatGLM：".encode())
    time.sleep(1.0)
    t.send(b"\x03")  # stops the second answer
    t.expect("用户：".encode())
    t.send(b"\x03")  # a second Ctrl-C in a row, at the prompt: exit
    rc = t.wait()
    check(rc == 0, "Ctrl-C at the prompt after a stopped answer exits with status 0 (got %r)" % rc)
    r = [json.loads(l) for l in open(log)]
    check(len(r) == 2 and all(o["stop"] == "interrupt" for o in r),
          "both answers were stopped by Ctrl-C")
    check(len(r) == 2 and 0 < len(r[0]["ids"]) < 4096 - 64, "the first answer was cut short (%d ids)"
          % len(r[0]["ids"]) if r else "no log")
    check(len(r) == 2 and r[1]["prompt_ids"] == r[0]["prompt_ids"] + r[0]["ids"] + r[1]["new_ids"],
          "the partial answer stays in the history (the cache holds its ids)")
    check("[stopped]" in t.stderr(), "stopping says so")
    # Ctrl-C once at the prompt only warns; EOF then exits
    t = Term(["--ctx", "512", "--max-new-tokens", "4", "--quiet"])
    t.expect("用户：".encode())
    t.send(b"\x03")
    t.expect("用户：".encode())
    t.send("你好\r".encode())
    answer_text(t)
    t.send(b"\x04")
    rc = t.wait()
    check(rc == 0 and "Ctrl-C again" in t.stderr(), "one Ctrl-C at the prompt warns, the chat goes on")
    # Ctrl-C while a long prompt is prefilled (chunks of 8: seconds on the
    # CPU): the round is dropped, the cache goes back, the next round is fresh
    log = tempfile.mktemp(suffix=".jsonl")
    t = Term(["--ctx", "4096", "--chunk", "8", "--max-new-tokens", "4", "--greedy", "--quiet",
              "--json-log", log])
    t.expect("用户：".encode())
    t.send(("很长的文本" * 600 + "\r").encode())
    t.expect("ChatGLM：".encode())
    time.sleep(0.5)
    t.send(b"\x03")
    t.expect("用户：".encode())
    t.send("你好\r".encode())
    answer_text(t)
    t.send(b"\x04")
    rc = t.wait()
    r = [json.loads(l) for l in open(log)]
    if "stopped while reading the prompt" in t.stderr():
        check(rc == 0 and len(r) == 2 and "error" in r[0] and r[1]["new_ids"] == r[1]["prompt_ids"]
              and r[1]["prompt_ids"][:3] == [64790, 64792, 353],
              "Ctrl-C during the prompt's prefill: the round is dropped, the next one starts afresh")
    else:
        print("note: the prefill ended before Ctrl-C (a fast machine): not checked")


def case_reuse():
    rc, out, err = run(["--ctx", "2048", "--greedy", "--max-new-tokens", "16", "--json", "--quiet"],
                       "你好\n讲个故事\n再讲一个\n".encode())
    r = jsonl(out)
    check(rc == 0 and len(r) == 3, "three answers from three lines")
    tokenize = os.path.join(os.path.dirname(CHAT), "m40-tokenize")
    if os.path.exists(tokenize) and r:  # the library's m40_chatglm_encode_chat
        p = subprocess.run([tokenize, "--model", os.path.join(MODEL, "tokenizer.model"), "--chatglm"],
                           input="你好".encode(), capture_output=True)
        check([int(x) for x in p.stdout.split()] == r[0]["prompt_ids"],
              "round 1's ids are m40_chatglm_encode_chat's (m40-tokenize --chatglm)")
    for i in (1, 2):
        o, p = r[i], r[i - 1]
        check(o["prompt_ids"] == p["prompt_ids"] + p["ids"] + o["new_ids"],
              "round %d reuses the cache: history ids + the new round's" % (i + 1))
        check(fresh_ids(o["prompt_ids"], len(o["ids"])) == o["ids"],
              "round %d: the ids of a fresh greedy run over the same sequence" % (i + 1))
    # the same seed gives the same answer; another seed another one
    a = jsonl(run(["--ctx", "512", "--seed", "5", "--max-new-tokens", "12", "--json", "--prompt",
                   "你好"])[1])
    b = jsonl(run(["--ctx", "512", "--seed", "5", "--max-new-tokens", "12", "--json", "--prompt",
                   "你好"])[1])
    c = jsonl(run(["--ctx", "512", "--seed", "6", "--max-new-tokens", "12", "--json", "--prompt",
                   "你好"])[1])
    check(a[0]["ids"] == b[0]["ids"] and a[0]["ids"] != c[0]["ids"], "--seed: same seed, same ids")
    d = jsonl(run(["--ctx", "512", "--seed", "5", "--max-new-tokens", "12", "--json",
                   "--repeat-penalty", "5", "--prompt", "你好"])[1])
    check(d[0]["ids"] != a[0]["ids"], "--repeat-penalty changes the draw")


def case_utf8():
    prompts = ["你好", "给我讲个笑话😀", "Hello world", "用emoji回答🎉🐼", "㐀㐁 中文", "天气"]
    rc, out, err = run(["--ctx", "4096", "--max-new-tokens", "64", "--seed", "3", "--json",
                        "--quiet"], ("\n".join(prompts) + "\n").encode())
    r = jsonl(out)
    check(rc == 0 and len(r) == len(prompts), "every prompt answered")
    nchunks = skipped = cjk = 0
    for o in r:
        ch = o["chunks"]
        nchunks += len(ch)
        check(all(isinstance(c, str) for c in ch), "%r: every chunk is whole UTF-8" % o["prompt"])
        check("".join(c for c in ch if isinstance(c, str)) == o["text"],
              "%r: the chunks make the answer" % o["prompt"])
        skipped += sum(1 for i in o["ids"] if i >= 64789)
        cjk += sum(1 for c in o["text"] if "\u4e00" <= c <= "\u9fff")
    check(nchunks > 100 and cjk > 50, "%d chunks, %d CJK characters streamed" % (nchunks, cjk))
    check(skipped > 0, "the model emitted %d ids with no piece, skipped" % skipped)
    # on a terminal: the bytes as they arrive decode (chunks are whole characters)
    t = Term(["--ctx", "4096", "--max-new-tokens", "48", "--seed", "3", "--quiet"])
    t.expect("用户：".encode())
    t.send("给我讲个笑话😀\r".encode())
    a = answer_text(t)
    t.send(b"\x04")
    t.wait()
    check(utf8_complete(a), "the terminal's bytes are valid UTF-8")


def case_bad():
    big = ("很长的文本" * 7000).encode()  # ~105 KB
    lines = [b"", b"   ", big, b"\xff\xfe bad \xc3(", "你好".encode()]
    rc, out, err = run(["--ctx", "256", "--max-new-tokens", "4", "--json", "--quiet"],
                       b"\n".join(lines) + b"\n")
    r = jsonl(out)
    check(len(r) == 5, "an object per line (%d)" % len(r))
    if len(r) == 5:
        check("empty prompt" in r[0].get("error", "") and "empty prompt" in r[1].get("error", ""),
              "an empty line: a message")
        check("the context holds 256" in r[2].get("error", ""),
              "100 KB of text: 'the prompt is N tokens; the context holds 256'")
        check(len(r[3].get("ids", [])) == 4 and r[3]["prompt"] is None,
              "invalid UTF-8 is answered (each invalid byte as U+FFFD)")
        check(len(r[4].get("ids", [])) == 4, "the program stays usable after each")
    check("not valid UTF-8" in err, "invalid UTF-8: a message")
    check(rc == 1, "a pipe with refused prompts ends with status 1")
    # a long line typed (pasted) at a terminal: the terminal cuts it, we say so
    t = Term(["--ctx", "256", "--max-new-tokens", "2", "--quiet"])
    t.expect("用户：".encode())
    t.send(b"a" * 8000 + b"\r")
    t.expect("用户：".encode())
    t.send("你好\r".encode())
    answer_text(t)
    t.send(b"\x04")
    rc = t.wait()
    e = t.stderr()
    check(rc == 0 and "cuts a line at 4095 bytes" in e and "the context holds 256" in e,
          "a pasted 8 KB line: cut by the terminal, said so, refused as too long, then usable")
    rc, out, err = run(["--ctx", "64", "--prompt", "你好" * 100])
    check(rc == 1 and "the context holds 64" in err, "--prompt longer than --ctx: " + err.strip())
    d = tempfile.mkdtemp()
    p = subprocess.run([CHAT] + BASE[:-2] + ["--model", d, "--prompt", "x"], capture_output=True,
                       timeout=30)
    e = p.stderr.decode()
    check(p.returncode == 1 and "no tokenizer: looked for %s/tokenizer.model (No such file" % d
          in e, "a directory without anything: " + e.strip())
    # a tokenizer.model that is there but cannot be used says why, not "looked for" alone
    for size, why in ((0, "(empty)"), ((64 << 20) + 1, "(67108865 bytes: more than the 67108864")):
        with open(os.path.join(d, "tokenizer.model"), "wb") as f:
            f.truncate(size)
        p = subprocess.run([CHAT] + BASE[:-2] + ["--model", d, "--prompt", "x"],
                           capture_output=True, timeout=30)
        e = p.stderr.decode()
        check(p.returncode == 1 and "%s/tokenizer.model %s" % (d, why) in e,
              "a tokenizer.model of %d bytes: %s" % (size, e.strip()))
    os.unlink(os.path.join(d, "tokenizer.model"))
    os.symlink(os.path.join(os.path.abspath(MODEL), "tokenizer.model"),
               os.path.join(d, "tokenizer.model"))
    p = subprocess.run([CHAT] + BASE[:-2] + ["--model", d, "--prompt", "x"], capture_output=True,
                       timeout=30)
    e = p.stderr.decode()
    check(p.returncode == 1 and "no model.safetensors" in e, "a directory without weights: " +
          e.strip())
    p = subprocess.run([CHAT] + BASE[:-2] + ["--model", d + "/nope.safetensors", "--prompt", "x"],
                       capture_output=True, timeout=30)
    e = p.stderr.decode()
    check(p.returncode == 1 and "nope.safetensors: No such file" in e, "a missing model: " + e.strip())
    bad = os.path.join(d, "bad.model")
    with open(bad, "wb") as f:
        f.write(b"\x0a\x03abc not a model")
    rc, out, err = run(["--tokenizer", bad, "--prompt", "x"])
    check(rc == 1 and "tokenizer:" in err, "a broken tokenizer file: " + err.strip())
    rc, out, err = run(["--tokenizer", "/nonexistent.model", "--prompt", "x"])
    check(rc == 1 and "/nonexistent.model" in err, "a missing --tokenizer: " + err.strip())


def case_overflow():
    qs = ["你好", "讲个故事", "再讲一个", "谢谢", "再见", "好的"]
    rc, out, err = run(["--ctx", "96", "--greedy", "--max-new-tokens", "12", "--json"],
                       ("\n".join(qs) + "\n").encode())
    r = jsonl(out)
    check(rc == 0 and len(r) == len(qs), "every round answered in a 96-token context")
    dropped = [o for o in r if o.get("dropped_rounds", 0) > 0]
    check(len(dropped) > 0, "old rounds were dropped (%d times)" % len(dropped))
    check("dropped the" in err, "and it says so on stderr")
    for o in dropped:
        check(o["prompt_ids"][:3] == [64790, 64792, 353] and o["new_ids"] == o["prompt_ids"],
              "a rebuilt context starts [gMASK] sop \"[Round 1]...\" and is prefilled whole")
        check(len(o["prompt_ids"]) + len(o["ids"]) <= 96, "and fits")
    check(all(len(o["prompt_ids"]) + len(o["ids"]) <= 96 for o in r), "no round outgrows --ctx")


def case_io():
    """Output that cannot be written is an error with a message, never a
    silent exit 0 or a half file; a numeric flag needs a number; --ids
    checks the cache's room before it generates anything."""
    full = "/dev/full"  # every write: ENOSPC
    if not os.path.exists(full):
        print("note: no /dev/full here: the write-error checks are skipped")
        return case_io_rest()
    rc, out, err = run(["--ctx", "64", "--max-new-tokens", "2", "--prompt", "hi", "--json-log", full])
    check(rc == 1 and "writing /dev/full failed" in err, "--json-log to a full disk: " + err.strip())
    p = subprocess.run("%s %s --ctx 64 --max-new-tokens 2 --prompt hi --json > %s" %
                       (CHAT, " ".join(BASE), full), shell=True, capture_output=True, timeout=120)
    check(p.returncode == 1 and b"standard output failed" in p.stderr,
          "--json to a full disk: " + p.stderr.decode(errors="replace").strip())
    p = subprocess.run("%s %s --ctx 64 --ids 1,2 --max-new-tokens 3 --print-ids > %s" %
                       (CHAT, " ".join(BASE), full), shell=True, capture_output=True, timeout=120)
    check(p.returncode == 1 and b"writing the ids failed" in p.stderr,
          "--print-ids to a full disk: " + p.stderr.decode(errors="replace").strip())
    rc, out, err = run(["--ids", "1,2", "--max-new-tokens", "1", "--all-logits", full])
    check(rc == 1 and "writing /dev/full failed: No space left" in err,
          "--all-logits to a full disk: " + err.strip())
    case_io_rest()


def case_io_rest():
    rc, out, err = run(["--temperature", "", "--ids", "1,2", "--max-new-tokens", "1"])
    check(rc == 2 and "--temperature" in err, "--temperature '': refused (%d)" % rc)
    d = tempfile.mkdtemp()
    lf = os.path.join(d, "logits.bin")
    rc, out, err = run(["--ctx", "8", "--ids", "1,2,3,4", "--max-new-tokens", "5", "--print-ids",
                        "--all-logits", lf])
    check(rc == 1 and out == b"" and "need a cache of 9 tokens; it holds 8" in err,
          "--all-logits one token past --ctx: refused before anything is generated: " + err.strip())
    rc, out, err = run(["--ctx", "8", "--ids", "1,2,3,4", "--max-new-tokens", "4", "--print-ids",
                        "--all-logits", lf])
    check(rc == 0 and len(out.split(b",")) == 4 and os.path.getsize(lf) == 8 * 65024 * 4,
          "--all-logits filling --ctx exactly: 4 + 4 rows")
    rc, out, err = run(["--ctx", "8", "--ids", "1,2,3,4", "--max-new-tokens", "5", "--print-ids"])
    check(rc == 0 and len(out.split(b",")) == 5, "--ids: the last id needs no room (4 + 5 in 8)")


def case_glm3():
    rc, out, err = run(["--ctx", "1024", "--greedy", "--max-new-tokens", "8", "--json", "--format",
                        "chatglm3", "--system", "你是助手"], "你好\n再见\n".encode())
    r = jsonl(out)
    check(rc == 0 and len(r) == 2, "two ChatGLM3 rounds")
    if len(r) == 2:
        p = r[0]["prompt_ids"]
        check(p[:3] == [64790, 64792, 64794] and 64795 in p and p[-1] == 64796,
              "ChatGLM3: [gMASK] sop <|system|> ... <|user|> ... <|assistant|>")
        check(r[1]["new_ids"][:3] == [64790, 64792, 64795] and r[1]["new_ids"][-1] == 64796,
              "a reused cache gets [gMASK] sop <|user|> ... <|assistant|> (the official build_chat_input)")
        check(r[1]["prompt_ids"] == p + r[0]["ids"] + r[1]["new_ids"], "the cache is reused")
        check(all(i not in (2, 64795, 64797) for i in r[0]["ids"] + r[1]["ids"]),
              "the stop ids are not part of an answer")
    # picked from config.json, and from what --save writes
    d = tempfile.mkdtemp()
    for f in ("tokenizer.model", "model.safetensors"):
        os.symlink(os.path.join(os.path.abspath(MODEL), f), os.path.join(d, f))
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    cfg["_name_or_path"] = "THUDM/chatglm3-6b"
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    saved = os.path.join(d, "saved", "glm3.safetensors")
    os.mkdir(os.path.dirname(saved))
    for m, extra in [(d, ["--save", saved]), (saved, [])]:
        p = subprocess.run([CHAT] + BASE[:-2] + ["--model", m, "--ctx", "256", "--max-new-tokens",
                           "2", "--json", "--prompt", "x"] + extra, capture_output=True, timeout=60)
        o = jsonl(p.stdout)
        check(p.returncode == 0 and o and o[0]["prompt_ids"][2] == 64795,
              "ChatGLM3 picked automatically: %s" % os.path.basename(m))
    rc, out, err = run(["--ctx", "256", "--max-new-tokens", "2", "--prompt", "x", "--system", "s"])
    check(rc == 0 and "--system is ignored" in err, "ChatGLM2 with --system: a note")


{"pty": case_pty, "interrupt": case_interrupt, "reuse": case_reuse, "utf8": case_utf8,
 "bad": case_bad, "overflow": case_overflow, "glm3": case_glm3, "io": case_io}[CASE]()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
