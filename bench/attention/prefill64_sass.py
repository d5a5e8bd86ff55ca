#!/usr/bin/env python3
"""Instructions per FFMA on the hot path of the two prefill kernels at DP 128,
from the sm_52 SASS: attn_prefill64 (its K- and V-chunk loops, 4 trips each a
key tile) and the BM-32 tile kernel (scripts/sass_ops_ipe.py's attention row).
The figures of docs/attention.md, "Prefill, variant 1".

    python3 bench/attention/prefill64_sass.py build-52/CMakeFiles/m40_obj.dir/kernels/attention.cu.o [cuobjdump]
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import sass_ops_ipe as s
from sass_common import functions, sass_text
text = sass_text(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cuobjdump")
for name, arch, body in functions(text):
    if 'prefill64' in name:
        lps = s.loops(body)
        inner = s.innermost(lps)
        big = sorted(l for l in inner if s.count(s.ops(body, l), "FFMA") >= 256)
        tile = [l for l in lps if sum(1 for b in big if l[0] < b[0] and b[1] < l[1]) >= 2]
        tl = min(tile, key=lambda l: l[1] - l[0])
        coll, tot_ffma, tot_lds = {}, 0, 0
        for b in big[:2]:
            c = s.ops(body, b)
            # the chunk's store and its first 16-byte load (the other is the else branch)
            reqs = s.req(body, b, r"STS\.128")[:2] + s.req(body, b, r"LDG\.E\.128")[:1]
            n, q = s.hot_path(body, b, reqs)
            f = s.count(c, "FFMA"); l = s.count(c, "LDS")
            print(f"  chunk loop {body[b[0]][0]:#x}: static {b[1]-b[0]+1}, hot {n:.0f} (quarter {q:.0f}), FFMA {f}, LDS {l}: {n/f:.3f} per FFMA, {f/l:.1f} FFMA per LDS.128")
            coll[b[0]] = (b[1], 4 * n)
            tot_ffma += 4 * f; tot_lds += 4 * l
        n, q = s.hot_path(body, tl, [], coll)
        print(f"{name[-40:]}: tile loop hot {n:.0f} per {tot_ffma} FFMA = {n/tot_ffma:.3f} per FFMA;"
              f" per (query row, key): {128*n/64/32:.0f} instructions, {128*tot_ffma/64/32:.0f} FFMA")
    elif 'attn_kernelILi128ELi32ELi32' in name:
        r = s.attention_row(name, body, 'prefill')
        print(f"{name[-40:]}: old tile hot {r['tile_hot']:.0f}, per (row,key) {r['per_row_key']:.0f}, FFMA {r['ffma_per_row_key']:.0f}: {r['per_row_key']/r['ffma_per_row_key']:.3f} per FFMA")
