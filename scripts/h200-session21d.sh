#!/usr/bin/env bash
# Session 21, call 5 (carry [".debs"]): the two bench programs after their
# graph timer became one header (bench/graph_time.cuh): m40-gemv-boundary
# chain (the ctest m40_gemv_boundary_chain) and m40-fence-cost.
#   OUT=DIR scripts/h200-session21d.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session21d 300 "$@"
build_arch90 m40-gemv-boundary m40-fence-cost
timeout 60 "$B/m40-gemv-boundary" chain > "$O/boundary.txt" 2>&1
note "boundary chain rc=$?"
timeout 60 "$B/m40-fence-cost" > "$O/fence.txt" 2>&1
note "fence-cost rc=$?"
cat "$O/boundary.txt" "$O/fence.txt" >> "$SUM"
rm -f "$O"/build.log "$O"/configure.log
echo "=== SUMMARY"; cat "$SUM"
