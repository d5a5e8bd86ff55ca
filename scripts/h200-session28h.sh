#!/usr/bin/env bash
# Session 28, the session's changes together: m40-bench chatglm2 decode
# int4,int8 at ctx 128, 1024, 8192, this session's tree (e402443 and after:
# .s28f) against the tree before it (50a9dfc: .s28), new / old / old / new.
# Carry [".carry/s28f.tar.xz", ".carry/s28.tar.xz"].
#   OUT=DIR BUDGET=200 scripts/h200-session28h.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session28h 200 .s28f
carry_start .carry/s28f.tar.xz
tar xJf .carry/s28.tar.xz || { note "no .carry/s28.tar.xz"; exit 1; }
GLM_TIMEOUT=45
S=128,1024,8192
glm_run new1 "" int4,int8 $S
B=.s28 glm_run old1 "" int4,int8 $S
B=.s28 glm_run old2 "" int4,int8 $S
glm_run new2 "" int4,int8 $S
carry_end
