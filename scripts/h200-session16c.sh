#!/usr/bin/env bash
# Sixteenth session, call 3: what the fused decode combine's "last block
# folds" pattern costs, fence or not (m40-fence-cost), as sm_90 code
# (__threadfence() = MEMBAR.SC.GPU) and as the sm_52 build through PTX JIT
# (membar.gl); then m40-bench attention at 1K / 8K / 32K (the default).
#   OUT=DIR scripts/h200-session16c.sh [BUILD_DIR]   (carry [".debs", ".carry"])
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session16c 400 "$@"
build_arch90 m40-fence-cost m40-bench
timeout 60 "$B/m40-fence-cost" > "$O/fence-90.txt" 2>&1
note "fence arch 90 rc=$?"
cat "$O/fence-90.txt" >> "$SUM"
if tar xJf .carry/jit52.tar.xz; then
    CUDA_MODULE_LOADING=LAZY timeout 60 .jit52/m40-fence-cost > "$O/fence-52.txt" 2>&1
    note "fence sm_52 PTX JIT rc=$?"
    cat "$O/fence-52.txt" >> "$SUM"
fi
if [ $(left) -gt 60 ]; then
    timeout $(( $(left) - 20 )) "$B/m40-bench" attention --sizes 1024,8192,32768 --repeats 10 > "$O/attention.txt" 2>&1
    note "attention rc=$?"
    grep -E "^attention.*decode" "$O/attention.txt" | sed -E 's/ +/ /g; s/median ([0-9.]+) ms.*/\1 ms/' | cut -c1-120 >> "$SUM"
fi
(cd "$O" && tar czf all.tgz --exclude=all.tgz *.txt *.log 2>/dev/null)
echo "=== SUMMARY"; cat "$SUM"
