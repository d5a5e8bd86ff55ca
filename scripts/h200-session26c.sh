#!/usr/bin/env bash
# Session 26, fourth call: the decode attention's split count at short
# contexts (carry [".carry/s26.tar.xz"], m40-bench rebuilt with the
# M40_BENCH_GLM_SPLITS knob, kernels/attention.h's decode_max_splits). At
# ctx 128 the int4 step's attention (v5, 16-key shares) and its combine took
# ~10 us a layer on the H100 (ncu), 14% of the step, for 128 KB of keys and
# values: does a split count of 1 (no combine launch, a longer chain) or 2-4
# beat the rule? At ctx 1024 (v6, 32-key shares) the same with 8 and 16.
#   OUT=DIR BUDGET=150 scripts/h200-session26c.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26c 150 .s26
carry_start .carry/s26.tar.xz
GLM_TIMEOUT=40
run() { # FORMAT CTX SPLITS...
    local f=$1 c=$2 k e
    shift 2
    for k in "$@"; do
        [ "$(left)" -gt 15 ] || return
        e=""; [ "$k" = 0 ] || e="M40_BENCH_GLM_SPLITS=$k"
        glm_run "$f-ctx$c-splits$k" "$e" "$f" "$c"
    done
}
run int4 128 0 1 2 4 0
run int4 1024 0 8 16 0
run int8 128 0 1 2
carry_end
