#!/usr/bin/env bash
# Session 26, fifth call: m40-gemv-pattern twice (cold copies) with the
# "+ez+red" row: the floor GEMV with x staged the way v2's exponent-zero
# decode stages it. Is the small GEMVs' ~1 us over "+xs+red" that staging?
# Carry [".carry/s26.tar.xz"].   OUT=DIR scripts/h200-session26d.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/h200-common.sh h200-session26d 60 .s26
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw \
    --format=csv,noheader >> "$SUM"
tar xJf .carry/s26.tar.xz || { note "no .carry/s26.tar.xz"; exit 1; }
for i in 1 2; do
    timeout 30 "$B/m40-gemv-pattern" > "$O/pattern$i.txt" 2>&1
    note "pattern $i rc=$?"
    cat "$O/pattern$i.txt" >> "$SUM"
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
echo "=== SUMMARY"; cat "$SUM"
