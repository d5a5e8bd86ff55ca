#!/usr/bin/env python3
"""Encode throughput, libm40 vs the reference sentencepiece, in the same run.

    python3 bench/tokenizer_bench.py [--mb 10] [--reps 3] [--model PATH ...]

Builds bench/tokenizer_bench.c with gcc -O2 against lib/tokenizer, generates a
mixed Chinese/English corpus of --mb megabytes (the fixture generator), encodes
it line by line with both, on one thread, and checks that the ids are identical
(same count and order-sensitive checksum). Reports MB/s of UTF-8 input.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "tokenizer"))
import make_fixtures  # noqa: E402


def checksum(all_ids):
    c, n = 0, 0
    for ids in all_ids:
        for i in ids:
            c = (c * 1000003 + i) & 0xFFFFFFFFFFFFFFFF
        n += len(ids)
    return n, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model", action="append")
    args = ap.parse_args()
    models = args.model or sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/tokenizer/*.model")))
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, "tokenizer_bench")
    srcs = sorted(glob.glob(os.path.join(ROOT, "lib/tokenizer/*.c")))
    subprocess.check_call(["gcc", "-std=c11", "-O2", "-DNDEBUG", "-Wall", "-Wextra", "-Werror", "-I" + os.path.join(ROOT, "include"),
                           "-I" + os.path.join(ROOT, "lib"), *srcs, os.path.join(ROOT, "lib/core.c"),
                           os.path.join(ROOT, "bench/tokenizer_bench.c"), "-lm", "-o", exe])
    lines = make_fixtures.corpus(2024, int(args.mb * 1e6))
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(lines))
    size = os.path.getsize(corpus)
    print("corpus: %.2f MB, %d lines; sentencepiece %s; best of %d" % (size / 1e6, len(lines), spm.__version__, args.reps))
    print("%-12s %12s %12s %12s  %s" % ("model", "ref MB/s", "ref loop", "m40 MB/s", "ids match"))
    ok = True
    for m in models:
        sp = spm.SentencePieceProcessor(model_file=m)
        best_batch = best_loop = 1e30
        for _ in range(args.reps):
            t0 = time.perf_counter()
            ref = sp.encode(lines, num_threads=1)  # C++ loop, one thread
            best_batch = min(best_batch, time.perf_counter() - t0)
            t0 = time.perf_counter()
            for s in lines:
                sp.encode(s)
            best_loop = min(best_loop, time.perf_counter() - t0)
        out = subprocess.check_output([exe, m, corpus, str(args.reps)], text=True).split()
        ours = float(out[1])
        n, c = checksum(ref)
        match = int(out[3]) == n and int(out[5]) == c
        ok &= match
        print("%-12s %12.2f %12.2f %12.2f  %s" % (os.path.basename(m).replace(".model", ""), size / 1e6 / best_batch,
                                                   size / 1e6 / best_loop, ours, "yes" if match else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
