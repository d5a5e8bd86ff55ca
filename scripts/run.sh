#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing (scripts/setup.sh),
# builds libm40 (for sm_52 when a Maxwell-capable CUDA is present, else the
# CPU reference only), and runs m40-demo: a GPU-vs-reference check and a few
# timed ops on the GPU, or the CPU reference with a clear notice when there
# is no GPU. Pass --no-setup to skip the package step.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--no-setup" ] || scripts/setup.sh
source scripts/env.sh
cmake -S . -B build "${M40_GEN[@]}" "${M40_CMAKE_CUDA[@]}" > build.configure.log 2>&1 ||
    { cat build.configure.log; exit 1; }
cmake --build build -j"$(nproc)" > build.log 2>&1 || { tail -40 build.log; exit 1; }
exec build/m40-demo
