#!/usr/bin/env bash
# Prepared in session 27 for the next device call (not run yet): session 27's
# lead, the decode combine without pos (bench/NOTES.md, "Session 27", item 7:
# with the empty-split skip off, v5's 32 splits all write their partials and
# attn_combine folds them without reading pos first; one H100 run gave int4
# +1.3%, int8 +0.8% at ctx 128). Does it hold, at which contexts, and does
# the skip still pay where v6 and the tile kernel run (past a 512-key bound,
# hundreds of splits)? m40-bench chatglm2 decode, default / SKIP=0 interleaved
# twice: int4,int8 at 128, 256, 512 (v5) and 1024, 8192 (v6 / tile kernel).
# Carry [".carry/s28.tar.xz"]: .s28/m40-bench (arch 90, this tree).
#   OUT=DIR BUDGET=300 scripts/h200-session28.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28 300 .s28
carry_start .carry/s28.tar.xz
GLM_TIMEOUT=60
glm_run skip1a "" int4,int8 128,256,512,1024,8192
glm_run skip0a "M40_BENCH_GLM_SKIP=0" int4,int8 128,256,512,1024,8192
glm_run skip0b "M40_BENCH_GLM_SKIP=0" int4,int8 128,256,512,1024,8192
glm_run skip1b "" int4,int8 128,256,512,1024,8192
carry_end
