#!/usr/bin/env bash
# Session 28, third call (no rebuild: call 2's binary, this tree): at short
# contexts decode v5 runs 32 splits a (b, g) whatever the keys (the cap is
# the cache's length), so at ctx 128 24 of them find no keys and, since
# call 2, still write a partial the combine reads. Would splits from the key
# bound (8 at 128, 16 at 256) win? And v5's own fold of the splits
# (FUSE_COMBINE=1) now that every split writes one? m40-bench chatglm2
# decode int4,int8 at 128, 256, 512: the rule / SPLITS=8 / SPLITS=16 /
# FUSE_COMBINE=1 / the rule / SPLITS=8.
# Carry [".carry/s28b.tar.xz"].
#   OUT=DIR BUDGET=200 scripts/h200-session28c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28c 200 .s28b/new
carry_start .carry/s28b.tar.xz
GLM_TIMEOUT=40
S=128,256,512
glm_run rule1 "" int4,int8 $S
glm_run split8a "M40_BENCH_GLM_SPLITS=8" int4,int8 $S
glm_run split16 "M40_BENCH_GLM_SPLITS=16" int4,int8 $S
glm_run fold "M40_BENCH_GLM_FUSE_COMBINE=1" int4,int8 $S
glm_run rule2 "" int4,int8 $S
glm_run split8b "M40_BENCH_GLM_SPLITS=8" int4,int8 $S
carry_end
