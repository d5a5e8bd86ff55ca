#!/usr/bin/env python3
"""A randomized search for mutation run 4's last survivor in lib/tokenizer/bpe.c
(rev_find takes the latest rev_merge entry of a piece, as sentencepiece's map
keeps the last write; the mutant takes the first). A model of the reference's
merge order (pairs by score, ties to the smaller left symbol, stale pairs
skipped, an UNUSED piece's split recorded when its pair is pushed) encodes
random texts with random vocabularies both ways and stops at the first text
whose resegmentation differs. Session 28: 300,000 vocabularies (single
letters plus 2-12 pieces of 2-4 letters, 40% UNUSED, scores 1-5) and texts of
3-16 letters over "ab" and "abc": none found.
  python3 tests/tokenizer/rev_merge_search.py SEED [ALPHABET] [MAXLEN]
"""
import heapq
import random
import sys


def encode(text, pieces, latest=True):
    # pieces: str -> (score, unused)
    n=len(text); syms=[[i,1,i-1,i+1 if i+1<n else -1] for i in range(n)]  # off,len,prev,next
    heap=[]; rev=[]
    def add(l,r):
        if l<0 or r<0: return
        L,R=syms[l],syms[r]; s=text[L[0]:L[0]+L[1]+R[1]]
        if s not in pieces: return
        sc,un=pieces[s]
        heapq.heappush(heap,(-sc,l,r,L[1]+R[1]))
        if un: rev.append((s,text[L[0]:L[0]+L[1]],text[R[0]:R[0]+R[1]]))
    for i in range(1,n): add(i-1,i)
    while heap:
        negsc,l,r,size=heapq.heappop(heap)
        L,R=syms[l],syms[r]
        if L[1]==0 or R[1]==0 or L[1]+R[1]!=size: continue
        L[1]+=R[1]; L[3]=R[3]
        if R[3]>=0: syms[R[3]][2]=l
        R[1]=0
        add(L[2],l); add(l,L[3])
    out=[]
    def reseg(s,depth=0):
        if s not in pieces: out.append('<unk:'+s+'>'); return
        if not pieces[s][1]: out.append(s); return
        es=[e for e in rev if e[0]==s]
        if not es: out.append('<unk:'+s+'>'); return
        e=es[-1] if latest else es[0]
        reseg(e[1],depth+1); reseg(e[2],depth+1)
    i=0
    while i!=-1:
        reseg(text[syms[i][0]:syms[i][0]+syms[i][1]]); i=syms[i][3]
    return out

def main():
    random.seed(int(sys.argv[1]) if len(sys.argv)>1 else 1)
    alpha=sys.argv[2] if len(sys.argv)>2 else 'abc'
    for trial in range(int(sys.argv[4]) if len(sys.argv) > 4 else 100000):
        pieces={c:(0.0,False) for c in alpha}
        # random multi-char pieces
        k=random.randint(2,12)
        for _ in range(k):
            L=random.randint(2,4); s=''.join(random.choice(alpha) for _ in range(L))
            pieces[s]=(float(random.randint(1,5)), random.random()<0.4)
        text=''.join(random.choice(alpha) for _ in range(random.randint(3,int(sys.argv[3]) if len(sys.argv)>3 else 9)))
        a=encode(text,pieces,True); b=encode(text,pieces,False)
        if a!=b:
            print("FOUND",text,pieces,a,b); break
    else: print("none")


if __name__ == "__main__":
    main()
